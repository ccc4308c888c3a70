package handlers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoServiceClients keeps events, batch and handlers free of AWS SDK
// service clients, of CDK and of OpenTelemetry: a function that uses
// neither idempotency nor a dead-letter queue must link no client, and one
// that does not trace (package tracing) no OpenTelemetry. (DynamoDB's
// types package, for attribute values, is not a client.)
func TestNoServiceClients(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../events", "../batch", "../internal/engine", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	client := regexp.MustCompile(`^github\.com/aws/aws-sdk-go-v2/service/[^/]+$|aws-cdk|jsii|^go\.opentelemetry\.io/`)
	n := 0
	for _, pkg := range strings.Fields(string(out)) {
		n++
		if client.MatchString(pkg) {
			t.Errorf("%s is imported by events, batch, internal/engine or handlers", pkg)
		}
	}
	if n < 10 {
		t.Fatalf("go list returned only %d packages: %s", n, out)
	}
}

// TestNoUnsafe: no package of the module imports unsafe, test files
// included. What reads the wire does it with internal/jsonread and
// encoding/json, whose fuzz targets compare them; a payload decodes
// through encoding/json.
func TestNoUnsafe(t *testing.T) {
	root := filepath.Join("..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root is not at %s: %v", root, err)
	}
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "node_modules", ".git", "out":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			if imp.Path.Value == `"unsafe"` {
				t.Errorf("%s imports unsafe: read the wire with internal/jsonread, decode payloads with encoding/json", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 300 {
		t.Fatalf("only %d files checked: is the walk finding the module?", checked)
	}
}
