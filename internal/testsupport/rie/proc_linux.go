package rie

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func platformSupported() error { return nil }

// setProcAttrs puts RIE in its own process group. RIE in turn starts the
// handler in a process group of its own (Setpgid in its supervisor), so
// killing RIE's group alone would leave the handler running.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killTree kills RIE and the process groups of its children. RIE is stopped
// first so that it cannot start a new runtime, nor reap a child whose pid
// could then be reused, while its children are being killed.
func killTree(p *os.Process) {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return // already exited
	}
	waitStopped(p.Pid, 500*time.Millisecond)
	for _, c := range children(p.Pid) {
		if c.pgid > 1 && c.pgid != syscall.Getpgrp() {
			_ = syscall.Kill(-c.pgid, syscall.SIGKILL)
		}
		_ = syscall.Kill(c.pid, syscall.SIGKILL)
	}
	_ = p.Kill()
}

type procInfo struct {
	pid, pgid int
	state     byte
}

// readStat parses /proc/<pid>/stat: "pid (comm) state ppid pgrp ...".
func readStat(pid int) (info procInfo, ppid int, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return info, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return info, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return info, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return info, 0, false
	}
	return procInfo{pid: pid, pgid: pgid, state: f[0][0]}, ppid, true
}

func waitStopped(pid int, d time.Duration) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		info, _, ok := readStat(pid)
		if !ok || info.state == 'T' || info.state == 't' || info.state == 'Z' {
			return
		}
	}
}

func children(parent int) []procInfo {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if info, ppid, ok := readStat(pid); ok && ppid == parent {
			out = append(out, info)
		}
	}
	return out
}
