//go:build !unix

package main

import (
	"os"
	"syscall"
)

func detached() *syscall.SysProcAttr { return nil }

func terminateProcess(p *os.Process) error { return p.Kill() }

func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p != nil
}
