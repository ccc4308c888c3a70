package localtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	awsevents "github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/invocation"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// canon is JSON lines re-encoded by encoding/json, so that expectations may
// spell characters as escapes.
func canon(t *testing.T, lines string) string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(lines, "\n") {
		if l == "" {
			continue
		}
		var v any
		dec := json.NewDecoder(strings.NewReader(l))
		dec.UseNumber() // numbers keep their digits
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		b, _ := json.Marshal(v)
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}

func recordsJSON(t *testing.T, recs []InputRecord) string {
	t.Helper()
	var lines []string
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	return strings.Join(lines, "\n")
}

// mskKey is the key of the AWS sample Kafka events (events/testdata), 22
// bytes that are not text, in base64 as encoding/json writes them.
var mskKey = func() string {
	b, _ := base64.StdEncoding.DecodeString("abcDEFghiJKLmnoPQRstuVWXyz1234==")
	return base64.StdEncoding.EncodeToString(b)
}()

// The AWS documentation's sample events (events/testdata) and SAM's
// generate-event output, each pretty-printed as published, on one line, and
// twice in a JSON array, become the records a records.jsonl would hold:
// every payload byte kept (the binary Kafka key in keyBase64, DynamoDB
// attributes with their types).
func TestReadRecordsFileEvents(t *testing.T) {
	for _, tc := range []struct {
		file   string
		source events.Source
		want   string // the records as JSON lines
		notes  []string
	}{
		{"../events/testdata/kinesis.json", events.SourceKinesis,
			`{"partitionKey":"1","data":"Hello, this is a test."}
{"partitionKey":"1","data":"This is only a test."}`, nil},
		{"testdata/events/sam-kinesis-get-records.json", events.SourceKinesis,
			`{"partitionKey":"partitionKey-03","data":"Hello, this is a test 123."}`, nil},
		{"../events/testdata/dynamodb.json", events.SourceDynamoDB,
			`{"dynamodb":{"Keys":{"Id":{"N":"101"}},"NewImage":{"Id":{"N":"101"},"Message":{"S":"New item!"}}},"eventName":"INSERT"}
{"dynamodb":{"Keys":{"Id":{"N":"101"}},"NewImage":{"Id":{"N":"101"},"Message":{"S":"This item has changed"}},"OldImage":{"Id":{"N":"101"},"Message":{"S":"New item!"}}},"eventName":"MODIFY"}
{"dynamodb":{"Keys":{"Id":{"N":"101"}},"OldImage":{"Id":{"N":"101"},"Message":{"S":"This item has changed"}}},"eventName":"REMOVE"}
{"dynamodb":{"Keys":{"Id":{"N":"102"}},"OldImage":{"Id":{"N":"102"},"Message":{"S":"Expired item"}}},"eventName":"REMOVE"}`,
			[]string{"record 4: userIdentity Service/dynamodb.amazonaws.com (a TTL deletion) is not kept: the record becomes a plain REMOVE"}},
		{"testdata/events/sam-dynamodb-update.json", events.SourceDynamoDB,
			`{"dynamodb":{"Keys":{"Id":{"N":"101"}},"NewImage":{"Id":{"N":"101"},"Message":{"S":"New item!"}}},"eventName":"INSERT"}
{"dynamodb":{"Keys":{"Id":{"N":"101"}},"NewImage":{"Id":{"N":"101"},"Message":{"S":"This item has changed"}},"OldImage":{"Id":{"N":"101"},"Message":{"S":"New item!"}}},"eventName":"MODIFY"}
{"dynamodb":{"Keys":{"Id":{"N":"101"}},"OldImage":{"Id":{"N":"101"},"Message":{"S":"This item has changed"}}},"eventName":"REMOVE"}`, nil},
		{"../events/testdata/sqs.json", events.SourceSQS,
			`{"body":"test","attributes":{"SenderId":"AIDAIENQZJOLO23YVJ4VO"}}
{"body":"test","attributes":{"SenderId":"AIDAIENQZJOLO23YVJ4VO"}}`, nil},
		{"testdata/events/sam-sqs-receive-message.json", events.SourceSQS,
			`{"body":"Hello from SQS!","attributes":{"SenderId":"123456789012"}}`, nil},
		{"../events/testdata/sqs-fifo.json", events.SourceSQSFIFO,
			`{"body":"Test message.","messageGroupId":"1","messageDeduplicationId":"1","attributes":{"SenderId":"AIDAIO23YVJENQZJOL4VO"}}`, nil},
		{"../events/testdata/msk.json", events.SourceKafka,
			`{"partition":0,"keyBase64":"` + mskKey + `","value":"Hello, this is a test.","headers":[{"headerKey":"headerValue"}]}`, nil},
		{"../events/testdata/self-managed-kafka.json", events.SourceKafka,
			`{"partition":0,"keyBase64":"` + mskKey + `","value":"Hello, this is a test.","headers":[{"headerKey":"headerValue"}]}`, nil},
	} {
		pretty := readFile(t, tc.file)
		one := compact(t, pretty)
		for _, v := range []struct {
			name   string
			data   []byte
			events int
		}{
			{"pretty", pretty, 1},
			{"one-line", one, 1},
			{"one-line-newline", append(append([]byte{}, one...), '\n'), 1},
			{"array", []byte("[\n" + string(pretty) + ",\n" + string(one) + "\n]\n"), 2},
			{"concatenated", []byte(string(pretty) + "\n" + string(one) + "\n"), 2},
		} {
			t.Run(filepath.Base(tc.file)+"/"+v.name, func(t *testing.T) {
				f, err := ReadRecordsFile(bytes.NewReader(v.data))
				if err != nil {
					t.Fatal(err)
				}
				if f.Source != tc.source || f.Events != v.events {
					t.Fatalf("source %q, %d events; want %q, %d", f.Source, f.Events, tc.source, v.events)
				}
				want := tc.want
				if v.events == 2 {
					want += "\n" + tc.want
				}
				if got := recordsJSON(t, f.Records); canon(t, got) != canon(t, want) {
					t.Fatalf("records:\n%s\nwant:\n%s", got, want)
				}
				if v.events == 1 && strings.Join(f.Notes, "\n") != strings.Join(tc.notes, "\n") {
					t.Fatalf("notes %q, want %q", f.Notes, tc.notes)
				}
				// The records read back as JSON lines, unchanged.
				back, err := ReadRecordsFile(strings.NewReader(want + "\n"))
				if err != nil || back.Source != "" || back.Events != 0 || canon(t, recordsJSON(t, back.Records)) != canon(t, want) {
					t.Fatalf("as JSON lines: %v %+v", err, back)
				}
			})
		}
	}
}

// Every sample's records are accepted by the emulated source of their kind
// and delivered once each to a function that succeeds.
func TestEventRecordsRunOnTheEmulatedSource(t *testing.T) {
	for _, tc := range []struct {
		file string
		m    *Mapping
	}{
		{"../events/testdata/kinesis.json", kinesisMapping(10, nil)},
		{"../events/testdata/dynamodb.json", &Mapping{EventSource: events.SourceDynamoDB, StartingPosition: "TRIM_HORIZON"}},
		{"../events/testdata/sqs.json", &Mapping{EventSource: events.SourceSQS}},
		{"../events/testdata/sqs-fifo.json", &Mapping{EventSource: events.SourceSQSFIFO}},
		{"../events/testdata/msk.json", &Mapping{EventSource: events.SourceKafka, StartingPosition: "TRIM_HORIZON"}},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			recs, err := ReadRecordsFor(bytes.NewReader(readFile(t, tc.file)), tc.m.EventSource, nil)
			if err != nil {
				t.Fatal(err)
			}
			delivered := 0
			inv := InProcess(fn(func(_ context.Context, p []byte) ([]byte, error) {
				var ev struct {
					Records json.RawMessage
				}
				if err := json.Unmarshal(p, &ev); err != nil {
					return nil, err
				}
				var list []json.RawMessage
				var parts map[string][]json.RawMessage
				if json.Unmarshal(ev.Records, &list) != nil {
					if err := json.Unmarshal(ev.Records, &parts); err != nil {
						return nil, err
					}
				}
				delivered += len(list)
				for _, p := range parts {
					delivered += len(p)
				}
				return []byte(`{}`), nil
			}))
			rep, err := Run(context.Background(), Options{Mapping: tc.m, Records: recs, Invoker: inv})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Totals.Records != len(recs) || rep.Totals.Processed != len(recs) || delivered != len(recs) {
				t.Fatalf("%d records: totals %+v, %d delivered", len(recs), rep.Totals, delivered)
			}
		})
	}
}

func TestReadRecordsFileConversions(t *testing.T) {
	for _, tc := range []struct {
		name, event, want string
		notes             []string
	}{
		{"dynamodb keeps every digit and every type",
			`{"Records":[{"eventSource":"aws:dynamodb","eventName":"MODIFY","dynamodb":{"Keys":{"pk":{"S":"a"},"sk":{"N":"123456789012345678901234567890"}},
			  "NewImage":{"pk":{"S":"a"},"m":{"M":{"l":{"L":[{"N":"-1.5e3"},{"BOOL":true},{"NULL":true}]}}}},
			  "OldImage":{"pk":{"S":"a"},"tags":{"SS":["x","y"]},"ns":{"NS":["1","2"]},"b":{"B":"AAE="},"bs":{"BS":["AA=="]}}}}]}`,
			`{"dynamodb":{"Keys":{"pk":{"S":"a"},"sk":{"N":"123456789012345678901234567890"}},"NewImage":{"m":{"M":{"l":{"L":[{"N":"-1.5e3"},{"BOOL":true},{"NULL":true}]}}},"pk":{"S":"a"}},` +
				`"OldImage":{"b":{"B":"AAE="},"bs":{"BS":["AA=="]},"ns":{"NS":["1","2"]},"pk":{"S":"a"},"tags":{"SS":["x","y"]}}},"eventName":"MODIFY"}`,
			nil},
		{"sqs keeps custom attributes and message attributes, drops the runner's",
			`{"Records":[{"messageId":"m1","body":"{\"id\":\"a\"}","eventSource":"aws:sqs","eventSourceARN":"arn:aws:sqs:us-east-1:1:q",
			  "attributes":{"ApproximateReceiveCount":"7","SentTimestamp":"1","ApproximateFirstReceiveTimestamp":"2","AWSTraceHeader":"Root=1-abc"},
			  "messageAttributes":{"color":{"stringValue":"red","dataType":"String"}}}]}`,
			`{"body":"{\"id\":\"a\"}","attributes":{"AWSTraceHeader":"Root=1-abc"},"messageAttributes":{"color":{"dataType":"String","stringValue":"red"}}}`,
			nil},
		{"sqs fifo by queue name",
			`{"Records":[{"messageId":"m1","body":"x","eventSource":"aws:sqs","eventSourceARN":"arn:aws:sqs:us-east-1:1:q.fifo","attributes":{}}]}`,
			`{"body":"x"}`, nil},
		{"records without eventSource are told by their fields",
			`{"Records":[{"kinesis":{"partitionKey":"k","data":"eyJpZCI6MX0="}}]}`,
			`{"partitionKey":"k","data":"{\"id\":1}"}`, nil},
		{"kafka partitions in order, headers, no key, tombstone",
			`{"eventSource":"aws:kafka","records":{"t-10":[{"topic":"t","partition":10,"offset":5,"value":"Yg=="}],
			  "t-2":[{"topic":"t","partition":2,"offset":9,"value":"YQ==","headers":[{"h":[104,-1]},{"h":[105]}]}]}}`,
			`{"partition":2,"value":"a","headersBase64":[{"h":"aP8="},{"h":"aQ=="}]}
{"partition":10,"value":"b"}`, nil},
		{"kafka text headers keep their order and repeated names",
			`{"eventSource":"aws:kafka","records":{"t-0":[{"topic":"t","partition":0,"offset":0,"value":"YQ==","headers":[{"z":[49]},{"a":[50]},{"z":[51]}]}]}}`,
			`{"partition":0,"value":"a","headers":[{"z":"1"},{"a":"2"},{"z":"3"}]}`, nil},
		{"binary kafka key and value",
			`{"eventSource":"aws:kafka","records":{"t-0":[{"topic":"t","partition":0,"offset":0,"key":"AAE=","value":"AAAAAAEC"}]}}`,
			`{"partition":0,"keyBase64":"AAE=","valueBase64":"AAAAAAEC"}`, nil},
		{"binary kinesis data",
			`{"Records":[{"eventSource":"aws:kinesis","kinesis":{"partitionKey":"k","data":"H4sIAAAAAAAA"}}]}`,
			`{"partitionKey":"k","dataBase64":"H4sIAAAAAAAA"}`, nil},
		{"an empty event", `{"Records":[]}`, ``, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ReadRecordsFile(strings.NewReader(tc.event))
			if err != nil {
				t.Fatal(err)
			}
			if got := recordsJSON(t, f.Records); canon(t, got) != canon(t, tc.want) {
				t.Fatalf("records:\n%s\nwant:\n%s", got, tc.want)
			}
			if strings.Join(f.Notes, "\n") != strings.Join(tc.notes, "\n") {
				t.Fatalf("notes:\n%s\nwant:\n%s", strings.Join(f.Notes, "\n"), strings.Join(tc.notes, "\n"))
			}
		})
	}
}

func TestReadRecordsFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		shapes     bool     // the error lists the accepted shapes
		want       []string // substrings of the error
	}{
		{"an object that is neither", `{"foo":1}`, true, []string{`line 1`, `unknown field "foo"`}},
		{"a pretty-printed on-failure record", "{\n  \"requestContext\": {},\n  \"version\": \"1.0\"\n}\n", true,
			[]string{"object with keys requestContext, version", "one JSON object per line"}},
		{"a pretty-printed record", "{\n  \"body\": \"x\"\n}\n", true, []string{"keys body"}},
		{"not JSON", "hello\n", true, []string{"line 1: invalid character"}},
		{"an array of records", `[{"body":"x"}]`, true, []string{"element 1 of the JSON array"}},
		{"an empty array", `[]`, true, []string{"empty JSON array"}},
		{"text after an array", `[{"Records":[]}] x`, true, []string{"text follows"}},
		{"an S3 event", `{"Records":[{"eventSource":"aws:s3","s3":{}}]}`, false, []string{`Records[0]: eventSource "aws:s3" is not aws:kinesis`}},
		{"mixed sources in an event", `{"Records":[{"eventSource":"aws:sqs","body":"a"},{"eventSource":"aws:kinesis","kinesis":{}}]}`, false,
			[]string{"Records[1]: a Kinesis record in a SQS event"}},
		{"mixed sources across events", `{"Records":[{"eventSource":"aws:sqs","body":"a"}]}
{"Records":[{"eventSource":"aws:sqs","body":"b","attributes":{"MessageGroupId":"g"}}]}`, false,
			[]string{"event 2 is SQS FIFO but event 1 is SQS"}},
		{"a bad value after an event", `{"Records":[]} {"body":"x"}`, false, []string{"event 2 is not an object with a Records list"}},
		{"bad base64", `{"Records":[{"eventSource":"aws:kinesis","kinesis":{"partitionKey":"k","data":"!!"}}]}`, false, []string{"Records[0]:", "base64"}},
		{"bad kafka value", `{"eventSource":"aws:kafka","records":{"t-0":[{"partition":0,"value":"!"}]}}`, false, []string{`records["t-0"][0].value is not base64`}},
		{"a kafka eventSource that is not", `{"eventSource":"aws:sqs","records":{}}`, false, []string{`eventSource "aws:sqs" with a records map`}},
		{"a bad DynamoDB number", `{"Records":[{"eventSource":"aws:dynamodb","dynamodb":{"Keys":{"k":{"N":"x1"}}}}]}`, false, []string{`dynamodb.Keys.k: N "x1" is not a number`}},
		{"a bad line further on", "{\"body\":\"a\"}\n{\"bdy\":\"b\"}\n", false, []string{`records line 2: json: unknown field "bdy"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadRecordsFile(strings.NewReader(tc.data))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if got := errors.Is(err, ErrNotRecords) && strings.Contains(msg, RecordShapes); got != tc.shapes {
				t.Errorf("lists the shapes: %v, want %v", got, tc.shapes)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
		})
	}
}

func TestReadRecordsForChecksTheSource(t *testing.T) {
	sqs := readFile(t, "../events/testdata/sqs.json")
	_, err := ReadRecordsFor(bytes.NewReader(sqs), events.SourceKinesis, nil)
	if err == nil || !strings.Contains(err.Error(), "SQS events") || !strings.Contains(err.Error(), `EventSource is "kinesis"`) {
		t.Fatalf("SQS event on a Kinesis mapping: %v", err)
	}
	_, err = ReadRecordsFor(bytes.NewReader(readFile(t, "../events/testdata/sqs-fifo.json")), events.SourceSQS, nil)
	if err == nil || !strings.Contains(err.Error(), `SQS FIFO events but the mapping's EventSource is "sqs"`) {
		t.Fatalf("FIFO event on a standard mapping: %v", err)
	}
	// JSON lines do not say their source.
	if recs, err := ReadRecordsFor(strings.NewReader(`{"partitionKey":"k","data":1}`), events.SourceKinesis, nil); err != nil || len(recs) != 1 {
		t.Fatalf("JSON lines: %v %v", recs, err)
	}
	var notes bytes.Buffer
	ddb := readFile(t, "../events/testdata/dynamodb.json")
	var many []string
	for range 12 {
		many = append(many, string(ddb))
	}
	recs, err := ReadRecordsFor(strings.NewReader(strings.Join(many, "\n")), events.SourceDynamoDB, &notes)
	if err != nil || len(recs) != 48 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	lines := strings.Split(strings.TrimSpace(notes.String()), "\n")
	if len(lines) != 11 || !strings.HasPrefix(lines[0], "note: record 4: userIdentity Service/dynamodb.amazonaws.com (a TTL deletion) is not kept") ||
		lines[10] != "note: ... and 2 more notes like these" {
		t.Fatalf("notes:\n%s", notes.String())
	}
}

// TestEventRecords: an event's records become records lines, with a note
// on what a line cannot keep (the sample's TTL deletion's identity).
func TestEventRecords(t *testing.T) {
	ev, err := invocation.ParseEvent(readFile(t, "../events/testdata/dynamodb.json"))
	if err != nil {
		t.Fatal(err)
	}
	recs, notes, err := eventRecords(ev)
	if err != nil || len(recs) != 4 || len(notes) != 1 {
		t.Fatalf("%v: %d records, notes %v", err, len(recs), notes)
	}
}

// FuzzReadRecordsFile: any input is read or refused, never a panic; records
// read from events are valid records lines (they read back unchanged as
// JSON lines); an event that parses gets a verdict on any response, naming
// only its own items.
func FuzzReadRecordsFile(f *testing.F) {
	for _, p := range []string{"kinesis", "dynamodb", "sqs", "sqs-fifo", "msk", "self-managed-kafka", "kinesis-on-failure"} {
		b, err := os.ReadFile("../events/testdata/" + p + ".json")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, []byte(`{"batchItemFailures":[{"itemIdentifier":"1"}]}`))
	}
	f.Add([]byte(`{"partitionKey":"k","data":{"id":"1"}}`+"\n"+`{"partitionKey":"k","data":"x"}`), []byte(`{}`))
	f.Add([]byte(`[{"Records":[{"eventSource":"aws:sqs","body":"a","messageId":"m"}]}]`), []byte(`{"batchItemFailures":[{"itemIdentifier":"m"}]}`))
	f.Add([]byte(`{"eventSource":"aws:kafka","records":{"t-1":[{"offset":3,"key":"AA==","headers":[{"h":[-128,127]}]}]}}`),
		[]byte(`{"batchItemFailures":[{"itemIdentifier":{"partition":"t-1","offset":3}}]}`))
	f.Add([]byte(`{"Records":[{"eventSource":"aws:dynamodb","dynamodb":{"Keys":{"k":{"M":{"a":{"L":[{"NS":["1"]},{"B":"AA=="}]}}}}}}]}`), []byte(`null`))
	f.Fuzz(func(t *testing.T, data, body []byte) {
		rf, err := ReadRecordsFile(bytes.NewReader(data))
		if err != nil {
			return
		}
		if rf.Events > 0 {
			switch rf.Source {
			case events.SourceKinesis, events.SourceDynamoDB, events.SourceSQS, events.SourceSQSFIFO, events.SourceKafka:
			case "":
				if len(rf.Records) > 0 {
					t.Fatalf("%d records of no source", len(rf.Records))
				}
			default:
				t.Fatalf("source %q", rf.Source)
			}
			lines := recordsJSON(t, rf.Records)
			back, err := ReadRecords(strings.NewReader(lines))
			if err != nil {
				t.Fatalf("records do not read back: %v\n%s", err, lines)
			}
			if got := recordsJSON(t, back); got != lines {
				t.Fatalf("records changed:\n%s\n%s", lines, got)
			}
			samePayloads(t, data, back)
		}
		ev, err := invocation.ParseEvent(data)
		if err != nil {
			return
		}
		items := map[string]bool{}
		for _, id := range ev.Items() {
			items[id] = true
		}
		if ev.Source != events.SourceFirehose {
			// Every item of the event is one records line.
			recs, _, err := eventRecords(ev)
			if err != nil || len(recs) != len(ev.Items()) {
				t.Fatalf("%d items, %d records lines: %v", len(ev.Items()), len(recs), err)
			}
		}
		v := ev.Verdict(invocation.Response{Payload: body})
		for _, id := range v.Reported {
			if !items[id] {
				t.Fatalf("reported %q is not an item of the event", id)
			}
		}
		if (v.Outcome == invocation.OutcomePartial || v.Outcome == invocation.OutcomeProcessingFailed) != (len(v.Reported) > 0) {
			t.Fatalf("verdict %+v", v)
		}
	})
}

// samePayloads fails unless recs, read from the event file data, stand for
// the exact bytes of its Kinesis data and Kafka keys and values.
func samePayloads(t *testing.T, data []byte, recs []InputRecord) {
	t.Helper()
	evs, _, err := invocation.ParseEvents(data)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, ev := range evs {
		for _, r := range ev.Records {
			rec := recs[i]
			i++
			switch ev.Source {
			case events.SourceKinesis:
				var k awsevents.KinesisEventRecord
				if err := json.Unmarshal(r.JSON, &k); err != nil {
					t.Fatal(err)
				}
				_, got, _, err := kinesisData(rec)
				if err != nil || !bytes.Equal(got, k.Kinesis.Data) && !(len(got) == 0 && len(k.Kinesis.Data) == 0) {
					t.Fatalf("record %d: % x (%v), the event holds % x", i, got, err, k.Kinesis.Data)
				}
			case events.SourceKafka:
				var k awsevents.KafkaRecord
				if err := json.Unmarshal(r.JSON, &k); err != nil {
					t.Fatal(err)
				}
				for _, p := range []struct {
					name string
					raw  json.RawMessage
					b64  []byte
					ev   string
				}{{"key", rec.Key, rec.KeyBase64, k.Key}, {"value", rec.Value, rec.ValueBase64, k.Value}} {
					got, err := payloadBytes(p.name, p.raw, p.b64)
					want, _ := base64.StdEncoding.DecodeString(p.ev)
					if err != nil || !bytes.Equal(got, want) {
						t.Fatalf("record %d %s: % x (%v), the event holds % x", i, p.name, got, err, want)
					}
				}
			}
		}
	}
}
