//go:build !linux

package rie

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
)

func platformSupported() error {
	return fmt.Errorf("the Lambda Runtime Interface Emulator runs only on Linux, not %s; run these tests on Linux or in a Linux container", runtime.GOOS)
}

func setProcAttrs(*exec.Cmd) {}

func killTree(p *os.Process) { _ = p.Kill() }
