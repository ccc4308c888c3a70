//go:build unix && !linux

package localaws

import (
	"os"
	"syscall"
)

// sysProcAttr puts the server in its own process group. There is no Pdeathsig
// outside Linux: the Node servers still exit when their stdin closes, but
// DynamoDB Local (Java) can outlive a test binary that is SIGKILLed.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func terminate(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGTERM) }
func kill(p *os.Process) error      { return syscall.Kill(-p.Pid, syscall.SIGKILL) }
