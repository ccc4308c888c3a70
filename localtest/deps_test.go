package localtest

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// remoteClient matches the packages that talk to real endpoints: AWS SDK
// service clients and franz-go. (DynamoDB's types package, for attribute
// values, is not a client; events needs it.)
var remoteClient = regexp.MustCompile(`^github\.com/aws/aws-sdk-go-v2/service/[^/]+$|^github\.com/twmb/franz-go/`)

func remoteDeps(t *testing.T, pkg string) (clients []string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list returned only %d packages: %s", len(deps), out)
	}
	for _, d := range deps {
		if remoteClient.MatchString(d) {
			clients = append(clients, d)
		}
	}
	return clients
}

// TestRootLinksNoRemoteClient keeps the engine free of the clients of real
// endpoints: a Go test that runs an in-process handler over emulated
// records links neither the AWS SDK's Kinesis, DynamoDB Streams, SQS and S3
// clients nor franz-go. Those live in localtest/source and
// localtest/destination.
func TestRootLinksNoRemoteClient(t *testing.T) {
	if c := remoteDeps(t, "."); len(c) > 0 {
		t.Errorf("localtest links %s: move what needs them to localtest/source or localtest/destination", strings.Join(c, ", "))
	}
	// The check sees a client where there is one.
	if c := remoteDeps(t, "./source"); len(c) == 0 {
		t.Error("localtest/source links no client: the pattern no longer matches the clients")
	}
}
