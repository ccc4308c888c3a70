package localtest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sevents "github.com/sluicehq/sluice/events"
)

// sqsBody is a records line's SQS body of n bytes.
func sqsBody(fill byte, n int) json.RawMessage {
	b, _ := json.Marshal(strings.Repeat(string(fill), n))
	return b
}

// The emulated queue takes a message up to SQS's 1 MiB, body and message
// attributes together (the SendMessage API reference: "The maximum size is
// 1 MiB or 1,048,576 bytes"), and delivers it whole; one byte more is an
// error that names the record, as SendMessage would refuse it.
func TestRunSQSMessageUpToOneMiB(t *testing.T) {
	v := "7"
	attrs := map[string]MessageAttribute{"n": {DataType: "Number", StringValue: &v}}
	const max = 1_048_576
	bodyLen := max - len("n") - len("Number") - len(v)
	var got []string
	h := fn(func(_ context.Context, p []byte) ([]byte, error) {
		var ev struct{ Records []struct{ Body string } }
		if err := json.Unmarshal(p, &ev); err != nil {
			return nil, err
		}
		for _, r := range ev.Records {
			got = append(got, r.Body)
		}
		return nil, nil
	})
	for _, source := range []sevents.Source{sevents.SourceSQS, sevents.SourceSQSFIFO} {
		got = nil
		group := ""
		if source == sevents.SourceSQSFIFO {
			group = "g"
		}
		rec := InputRecord{Body: sqsBody('a', bodyLen), MessageAttributes: attrs, MessageGroupID: group}
		rep, _ := run(t, Options{Mapping: &Mapping{EventSource: source}, Records: []InputRecord{rec}, Invoker: InProcess(h)})
		if len(got) != 1 || len(got[0]) != bodyLen || rep.Totals.Records != 1 {
			t.Fatalf("%s: delivered %d bodies; want the 1 MiB message whole", source, len(got))
		}
		rec.Body = sqsBody('a', bodyLen+1)
		_, err := Run(context.Background(), Options{Mapping: &Mapping{EventSource: source}, Records: []InputRecord{{Body: sqsBody('b', 10), MessageGroupID: group}, rec},
			Invoker: InProcess(h)})
		if err == nil || !strings.Contains(err.Error(), "record 2") || !strings.Contains(err.Error(), "1048577 bytes") || !strings.Contains(err.Error(), "over SQS's limit of 1048576") {
			t.Errorf("%s: a message of 1 MiB + 1 byte: %v", source, err)
		}
	}
}

// Lambda invokes when a batch's payload reaches 6 MB, whatever BatchSize
// says: ten messages near 1 MiB make two invocations, each event within
// 6 MB, and every message is processed once.
func TestRunSQSBatchWithinSixMB(t *testing.T) {
	var recs []InputRecord
	for i := range 10 {
		recs = append(recs, InputRecord{Body: sqsBody(byte('a'+i), 1_000_000)})
	}
	var sizes []int
	seen := map[string]int{}
	h := fn(func(_ context.Context, p []byte) ([]byte, error) {
		sizes = append(sizes, len(p))
		var ev struct{ Records []struct{ MessageID string } }
		if err := json.Unmarshal(p, &ev); err != nil {
			return nil, err
		}
		for _, r := range ev.Records {
			seen[r.MessageID]++
		}
		return nil, nil
	})
	ten := 10
	rep, _ := run(t, Options{Mapping: &Mapping{EventSource: sevents.SourceSQS, BatchSize: &ten}, Records: recs, Invoker: InProcess(h)})
	if len(sizes) != 2 || len(seen) != 10 || rep.Totals.Invocations != 2 {
		t.Fatalf("%d invocations of %v bytes, %d messages seen; want two", len(sizes), sizes, len(seen))
	}
	for _, n := range sizes {
		if n > 6<<20 {
			t.Errorf("an event of %d bytes, over Lambda's 6 MB", n)
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("message %s delivered %d times", id, n)
		}
	}
}
