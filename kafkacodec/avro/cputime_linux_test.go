package avro_test

import (
	"syscall"
	"unsafe"
)

// threadCPU is the CPU time the calling OS thread has used, in
// nanoseconds: a benchmark on a shared machine measures its own work with
// it, not the time other processes held the cores.
func threadCPU() int64 {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}
