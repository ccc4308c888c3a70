package handlers

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestNoServiceClients keeps events, batch and handlers free of AWS SDK
// service clients and of CDK: a function that uses neither idempotency nor
// a dead-letter queue must link none. (DynamoDB's types package, for
// attribute values, is not a client.)
func TestNoServiceClients(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../events", "../batch", "../internal/engine", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	client := regexp.MustCompile(`^github\.com/aws/aws-sdk-go-v2/service/[^/]+$|aws-cdk|jsii`)
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
