package redrive

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLambdaLinksNoReplay keeps the import arrows one way: what a Lambda
// function links (package dlq for quarantine, handlers, the conformance
// function) never pulls in redrive or fetch, the local runner and its
// invokers, or the clients of Kinesis, DynamoDB Streams and Kafka.
func TestLambdaLinksNoReplay(t *testing.T) {
	forbidden := []string{
		"github.com/sluicehq/sluice/internal/redrive",
		"github.com/sluicehq/sluice/internal/fetch",
		"github.com/sluicehq/sluice/localtest",
		"github.com/aws/aws-sdk-go-v2/service/kinesis",
		"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams",
		"github.com/twmb/franz-go/pkg/kgo",
	}
	for _, pkg := range []string{"github.com/sluicehq/sluice/dlq", "github.com/sluicehq/sluice/handlers", "github.com/sluicehq/sluice/examples/conformance"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list %s returned only %d packages", pkg, len(deps))
		}
		for _, d := range deps {
			for _, f := range forbidden {
				// Sluice's packages and franz-go with their subpackages; an
				// SDK service client itself (its types packages are not
				// clients: events reads DynamoDB attribute values with them).
				if d == f || strings.HasPrefix(d, f+"/") && !strings.Contains(f, "/service/") {
					t.Errorf("%s links %s: keep replay, the runner and stream clients out of Lambda functions", pkg, d)
				}
			}
		}
	}
	// The check sees a forbidden package where there is one.
	out, _ := exec.Command("go", "list", "-deps", "github.com/sluicehq/sluice/internal/fetch").CombinedOutput()
	if !strings.Contains(string(out), "github.com/aws/aws-sdk-go-v2/service/kinesis\n") {
		t.Error("internal/fetch does not link the Kinesis client: the check no longer matches")
	}
}
