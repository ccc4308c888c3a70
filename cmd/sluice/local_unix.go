//go:build unix

package main

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

// detached starts a process in a session of its own, so it outlives the
// terminal and the shell that started it.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

func terminateProcess(p *os.Process) error { return p.Signal(syscall.SIGTERM) }

// alive reports whether process pid exists (signal 0) and is no zombie.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, rerr := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if rerr != nil {
		return true // no /proc (macOS): signal 0 is all there is
	}
	// pid (comm) STATE ...: a zombie has exited.
	for i := len(stat) - 1; i > 0; i-- {
		if stat[i] == ')' && i+2 < len(stat) {
			return stat[i+2] != 'Z'
		}
	}
	return true
}
