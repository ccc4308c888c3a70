//go:build !unix

package localtest

import (
	"os"
	"os/exec"
)

func setProcessGroup(*exec.Cmd) {}

func killProcessGroup(p *os.Process) { _ = p.Kill() }
