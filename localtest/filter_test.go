package localtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// Records as Lambda delivers them: the documentation's examples, and the
// rules for payloads that are not JSON.
func TestFilterRecords(t *testing.T) {
	kinesis := func(key, data string) string {
		return fmt.Sprintf(`{"kinesis":{"kinesisSchemaVersion":"1.0","partitionKey":%q,"sequenceNumber":"4959","data":%q,"approximateArrivalTimestamp":1545084650.987},
			"eventSource":"aws:kinesis","eventName":"aws:kinesis:record","eventSourceARN":"arn:aws:kinesis:us-east-2:123456789012:stream/s"}`, key, b64(data))
	}
	sqs := func(body string) string {
		b, _ := json.Marshal(body)
		return `{"messageId":"m1","body":` + string(b) + `,"attributes":{"ApproximateReceiveCount":"1","SenderId":"AIDAIENQZJOLO23YVJ4VO"},"messageAttributes":{},"eventSource":"aws:sqs"}`
	}
	kafka := func(value string) string {
		return fmt.Sprintf(`{"topic":"mytopic","partition":0,"offset":15,"timestamp":1545084650987,"timestampType":"CREATE_TIME","value":%q,"headers":[]}`, b64(value))
	}
	ddb := `{"eventID":"1","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"Keys":{"Id":{"N":"101"}},
		"NewImage":{"Message":{"S":"New item!"},"Id":{"N":"101"}},"SequenceNumber":"111","SizeBytes":26,"StreamViewType":"NEW_AND_OLD_IMAGES"}}`
	cases := []struct {
		name            string
		source          sevents.Source
		pattern, record string
		want            bool
	}{
		{"kinesis/partitionKey and data", sevents.SourceKinesis, `{"partitionKey":["1"],"data":{"Location":["Los Angeles"]}}`,
			kinesis("1", `{"Location":"Los Angeles"}`), true},
		{"kinesis/other partitionKey", sevents.SourceKinesis, `{"partitionKey":["1"],"data":{"Location":["Los Angeles"]}}`,
			kinesis("2", `{"Location":"Los Angeles"}`), false},
		{"kinesis/temperature range", sevents.SourceKinesis, `{"data":{"Temperature":[{"numeric":[">",50,"<=",60]}]}}`,
			kinesis("1", `{"Temperature":55}`), true},
		{"kinesis/temperature out of range", sevents.SourceKinesis, `{"data":{"Temperature":[{"numeric":[">",50,"<=",60]}]}}`,
			kinesis("1", `{"Temperature":61}`), false},
		{"kinesis/non-JSON data with a data pattern is dropped", sevents.SourceKinesis, `{"data":{"Location":[{"exists":false}]}}`,
			kinesis("1", `plain text`), false},
		{"kinesis/non-JSON data, metadata pattern only", sevents.SourceKinesis, `{"partitionKey":["1"]}`, kinesis("1", `plain text`), true},
		{"dynamodb/nested key", sevents.SourceDynamoDB, `{"dynamodb":{"Keys":{"Id":{"N":["101"]}}}}`, ddb, true},
		{"dynamodb/other key", sevents.SourceDynamoDB, `{"dynamodb":{"Keys":{"Id":{"N":["102"]}}}}`, ddb, false},
		{"dynamodb/eventName", sevents.SourceDynamoDB, `{"eventName":["INSERT"]}`, ddb, true},
		{"dynamodb/eventName REMOVE", sevents.SourceDynamoDB, `{"eventName":["REMOVE"]}`, ddb, false},
		{"sqs/JSON body, JSON pattern", sevents.SourceSQS, `{"body":{"RequestCode":["BBBB"]}}`, sqs(`{"RecordNumber":1234,"RequestCode":"BBBB"}`), true},
		{"sqs/JSON body, other value", sevents.SourceSQS, `{"body":{"RequestCode":["BBBB"]}}`, sqs(`{"RecordNumber":1234,"RequestCode":"AAAA"}`), false},
		{"sqs/plain body, plain pattern", sevents.SourceSQS, `{"body":["hello"]}`, sqs(`hello`), true},
		{"sqs/plain body, prefix", sevents.SourceSQS, `{"body":[{"prefix":"ERROR"}]}`, sqs(`ERROR: disk full`), true},
		{"sqs/plain body, JSON pattern is dropped", sevents.SourceSQS, `{"body":{"RequestCode":["BBBB"]}}`, sqs(`RequestCode BBBB`), false},
		{"sqs/JSON body, plain pattern is dropped", sevents.SourceSQS, `{"body":[{"prefix":"{"}]}`, sqs(`{"a":1}`), false},
		{"sqs/plain body, metadata pattern", sevents.SourceSQS, `{"attributes":{"SenderId":["AIDAIENQZJOLO23YVJ4VO"]}}`, sqs(`hello`), true},
		{"kafka/JSON value", sevents.SourceKafka, `{"value":{"device_ID":[{"prefix":"AB"}]}}`, kafka(`{"device_ID":"AB1234","session":{"duration":162}}`), true},
		{"kafka/JSON value nested", sevents.SourceKafka, `{"value":{"session":{"duration":[{"numeric":[">",200]}]}}}`, kafka(`{"device_ID":"AB1234","session":{"duration":162}}`), false},
		{"kafka/plain value", sevents.SourceKafka, `{"value":[{"prefix":"Hello"}]}`, kafka(`Hello, this is a test.`), true},
		{"kafka/metadata", sevents.SourceKafka, `{"partition":[0],"topic":["mytopic"]}`, kafka(`x`), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, errs := compileFilters(c.source, &FilterCriteria{Filters: []Filter{{Pattern: c.pattern}}})
			if len(errs) > 0 {
				t.Fatal(errors.Join(errs...))
			}
			if got := fs.Keep(json.RawMessage(c.record)); got != c.want {
				t.Fatalf("pattern %s: got %v, want %v", c.pattern, got, c.want)
			}
		})
	}
}

func TestFilterCriteriaFiltersAreORed(t *testing.T) {
	fs, errs := compileFilters(sevents.SourceSQS, &FilterCriteria{Filters: []Filter{
		{Pattern: `{"body":{"type":["a"]}}`}, {Pattern: `{"body":{"type":["b"]}}`}}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for body, want := range map[string]bool{`{"type":"a"}`: true, `{"type":"b"}`: true, `{"type":"c"}`: false} {
		b, _ := json.Marshal(body)
		if got := fs.Keep(json.RawMessage(`{"body":` + string(b) + `}`)); got != want {
			t.Errorf("body %s: got %v, want %v", body, got, want)
		}
	}
	none, errs := compileFilters(sevents.SourceSQS, &FilterCriteria{})
	if none != nil || len(errs) > 0 || !none.Keep(json.RawMessage(`{}`)) {
		t.Fatalf("no filters must deliver everything: %v %v", none, errs)
	}
}

func TestFilterCriteriaValidation(t *testing.T) {
	six := make([]Filter, 6)
	for i := range six {
		six[i] = Filter{Pattern: fmt.Sprintf(`{"body":{"n":[%d]}}`, i)}
	}
	cases := []struct {
		name        string
		source      sevents.Source
		filters     []Filter
		field, want string
	}{
		{"more than five", sevents.SourceSQS, six, "FilterCriteria.Filters", "6 filters: a mapping holds at most 5"},
		{"not JSON", sevents.SourceSQS, []Filter{{Pattern: `{"body":{"a":["x"]}}`}, {Pattern: `{"body": {`}}, "FilterCriteria.Filters[1].Pattern", "is not valid JSON"},
		{"empty", sevents.SourceSQS, []Filter{{Pattern: ` `}}, "FilterCriteria.Filters[0].Pattern", "is empty"},
		{"not an object", sevents.SourceSQS, []Filter{{Pattern: `["x"]`}}, "FilterCriteria.Filters[0].Pattern", "must be a JSON object"},
		{"null", sevents.SourceSQS, []Filter{{Pattern: `null`}}, "FilterCriteria.Filters[0].Pattern", "must be a JSON object"},
		{"a plain string", sevents.SourceSQS, []Filter{{Pattern: `"order"`}}, "FilterCriteria.Filters[0].Pattern", "must be a JSON object"},
		{"scalar rule", sevents.SourceSQS, []Filter{{Pattern: `{"body":{"a":"x"}}`}}, "FilterCriteria.Filters[0].Pattern", `body.a: must be a list of values or operators (e.g. ["x"])`},
		{"empty list", sevents.SourceSQS, []Filter{{Pattern: `{"a":[]}`}}, "FilterCriteria.Filters[0].Pattern", "a: an empty list matches nothing"},
		{"unknown operator", sevents.SourceSQS, []Filter{{Pattern: `{"body":{"a":[{"contains":"x"}]}}`}}, "FilterCriteria.Filters[0].Pattern", `body.a[0]: unknown operator "contains"`},
		{"two operators in one object", sevents.SourceSQS, []Filter{{Pattern: `{"a":[{"prefix":"x","suffix":"y"}]}`}}, "FilterCriteria.Filters[0].Pattern", "exactly one operator, not 2"},
		{"anything-but prefix", sevents.SourceSQS, []Filter{{Pattern: `{"a":[{"anything-but":{"prefix":"us-"}}]}`}}, "FilterCriteria.Filters[0].Pattern", "not supported by Lambda event filtering"},
		{"wildcard", sevents.SourceSQS, []Filter{{Pattern: `{"a":[{"wildcard":"*.png"}]}`}}, "FilterCriteria.Filters[0].Pattern", "wildcard is an EventBridge operator"},
		{"numeric two lower bounds", sevents.SourceSQS, []Filter{{Pattern: `{"a":[{"numeric":[">",1,">=",2]}]}`}}, "FilterCriteria.Filters[0].Pattern", "at most one lower bound"},
		{"numeric string", sevents.SourceSQS, []Filter{{Pattern: `{"a":[{"numeric":[">","1"]}]}`}}, "FilterCriteria.Filters[0].Pattern", "must be followed by a number"},
		{"numeric equals in a range", sevents.SourceSQS, []Filter{{Pattern: `{"a":[{"numeric":["=",1,"<",2]}]}`}}, "FilterCriteria.Filters[0].Pattern", `"=" stands alone`},
		{"exists not boolean", sevents.SourceSQS, []Filter{{Pattern: `{"a":[{"exists":"yes"}]}`}}, "FilterCriteria.Filters[0].Pattern", "exists takes true or false"},
		{"$or of one", sevents.SourceSQS, []Filter{{Pattern: `{"$or":[{"a":["x"]}]}`}}, "FilterCriteria.Filters[0].Pattern", "at least two patterns"},
		{"kinesis data as a plain list", sevents.SourceKinesis, []Filter{{Pattern: `{"data":[{"prefix":"x"}]}`}}, "FilterCriteria.Filters[0].Pattern", "must be a JSON object naming its fields"},
		{"dynamodb in $or as a plain list", sevents.SourceDynamoDB, []Filter{{Pattern: `{"$or":[{"dynamodb":["x"]},{"eventName":["INSERT"]}]}`}}, "FilterCriteria.Filters[0].Pattern", "must be a JSON object naming its fields"},
		{"too long", sevents.SourceSQS, []Filter{{Pattern: `{"a":["` + strings.Repeat("x", 4100) + `"]}`}}, "FilterCriteria.Filters[0].Pattern", "Lambda allows at most 4096"},
		{"pattern written as an object", sevents.SourceSQS, []Filter{{notString: `{"body":{"a":["x"]}}`}}, "FilterCriteria.Filters[0].Pattern", "must be a JSON string holding the pattern"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &Mapping{EventSource: c.source, FilterCriteria: &FilterCriteria{Filters: c.filters}}
			if c.source == sevents.SourceKinesis || c.source == sevents.SourceDynamoDB {
				m.StartingPosition = "TRIM_HORIZON"
			}
			err := m.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Field != c.field || !strings.Contains(ve.Reason, c.want) {
				t.Fatalf("got %v, want %s: ...%s...", err, c.field, c.want)
			}
			// AWS rejects every pattern it cannot read with one message,
			// recorded for null, a plain string, a leaf that is not a list,
			// an empty list and malformed JSON: it leads, the detail follows.
			// Limits and a Pattern that is not a string are other errors.
			aws := "InvalidParameterValueException: Invalid filter pattern definition. " + c.field + ": "
			limit := c.name == "more than five" || c.name == "too long" || c.name == "pattern written as an object"
			if got := strings.HasPrefix(ve.Error(), aws); got == limit {
				t.Fatalf("error %q: leads with AWS's words %v, want %v", ve.Error(), got, !limit)
			}
		})
	}
}

func TestParseMappingFilterCriteria(t *testing.T) {
	m, err := ParseMapping([]byte(`{"EventSource":"sqs","FilterCriteria":{"Filters":[{"Pattern":"{\"body\":{\"type\":[\"order\"]}}"}]}}`))
	if err != nil || m.Validate() != nil || m.FilterCriteria.Filters[0].Pattern != `{"body":{"type":["order"]}}` {
		t.Fatalf("%+v %v", m, err)
	}
	// The pattern written as an object instead of a string: the error
	// names the filter and says how to write it.
	m, err = ParseMapping([]byte(`{"EventSource":"sqs","FilterCriteria":{"Filters":[{"Pattern":{"body":{"type":["order"]}}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "FilterCriteria.Filters[0].Pattern: must be a JSON string") {
		t.Fatalf("got %v", err)
	}
	if _, err := ParseMapping([]byte(`{"EventSource":"sqs","FilterCriteria":{"Filters":[{"Patern":"{}"}]}}`)); err == nil || !strings.Contains(err.Error(), `unknown field "Patern"`) {
		t.Fatalf("a misspelt filter field must fail: %v", err)
	}
}

func sqsFilterRecords() []InputRecord {
	var out []InputRecord
	for i := 1; i <= 8; i++ {
		typ := "order"
		if i%3 == 0 {
			typ = "noise"
		}
		out = append(out, InputRecord{Body: json.RawMessage(fmt.Sprintf(`{"id":"%d","type":%q}`, i, typ))})
	}
	out = append(out, InputRecord{Body: json.RawMessage(`"not json"`)})
	return out
}

func TestRunSQSFilteredMessagesAreDeleted(t *testing.T) {
	for _, source := range []sevents.Source{sevents.SourceSQS, sevents.SourceSQSFIFO} {
		t.Run(string(source), func(t *testing.T) {
			var delivered []string
			h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
				_, pids, _ := sqsIDs(t, p)
				delivered = append(delivered, pids...)
				return []byte(`{"batchItemFailures":[]}`), nil
			})
			recs := sqsFilterRecords()
			if source == sevents.SourceSQSFIFO {
				for i := range recs {
					recs[i].MessageGroupID = "g"
				}
			}
			m := &Mapping{EventSource: source, BatchSize: ptr(4), FunctionResponseTypes: []string{"ReportBatchItemFailures"},
				FilterCriteria: &FilterCriteria{Filters: []Filter{{Pattern: `{"body":{"type":["order"]}}`}}}}
			rep, _ := run(t, Options{Mapping: m, Records: recs, Invoker: InProcess(h)})
			if want := []string{"1", "2", "4", "5", "7", "8"}; !slices.Equal(delivered, want) {
				t.Fatalf("delivered %v, want %v", delivered, want)
			}
			tot := rep.Totals
			if tot.Records != 9 || tot.Processed != 6 || tot.Filtered != 3 || rep.QueueLeft != 0 || tot.Left != 0 || len(rep.Unprocessed) != 0 {
				t.Fatalf("totals %+v, queue left %d, unprocessed %v", tot, rep.QueueLeft, rep.Unprocessed)
			}
			filtered := 0
			for _, f := range rep.Fates {
				if f == FateFiltered {
					filtered++
				}
			}
			if filtered != 3 || !heldWithoutEffects(rep) {
				t.Fatalf("fates %v, invariants %+v", rep.Fates, rep.Invariants)
			}
		})
	}
}

func TestRunKinesisFilteredRecordsAreSkippedPast(t *testing.T) {
	var delivered []string
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		_, pids := kinesisIDs(t, p)
		delivered = append(delivered, pids...)
		return failuresJSON(), nil
	})
	var recs []InputRecord
	for i := 1; i <= 7; i++ {
		recs = append(recs, InputRecord{PartitionKey: "k", Data: json.RawMessage(fmt.Sprintf(`{"id":"%d","keep":%v}`, i, i%2 == 1))})
	}
	recs = append(recs, InputRecord{PartitionKey: "k", Data: json.RawMessage(`"plain text, not JSON"`)}) // the last record: filtered
	m := kinesisMapping(2, func(m *Mapping) {
		m.FilterCriteria = &FilterCriteria{Filters: []Filter{{Pattern: `{"data":{"keep":[true]}}`}}}
	})
	rep, tr := run(t, Options{Mapping: m, Records: recs, Invoker: InProcess(h)})
	if want := []string{"1", "3", "5", "7"}; !slices.Equal(delivered, want) {
		t.Fatalf("delivered %v, want %v", delivered, want)
	}
	if len(tr.entries) != 2 {
		t.Fatalf("4 matching records in batches of 2 make 2 invocations: %+v", tr.entries)
	}
	if rep.Totals.Filtered != 4 || rep.Totals.Processed != 4 || !heldWithoutEffects(rep) {
		t.Fatalf("totals %+v, invariants %+v", rep.Totals, rep.Invariants)
	}
	// The checkpoint moves past the filtered records, the last one included.
	var last string
	for id, f := range rep.Fates {
		if f == FateFiltered && id > last {
			last = id
		}
	}
	if cp := rep.Checkpoints["shardId-000000000000"]; cp == "" || cp != last {
		t.Fatalf("checkpoint %q, want the last (filtered) record %q", cp, last)
	}
}

func TestRunKafkaFilteredRecordsAreSkippedPast(t *testing.T) {
	var delivered []string
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		var ev events.KafkaEvent
		if err := json.Unmarshal(p, &ev); err != nil {
			t.Fatal(err)
		}
		for _, recs := range ev.Records {
			for _, r := range recs {
				v, _ := base64.StdEncoding.DecodeString(r.Value)
				delivered = append(delivered, string(v))
			}
		}
		return nil, nil
	})
	var recs []InputRecord
	for _, v := range []string{"INFO a", "DEBUG b", "INFO c", "DEBUG d"} {
		recs = append(recs, InputRecord{Value: json.RawMessage(fmt.Sprintf("%q", v))})
	}
	m := &Mapping{EventSource: sevents.SourceKafka, StartingPosition: "TRIM_HORIZON",
		FilterCriteria: &FilterCriteria{Filters: []Filter{{Pattern: `{"value":[{"prefix":"INFO"}]}`}}}}
	rep, _ := run(t, Options{Mapping: m, Records: recs, Invoker: InProcess(h)})
	if want := []string{"INFO a", "INFO c"}; !slices.Equal(delivered, want) {
		t.Fatalf("delivered %v, want %v", delivered, want)
	}
	if rep.Totals.Filtered != 2 || rep.Checkpoints["topic-0"] != "3" || !heldWithoutEffects(rep) {
		t.Fatalf("totals %+v, checkpoints %v", rep.Totals, rep.Checkpoints)
	}
}

func TestRunRejectsAnInvalidFilterNamingIt(t *testing.T) {
	m := &Mapping{EventSource: sevents.SourceSQS, FilterCriteria: &FilterCriteria{Filters: []Filter{
		{Pattern: `{"body":{"type":["order"]}}`}, {Pattern: `{"body":{"amount":[{"numeric":[">"]}]}}`}}}}
	_, err := Run(context.Background(), Options{Mapping: m, Records: sqsFilterRecords(),
		Invoker: InProcess(fn(func(context.Context, []byte) ([]byte, error) { return nil, nil }))})
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "FilterCriteria.Filters[1].Pattern" || !strings.Contains(ve.Reason, "body.amount[0]: numeric takes") {
		t.Fatalf("got %v", err)
	}
}
