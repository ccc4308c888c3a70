package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

// TestRunTemplateShadowReplay runs, from the template the constructs
// synthesize, the orders stream's mapping and then its ShadowReplay
// mapping (a second mapping on the same stream, AT_TIMESTAMP, into
// sluice-orders-shadow with SLUICE_SHADOW=1) over the same records and the
// same idempotency table: production's effects are production's, every
// record runs again in the shadow (production's claims do not make them
// duplicates there), the shadow's effects are marked shadow, and its keys
// are apart under shadow#.
func TestRunTemplateShadowReplay(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	const n = 8
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"partitionKey":"p%d","data":{"id":"o%d","action":"ok"}}`, i%3, i))
	}
	records := write(t, dir, "records.jsonl", strings.Join(lines, "\n")+"\n")
	db := servers.DynamoDB(t)
	q := servers.SQS(t)
	env := append(awsEnv(db), "AWS_ENDPOINT_URL_SQS="+q.Endpoint)
	table := createIdempotencyTable(t, env)
	attempts := servers.UniqueName(t, "attempts")
	if code, out, errs := runCLIEnv(t, env, "tables", "create", "--attempts", attempts); code != 0 {
		t.Fatalf("tables create: exit %d\n%s\n%s", code, out, errs)
	}
	dlq, err := sqs.NewFromConfig(q.AWSConfig()).CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(servers.UniqueName(t, "dlq"))})
	if err != nil {
		t.Fatal(err)
	}
	run := func(mapping, effects string) {
		code, out, errs := runCLIEnv(t, env, "run", "--template", templatePath, "--mapping", mapping, "--records", records,
			"--handler", bin, "--effects", effects, "--env", "SLUICE_SOURCE=kinesis",
			"--env", "SLUICE_IDEMPOTENCY_TABLE="+table, "--env", "SLUICE_ATTEMPTS_TABLE="+attempts,
			"--env", "SLUICE_DLQ_URL="+aws.ToString(dlq.QueueUrl))
		if code != 0 || !strings.Contains(out, fmt.Sprintf("processed %d", n)) || !strings.Contains(out, "PASS") {
			t.Fatalf("%s: exit %d\n%s\n%s", mapping, code, out, errs)
		}
	}
	prod, shadow := filepath.Join(dir, "effects.jsonl"), filepath.Join(dir, "shadow-effects.jsonl")
	run("sluice-orders", prod)
	run("sluice-orders-shadow", shadow)
	marks := func(path string) (ids map[string]int, shadows int) {
		ids = map[string]int{}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var e struct {
				ID     string
				Shadow bool
			}
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatal(err)
			}
			ids[e.ID]++
			if e.Shadow {
				shadows++
			}
		}
		return ids, shadows
	}
	p, ps := marks(prod)
	s, ss := marks(shadow)
	if len(p) != n || len(s) != n || ps != 0 || ss != n {
		t.Fatalf("production: %d records, %d marked shadow; shadow: %d records, %d marked shadow; want %d, 0, %d, %d", len(p), ps, len(s), ss, n, n, n)
	}
	items, err := dynamodb.NewFromConfig(db.AWSConfig()).Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]int{}
	for _, it := range items.Items {
		id, _ := it["id"].(*ddbtypes.AttributeValueMemberS)
		switch {
		case id == nil:
			t.Fatalf("item without a string id: %v", it)
		case strings.HasPrefix(id.Value, "shadow#sluice-orders-shadow#"):
			keys["shadow"]++
		case strings.HasPrefix(id.Value, "sluice-orders#"):
			keys["production"]++
		}
	}
	if keys["shadow"] != n || keys["production"] != n {
		t.Fatalf("idempotency keys %v over %d items, want %d production and %d under shadow#", keys, len(items.Items), n, n)
	}
}
