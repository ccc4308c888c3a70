package invocation

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/events"
)

// FuzzParseEvent: ParseEvent and ParseEvents never panic; an event they
// accept with records has a known source, and each of its records is one valid JSON
// value taken from the payload, with as many batch item ids as records.
func FuzzParseEvent(f *testing.F) {
	files, _ := filepath.Glob("../localtest/testdata/events/*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"Records":[{"eventSource":"aws:sqs","messageId":"m1","body":"x"}]}`))
	f.Add([]byte(`{"eventSource":"aws:kafka","records":{"t-0":[{"topic":"t","partition":0,"offset":1,"value":"eA=="}]}}`))
	f.Add([]byte(`{"invocationId":"i","deliveryStreamArn":"arn","records":[{"recordId":"r1","data":"eA=="}]}`))
	f.Add([]byte(`[{"Records":[]},{"Records":[{"kinesis":{"data":""}}]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _ = ParseEvents(data)
		ev, err := ParseEvent(data)
		if err != nil {
			return
		}
		if len(ev.Records) > 0 && !slices.Contains(events.Sources(), ev.Source) { // an empty Records list names no source
			t.Fatalf("accepted an event of source %q", ev.Source)
		}
		for i, r := range ev.Records {
			if !json.Valid(r.JSON) {
				t.Fatalf("record %d is not valid JSON: %q", i, r.JSON)
			}
		}
		if ids := ev.Items(); len(ids) != len(ev.Records) {
			t.Fatalf("%d item ids for %d records", len(ids), len(ev.Records))
		}
	})
}
