//go:build linux

package jaeger

import (
	"os"
	"syscall"
)

// sysProcAttr puts Jaeger in its own process group and has the kernel kill
// it when the thread that started it dies (see start).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func terminate(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGTERM) }
func kill(p *os.Process) error      { return syscall.Kill(-p.Pid, syscall.SIGKILL) }
