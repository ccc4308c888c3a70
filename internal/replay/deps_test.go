package replay

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLambdaLinksNoReplay: what a Lambda function links (handlers, the
// conformance function) never pulls in this package.
func TestLambdaLinksNoReplay(t *testing.T) {
	for _, pkg := range []string{"github.com/sluicehq/sluice/handlers", "github.com/sluicehq/sluice/examples/conformance"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list %s returned only %d packages", pkg, len(deps))
		}
		for _, d := range deps {
			if d == "github.com/sluicehq/sluice/internal/replay" {
				t.Errorf("%s links %s: keep replay out of Lambda functions", pkg, d)
			}
		}
	}
	out, _ := exec.Command("go", "list", "-deps", "github.com/sluicehq/sluice/cmd/sluice").CombinedOutput()
	if !strings.Contains(string(out), "github.com/sluicehq/sluice/internal/replay\n") {
		t.Error("the sluice command does not link internal/replay: the check no longer matches")
	}
}
