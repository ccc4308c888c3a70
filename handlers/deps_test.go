package handlers

import (
	"go/parser"
	"go/token"
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

// TestNoUnsafe keeps unsafe in the internal packages (eventscan, jsonplan),
// where the decoders that need it are fuzzed against their references:
// handlers holds behaviour, and decodes through jsonplan.Decoder.
func TestNoUnsafe(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) < 10 {
		t.Fatalf("glob: %v %v", files, err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			if imp.Path.Value == `"unsafe"` {
				t.Errorf("%s imports unsafe: a decoder belongs in internal/eventscan, a typed decode in jsonplan.Decoder", name)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d files checked", checked)
	}
}
