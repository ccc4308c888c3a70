package dlq_test

import (
	"os/exec"
	"strings"
	"testing"
)

// emulator is the local runner: the operations tools (redrive, fetch,
// replay) stand on package invocation and on the readers of real streams
// in localtest/source (which import the runner's contracts, never the
// runner), not on the emulator.
const emulator = "github.com/sluicehq/sluice/localtest"

func linksEmulator(d string) bool { return d == emulator }

// TestToolsLinkNoEmulator: no package under dlq, and none of the CLI's
// operations tools (internal/redrive, internal/fetch, internal/replay,
// internal/inbox), links the local runner.
func TestToolsLinkNoEmulator(t *testing.T) {
	out, err := exec.Command("go", "list", "./...", "../internal/redrive", "../internal/fetch", "../internal/replay", "../internal/inbox").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 8 {
		t.Fatalf("go list ./... returned only %d packages: %s", len(pkgs), out)
	}
	for _, pkg := range pkgs {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, d := range strings.Fields(string(out)) {
			if linksEmulator(d) {
				t.Errorf("%s links %s: take what it needs from package invocation (or localtest/source), not from the emulator", pkg, d)
			}
		}
	}
	// The check sees the emulator where it is linked.
	out, err = exec.Command("go", "list", "-deps", "github.com/sluicehq/sluice/cmd/sluice").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	found := false
	for _, d := range strings.Fields(string(out)) {
		found = found || linksEmulator(d)
	}
	if !found {
		t.Error("the sluice command links no localtest: the check no longer matches the emulator's path")
	}
}
