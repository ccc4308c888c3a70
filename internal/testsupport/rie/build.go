package rie

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const (
	rieModule = "github.com/aws/aws-lambda-runtime-interface-emulator"
	riePkg    = rieModule + "/cmd/aws-lambda-rie"
)

// Per-process caches. Each entry is computed once; a failure is cached too,
// so every test that needs the binary fails with the same message.
var (
	rieOnce sync.Once
	rieBin  string
	rieErr  error

	handlersMu sync.Mutex
	handlers   = map[string]*handlerBuild{}
)

type handlerBuild struct {
	once sync.Once
	path string
	err  error
}

// BuildHandler builds the Go main package pkg (an import path inside this
// module) as a Lambda "bootstrap" binary with CGO_ENABLED=0 and
// -tags lambda.norpc, and returns the binary's path.
//
// The build runs once per package per test process: later calls return the
// same path. Binaries are written under the user cache directory
// (…/sluice/handlers/<hash>/bootstrap) because t.TempDir is removed when the
// calling test ends; the Go build cache keeps rebuilds cheap.
func BuildHandler(t testing.TB, pkg string) string {
	t.Helper()
	handlersMu.Lock()
	b, ok := handlers[pkg]
	if !ok {
		b = &handlerBuild{}
		handlers[pkg] = b
	}
	handlersMu.Unlock()

	b.once.Do(func() { b.path, b.err = buildHandler(pkg) })
	if b.err != nil {
		t.Fatalf("rie.BuildHandler(%q): %v", pkg, b.err)
	}
	return b.path
}

func buildHandler(pkg string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(root + "\x00" + pkg))
	dir := filepath.Join(cache, "handlers", hex.EncodeToString(sum[:8]))
	out := filepath.Join(dir, "bootstrap")
	if err := goBuild(root, out, []string{"CGO_ENABLED=0"}, "-tags", "lambda.norpc", pkg); err != nil {
		return "", err
	}
	return out, nil
}

// rieBinary returns the path of the aws-lambda-rie binary, building it on
// first use (see scripts/build-rie.sh, which does the same).
func rieBinary() (string, error) {
	rieOnce.Do(func() { rieBin, rieErr = findOrBuildRIE() })
	return rieBin, rieErr
}

func findOrBuildRIE() (string, error) {
	if p := os.Getenv("SLUICE_RIE"); p != "" {
		// An explicit binary is used as is, whatever its version.
		if err := checkExecutable(p); err != nil {
			return "", fmt.Errorf("SLUICE_RIE=%s: %w; unset SLUICE_RIE or run scripts/build-rie.sh to build it there", p, err)
		}
		return p, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	want, err := goOutput(root, "list", "-m", "-f", "{{.Version}}", rieModule)
	if err != nil {
		return "", fmt.Errorf("cannot find the pinned RIE version (%w); go.mod needs the tool directive: go get -tool %s@<version>", err, riePkg)
	}
	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(cache, "bin", "aws-lambda-rie")
	if info, err := buildinfo.ReadFile(p); err == nil && info.Main.Path == rieModule && info.Main.Version == want {
		return p, nil
	}
	if err := goBuild(root, p, []string{"CGO_ENABLED=0"}, riePkg); err != nil {
		return "", fmt.Errorf("building aws-lambda-rie %s: %w (or run scripts/build-rie.sh, or point SLUICE_RIE at a binary)", want, err)
	}
	return p, nil
}

func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// goBuild runs "go build -o out args..." in dir, writing to a temporary file
// first so that concurrent test processes never see a half-written binary.
func goBuild(dir, out string, env []string, args ...string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	f.Close()
	defer os.Remove(tmp)

	cmd := exec.Command("go", append([]string{"build", "-o", tmp}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, stderr.Bytes())
	}
	return os.Rename(tmp, out)
}

func goOutput(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return strings.TrimSpace(string(out)), nil
}

// moduleRoot returns the directory of the main module's go.mod, found from
// the current directory (a test's working directory is its package directory).
func moduleRoot() (string, error) {
	gomod, err := goOutput("", "env", "GOMOD")
	if err != nil {
		return "", fmt.Errorf("locating go.mod (is Go on PATH?): %w", err)
	}
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module: run the tests from within the sluice module")
	}
	return filepath.Dir(gomod), nil
}

// cacheDir is ${XDG_CACHE_HOME:-$HOME/.cache}/sluice on Linux, as in
// scripts/build-rie.sh.
func cacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for RIE and handler binaries (set HOME or XDG_CACHE_HOME): %w", err)
	}
	return filepath.Join(d, "sluice"), nil
}
