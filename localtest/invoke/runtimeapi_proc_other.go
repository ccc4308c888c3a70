//go:build !unix

package invoke

import (
	"os"
	"os/exec"
)

func setProcessGroup(*exec.Cmd) {}

func killProcessGroup(p *os.Process) { _ = p.Kill() }
