package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

// TestRunDynamoDBStreamEndpoint reads a real DynamoDB stream (DynamoDB Local)
// into the conformance function, whose command rides in the item's
// "payload" attribute; one item's command fails, and with no retries it is
// given up on in an on-failure record.
func TestRunDynamoDBStreamEndpoint(t *testing.T) {
	bin := conformance(t)
	srv := servers.DynamoDB(t)
	db := dynamodb.NewFromConfig(srv.AWSConfig())
	table, streamARN := streamTable(t, db)
	var payloads []string
	for i, action := range []string{"ok", "ok", "fail", "ok"} {
		payloads = append(payloads, fmt.Sprintf(`{"id":"d%d","action":%q}`, i, action))
	}
	putPayloads(t, db, table, "item-", payloads)
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", fmt.Sprintf(`{"EventSource":"dynamodb","StartingPosition":"TRIM_HORIZON","BatchSize":10,
		"MaximumRetryAttempts":0,"FunctionResponseTypes":["ReportBatchItemFailures"],
		"DestinationConfig":{"OnFailure":{"Destination":"file://%s"}},
		"Endpoint":%q,"StreamArn":%q}`, filepath.Join(dir, "onfailure.jsonl"), srv.Endpoint, streamARN))
	code, stdout, stderr := runCLI(t, "run", "--mapping", mapping, "--handler", bin, "--quiet", "--timeout", "5s",
		"--effects", filepath.Join(dir, "effects.jsonl"), "--env", "SLUICE_SOURCE=dynamodb", "--allow", "on-failure")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	// Records 0 and 1 succeed; the batch stops at 2, which is retried
	// (MaximumRetryAttempts 0: given up at once) together with 3, as Lambda
	// gives up on the rest of a failing batch.
	for _, want := range []string{"4 records", "processed 2", "on-failure 2", `"DDBStreamBatchInfo"`, "invariant no-record-lost: held"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
}

// streamTable creates a table keyed by the string pk with a stream of new
// and old images, and returns its name and its stream's ARN.
func streamTable(t *testing.T, db *dynamodb.Client) (name, streamARN string) {
	t.Helper()
	name = servers.UniqueName(t, "orders")
	out, err := db.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		StreamSpecification:  &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages},
	})
	if err != nil {
		t.Fatal(err)
	}
	return name, aws.ToString(out.TableDescription.LatestStreamArn)
}

// putPayloads writes one item of table per payload, keyed keyPrefix0,
// keyPrefix1, ..., the payload in its attribute "payload".
func putPayloads(t *testing.T, db *dynamodb.Client, table, keyPrefix string, payloads []string) {
	t.Helper()
	for i, p := range payloads {
		if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]ddbtypes.AttributeValue{
			"pk":      &ddbtypes.AttributeValueMemberS{Value: fmt.Sprint(keyPrefix, i)},
			"payload": &ddbtypes.AttributeValueMemberS{Value: p},
		}}); err != nil {
			t.Fatal(err)
		}
	}
}
