package localaws

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// installScript is the repo-relative path of the installer.
const installScript = "scripts/servers/install.sh"

var installState struct {
	mu   sync.Mutex
	done bool
	dir  string
	err  error
}

// Install runs scripts/servers/install.sh (once per process; later calls
// return the first result) and returns the directory holding the installed
// servers. The script is fast (~50 ms) when the installed versions match the
// committed package-lock.json and installs them otherwise; its progress is
// copied to stderr.
func Install(ctx context.Context) (string, error) {
	installState.mu.Lock()
	defer installState.mu.Unlock()
	if installState.done {
		return installState.dir, installState.err
	}
	dir, err := runInstall(ctx)
	if err != nil && ctx.Err() != nil {
		// Cancelled or timed out: let a later caller with more time try again.
		return "", err
	}
	installState.done, installState.dir, installState.err = true, dir, err
	return dir, err
}

func runInstall(ctx context.Context) (string, error) {
	script, err := findInstallScript()
	if err != nil {
		return "", err
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		return "", fmt.Errorf("install servers: bash not found on PATH (needed to run %s)", script)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bash, script)
	cmd.Stdout = &stdout
	cmd.Stderr = io.MultiWriter(&stderr, os.Stderr)
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		why := err.Error()
		if ctx.Err() != nil {
			why = fmt.Sprintf("%v (%v)", err, context.Cause(ctx))
		}
		return "", fmt.Errorf("install servers: %s failed: %s\n"+
			"It needs node + npm on PATH and the npm registry reachable; run it by hand to see why. Its output:\n%s",
			script, why, tail(stderr.String(), 4<<10))
	}
	lines := strings.Fields(stdout.String())
	if len(lines) == 0 {
		return "", fmt.Errorf("install servers: %s printed no directory on stdout; stderr:\n%s", script, tail(stderr.String(), 4<<10))
	}
	dir := lines[len(lines)-1]
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("install servers: %s printed %q, which is not a directory", script, dir)
	}
	return dir, nil
}

// findInstallScript looks next to this source file (../../scripts/servers),
// then in the parents of the working directory.
func findInstallScript() (string, error) {
	var tried []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		p := filepath.Join(filepath.Dir(file), "..", "..", installScript)
		if isFile(p) {
			return filepath.Clean(p), nil
		}
		tried = append(tried, p)
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			p := filepath.Join(d, installScript)
			if isFile(p) {
				return p, nil
			}
			tried = append(tried, p)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("install servers: cannot find " + installScript + " (tried " +
		strings.Join(tried, ", ") + "); run the tests from inside the sluice repository")
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
