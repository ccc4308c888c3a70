//go:build linux

package localaws

import (
	"os"
	"syscall"
)

// sysProcAttr puts the server in its own process group (so Stop reaches any
// children) and has the kernel SIGKILL it when the thread that started it
// dies. That thread is locked to the goroutine that waits for the process (see
// launch), so it lives exactly as long as the server or this process.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func terminate(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGTERM) }
func kill(p *os.Process) error      { return syscall.Kill(-p.Pid, syscall.SIGKILL) }
