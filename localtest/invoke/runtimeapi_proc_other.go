//go:build !unix

package invoke

import (
	"os"
	"os/exec"
)

func setProcessGroup(*exec.Cmd) {}

func killProcessGroup(p *os.Process) { _ = p.Kill() }

// stopProcessGroup cannot freeze a process here: the function runs on
// until the deadline kills it.
func stopProcessGroup(*os.Process) bool { return false }
