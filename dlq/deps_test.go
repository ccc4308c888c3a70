package dlq_test

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestLambdaLinksNoRunner keeps what a Lambda binary with quarantine links
// small: dlq and its SQS and DynamoDB parts import no runner, no CLI and no
// Kinesis, DynamoDB Streams or Kafka client.
func TestLambdaLinksNoRunner(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".", "./sqsdest", "./dynamodbattempts", "../handlers").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	bad := regexp.MustCompile(`sluice/localtest|sluice/cmd|sluice/internal/(rie|servers)|service/kinesis$|service/dynamodbstreams$|franz-go|aws-cdk|jsii`)
	n := 0
	for _, pkg := range strings.Fields(string(out)) {
		n++
		if bad.MatchString(pkg) {
			t.Errorf("%s is linked by a Lambda binary with quarantine", pkg)
		}
	}
	if n < 10 {
		t.Fatalf("go list returned only %d packages", n)
	}
}
