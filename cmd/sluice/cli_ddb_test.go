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
	ctx := context.Background()
	db := dynamodb.NewFromConfig(srv.AWSConfig())
	table := servers.UniqueName(t, "orders")
	out, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		StreamSpecification:  &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, action := range []string{"ok", "ok", "fail", "ok"} {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]ddbtypes.AttributeValue{
			"pk":      &ddbtypes.AttributeValueMemberS{Value: fmt.Sprint("item-", i)},
			"payload": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf(`{"id":"d%d","action":%q}`, i, action)},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", fmt.Sprintf(`{"EventSource":"dynamodb","StartingPosition":"TRIM_HORIZON","BatchSize":10,
		"MaximumRetryAttempts":0,"FunctionResponseTypes":["ReportBatchItemFailures"],
		"DestinationConfig":{"OnFailure":{"Destination":"file://%s"}},
		"Endpoint":%q,"StreamArn":%q}`, filepath.Join(dir, "onfailure.jsonl"), srv.Endpoint, aws.ToString(out.TableDescription.LatestStreamArn)))
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
