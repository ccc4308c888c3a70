//go:build !linux

package jaeger

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

func terminate(p *os.Process) error { return p.Signal(os.Interrupt) }
func kill(p *os.Process) error      { return p.Kill() }
