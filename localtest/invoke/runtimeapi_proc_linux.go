package invoke

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup puts the function in a process group of its own, so that
// a timeout kills everything it started, and has the kernel kill it if the
// runner dies (Pdeathsig fires when the thread that started it exits; Go
// does not end its threads while the runner lives).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
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
