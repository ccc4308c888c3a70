package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestShipsNoTestSupport keeps the test support packages (the testing
// package, the tests' server helpers, the Runtime Interface Emulator
// harness) out of the sluice binary: `sluice local` starts its servers
// through internal/localaws, which links none of them.
func TestShipsNoTestSupport(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 50 {
		t.Fatalf("go list returned only %d packages: %s", len(pkgs), out)
	}
	seen := false
	for _, pkg := range pkgs {
		seen = seen || pkg == "github.com/sluicehq/sluice/internal/localaws"
		if pkg == "testing" || strings.Contains(pkg, "/internal/testsupport/") || strings.HasSuffix(pkg, "/internal/servers") ||
			strings.HasSuffix(pkg, "/internal/rie") || strings.HasSuffix(pkg, "/internal/jsonshape") {
			t.Errorf("the sluice binary links %s", pkg)
		}
	}
	if !seen {
		t.Error("the sluice binary does not link internal/localaws: the pattern no longer matches what `sluice local` uses")
	}
}
