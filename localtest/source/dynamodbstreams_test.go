package source_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/source"
)

func TestAWSDynamoDBStream(t *testing.T) {
	t.Parallel()
	srv := servers.DynamoDB(t)
	ctx := awsCtx(t, 45*time.Second)
	cfg := srv.AWSConfig()
	db := dynamodb.NewFromConfig(cfg)

	// The table and items of the AWS sample (events/testdata/dynamodb.json).
	table := servers.UniqueName(t, "orders")
	out, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &table,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("Id"), AttributeType: ddbtypes.ScalarAttributeTypeN}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("Id"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		StreamSpecification:  &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages},
	})
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	arn := aws.ToString(out.TableDescription.LatestStreamArn)

	item := func(id, msg string, extra map[string]ddbtypes.AttributeValue) map[string]ddbtypes.AttributeValue {
		m := map[string]ddbtypes.AttributeValue{
			"Id": &ddbtypes.AttributeValueMemberN{Value: id}, "Message": &ddbtypes.AttributeValueMemberS{Value: msg},
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	putItem := func(m map[string]ddbtypes.AttributeValue) {
		t.Helper()
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: m}); err != nil {
			t.Fatalf("PutItem: %v", err)
		}
	}
	putItem(item("101", "New item!", nil))
	putItem(item("101", "This item has changed", nil))
	if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table, Key: map[string]ddbtypes.AttributeValue{
		"Id": &ddbtypes.AttributeValueMemberN{Value: "101"},
	}}); err != nil {
		t.Fatalf("DeleteItem: %v", err)
	}
	putItem(item("102", "Rich", map[string]ddbtypes.AttributeValue{
		"tags": &ddbtypes.AttributeValueMemberSS{Value: []string{"x", "y"}},
		"nest": &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{
			"l":   &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{&ddbtypes.AttributeValueMemberBOOL{Value: true}, &ddbtypes.AttributeValueMemberNULL{Value: true}}},
			"bin": &ddbtypes.AttributeValueMemberB{Value: []byte{0, 0xff}},
		}},
	}))

	src := source.DynamoDBStream(cfg, arn, "TRIM_HORIZON")
	shards, err := src.Shards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) == 0 {
		t.Fatal("no shards")
	}
	t.Logf("stream %s: shards %v", arn, shards)

	// Page through every shard two records at a time.
	var all []invocation.StreamRecord
	for _, sh := range shards {
		after := ""
		for ctx.Err() == nil {
			recs, err := src.Read(ctx, sh, after, 2)
			if err != nil {
				t.Fatalf("Read(%s, %q): %v", sh, after, err)
			}
			if len(recs) > 2 {
				t.Fatalf("Read returned %d records, max 2", len(recs))
			}
			if len(recs) == 0 {
				break
			}
			all = append(all, recs...)
			after = recs[len(recs)-1].SequenceNumber
		}
	}
	if len(all) != 4 {
		t.Fatalf("read %d records, want 4", len(all))
	}
	// Re-read after the first record: a fresh iterator.
	again, err := src.Read(ctx, shards[len(shards)-1], all[0].SequenceNumber, 10)
	if err != nil || len(again) != 3 || again[0].SequenceNumber != all[1].SequenceNumber {
		t.Fatalf("re-read after the first record: %d records, %v", len(again), err)
	}

	golden := awsShape(t, awsGolden(t, "dynamodb.json"))
	var want []string // the sample without the TTL record's userIdentity
	for _, p := range golden {
		if !strings.Contains(p, "userIdentity") {
			want = append(want, p)
		}
	}
	wantNames := []string{"INSERT", "MODIFY", "REMOVE", "INSERT"}
	for i, r := range all {
		var ev events.DynamoDBEventRecord
		if err := json.Unmarshal(r.Event, &ev); err != nil {
			t.Fatalf("record %d does not decode as events.DynamoDBEventRecord: %v\n%s", i, err, r.Event)
		}
		if ev.EventName != wantNames[i] || ev.EventSource != "aws:dynamodb" || ev.EventSourceArn != arn ||
			ev.EventID == "" || ev.EventVersion == "" || ev.AWSRegion == "" ||
			ev.Change.SequenceNumber != r.SequenceNumber || ev.Change.StreamViewType != "NEW_AND_OLD_IMAGES" ||
			ev.Change.SizeBytes <= 0 || ev.Change.ApproximateCreationDateTime.IsZero() || r.Arrival.IsZero() {
			t.Errorf("record %d: %s", i, r.Event)
		}
		if i > 0 && len(r.SequenceNumber) == len(all[i-1].SequenceNumber) && r.SequenceNumber <= all[i-1].SequenceNumber {
			t.Errorf("sequence numbers out of order: %s then %s", all[i-1].SequenceNumber, r.SequenceNumber)
		}
		wantKey := `{"Id":{"N":"101"}}`
		if i == 3 {
			wantKey = `{"Id":{"N":"102"}}`
		}
		if r.PartitionKey != wantKey {
			t.Errorf("record %d: PartitionKey %s, want %s", i, r.PartitionKey, wantKey)
		}
		if hasNew, hasOld := ev.Change.NewImage != nil, ev.Change.OldImage != nil; hasNew != (ev.EventName != "REMOVE") || hasOld != (ev.EventName != "INSERT") {
			t.Errorf("record %d (%s): NewImage %v OldImage %v", i, ev.EventName, hasNew, hasOld)
		}
	}
	// INSERT, MODIFY, REMOVE of the sample's item have the sample's key paths.
	awsSameShape(t, awsRecordsEvent(t, all[0].Event, all[1].Event, all[2].Event), want)
	t.Logf("record: %s", all[3].Event)
	var rich events.DynamoDBEventRecord
	if err := json.Unmarshal(all[3].Event, &rich); err != nil {
		t.Fatal(err)
	}
	nest := rich.Change.NewImage["nest"].Map()
	if tags := rich.Change.NewImage["tags"].StringSet(); !slices.Equal(tags, []string{"x", "y"}) ||
		!slices.Equal(nest["bin"].Binary(), []byte{0, 0xff}) || !nest["l"].List()[0].Boolean() || !nest["l"].List()[1].IsNull() {
		t.Errorf("nested attributes lost: %s", all[3].Event)
	}

	// A Sluice handler takes the records as Lambda would deliver them.
	type row struct {
		ID      int    `dynamodbav:"Id"`
		Message string `dynamodbav:"Message"`
	}
	var seen []string
	h, err := handlers.NewDynamoDB(func(_ context.Context, r handlers.DynamoDBRecord[row]) error {
		s := r.EventName()
		if r.New != nil {
			s += fmt.Sprintf(" new %d %s", r.New.ID, r.New.Message)
		}
		if r.Old != nil {
			s += fmt.Sprintf(" old %d %s", r.Old.ID, r.Old.Message)
		}
		seen = append(seen, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var raws []json.RawMessage
	for _, r := range all {
		raws = append(raws, r.Event)
	}
	resp, err := h.Invoke(ctx, awsRecordsEvent(t, raws...))
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	var dr events.DynamoDBEventResponse
	if err := json.Unmarshal(resp, &dr); err != nil || len(dr.BatchItemFailures) != 0 {
		t.Fatalf("handler response %s (%v)", resp, err)
	}
	if want := []string{
		"INSERT new 101 New item!", "MODIFY new 101 This item has changed old 101 New item!",
		"REMOVE old 101 This item has changed", "INSERT new 102 Rich",
	}; !slices.Equal(seen, want) {
		t.Errorf("handler saw %q, want %q", seen, want)
	}

	// LATEST: nothing old; a change made after the first Read arrives.
	latest := source.DynamoDBStream(cfg, arn, "LATEST")
	last := shards[len(shards)-1]
	if recs, err := latest.Read(ctx, last, "", 10); err != nil || len(recs) != 0 {
		t.Fatalf("LATEST first Read: %d records, %v", len(recs), err)
	}
	putItem(item("103", "late", nil))
	recs, err := latest.Read(ctx, last, "", 10)
	if err != nil || len(recs) != 1 || recs[0].PartitionKey != `{"Id":{"N":"103"}}` {
		t.Fatalf("LATEST second Read: %d records, %v", len(recs), err)
	}
	if _, err := source.DynamoDBStream(cfg, arn, "AT_TIMESTAMP").Read(ctx, last, "", 1); err == nil {
		t.Error("AT_TIMESTAMP accepted for DynamoDB")
	}
}
