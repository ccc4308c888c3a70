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
	// A Kinesis handler keeps a checkpoint per lane (its shard, or shard
	// and partition key), not an item per record: the same lanes in each
	// namespace, the shadow's under shadow#.
	keys := map[string]int{}
	for _, it := range items.Items {
		id, _ := it["id"].(*ddbtypes.AttributeValueMemberS)
		switch {
		case id == nil:
			t.Fatalf("item without a string id: %v", it)
		case !strings.Contains(id.Value, "#lane#kinesis#"):
			t.Fatalf("item %q: want only the lanes' checkpoints", id.Value)
		case strings.HasPrefix(id.Value, "shadow#sluice-orders-shadow#lane#"):
			keys["shadow"]++
		case strings.HasPrefix(id.Value, "sluice-orders#lane#"):
			keys["production"]++
		default:
			t.Fatalf("item %q is in neither namespace", id.Value)
		}
	}
	if keys["shadow"] == 0 || keys["shadow"] != keys["production"] || keys["shadow"]+keys["production"] != len(items.Items) {
		t.Fatalf("idempotency lanes %v over %d items, want the same lanes in production and under shadow#", keys, len(items.Items))
	}
}
