package avro_test

import "syscall"

// threadCPU is the CPU time the calling OS thread has used, in
// nanoseconds: a benchmark on a shared machine measures its own work with
// it, not the time other processes held the cores.
func threadCPU() int64 {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
