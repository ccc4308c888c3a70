//go:build unix && !linux

package invoke

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup puts the function in a process group of its own, so that
// a timeout kills everything it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcessGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	_ = p.Kill()
}

// stopProcessGroup freezes the function's process group (SIGSTOP), as a
// function stuck in a call: it reports whether it could.
func stopProcessGroup(p *os.Process) bool {
	return syscall.Kill(-p.Pid, syscall.SIGSTOP) == nil
}
