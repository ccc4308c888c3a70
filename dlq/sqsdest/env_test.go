package sqsdest_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/dlq/sqsdest"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

// TestFromEnvironment: a destination built from the Lambda environment alone
// (region, role credentials, endpoint) sends to fauxqs.
func TestFromEnvironment(t *testing.T) {
	srv := servers.SQS(t)
	client := sqs.NewFromConfig(srv.AWSConfig())
	url := queue(t, client, false)
	t.Setenv("AWS_REGION", servers.Region)
	t.Setenv("AWS_ACCESS_KEY_ID", servers.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", servers.SecretAccessKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_SQS", srv.Endpoint)
	d, err := sqsdest.FromEnvironment(url)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Send(testCtx(t), []*dlq.Envelope{envelope(0, `{"kinesis":{"data":"x"}}`)}); err != nil {
		t.Fatal(err)
	}
	if msgs := drain(t, client, url, 1); len(msgs) != 1 {
		t.Fatalf("received %d messages, want 1", len(msgs))
	}

	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	if _, err := sqsdest.FromEnvironment(url); err == nil || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Fatalf("without a region: %v", err)
	}
	t.Setenv("AWS_REGION", servers.Region)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	if _, err := sqsdest.FromEnvironment(url); err == nil || !strings.Contains(err.Error(), "AWS_SECRET_ACCESS_KEY") {
		t.Fatalf("without credentials: %v", err)
	}
}
