package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's recipe for using the clone, run as written in a new module
// (the clone stands in for git clone): the requirement survives, and once
// a file imports a Sluice package, go mod tidy and the README's build
// command give a bootstrap. Before, the recipe ended in go mod tidy, which
// dropped the requirement nothing imported yet. Modules come from the
// module cache only (GOPROXY=off): the repository's own dependencies.
func TestReadmeGoModRecipe(t *testing.T) {
	readme := string(mustRead(t, "../../README.md"))
	start := strings.Index(readme, "git clone <this repository> ../sluice\n")
	if start < 0 {
		t.Fatal("the README's recipe is gone")
	}
	recipe := readme[start:]
	recipe = recipe[:strings.Index(recipe, "```")]
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(root, filepath.Join(dir, "sluice")); err != nil {
		t.Fatal(err)
	}
	fn := filepath.Join(dir, "payments")
	if err := os.Mkdir(fn, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off")
	sh := func(line string) {
		t.Helper()
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir, cmd.Env = fn, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(recipe), "\n") {
		line, _, _ = strings.Cut(line, "#")
		if strings.HasPrefix(line, "git clone") {
			continue // the symlink above
		}
		sh(line)
	}
	gomod := string(mustRead(t, filepath.Join(fn, "go.mod")))
	if !strings.Contains(gomod, "require github.com/sluicehq/sluice v0.0.0") || !strings.Contains(gomod, "replace github.com/sluicehq/sluice => ../sluice") {
		t.Fatalf("after the recipe, go.mod:\n%s", gomod)
	}
	// The function of the README's first example, with what it leaves out.
	write(t, fn, "main.go", `package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/handlers"
)

type Order struct {
	OrderID string  `+"`json:\"orderId\"`"+`
	Amount  float64 `+"`json:\"amount\"`"+`
}

func charge(context.Context, Order) error { return nil }

func process(ctx context.Context, r handlers.KinesisRecord[Order]) error {
	if r.Value.Amount <= 0 {
		return batch.Permanent(fmt.Errorf("order %s: bad amount", r.Value.OrderID))
	}
	return charge(ctx, r.Value)
}

func main() { lambda.Start(handlers.MustKinesis(process)) }
`)
	sh("go mod tidy")
	sh("CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -o bootstrap .")
	gomod = string(mustRead(t, filepath.Join(fn, "go.mod")))
	ours := string(mustRead(t, "../../go.mod"))
	lambdaGo := regexp.MustCompile(`github.com/aws/aws-lambda-go v\S+`).FindString(ours)
	for _, w := range []string{"github.com/sluicehq/sluice v0.0.0\n", lambdaGo} {
		if !strings.Contains(gomod, w) {
			t.Errorf("after go mod tidy, go.mod lacks %q:\n%s", w, gomod)
		}
		if !strings.Contains(readme, "\t"+strings.TrimSpace(w)+"\n") {
			t.Errorf("the README's go.mod lacks %q", w)
		}
	}
}
