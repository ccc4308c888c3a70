//go:build !unix

package localaws

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

func terminate(p *os.Process) error { return p.Kill() }
func kill(p *os.Process) error      { return p.Kill() }
