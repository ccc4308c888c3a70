package invocation

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/events"
)

// The event is Firehose's transformation input
// (https://docs.aws.amazon.com/lambda/latest/dg/services-kinesisfirehose.html);
// the responses follow, or break, "Required parameters for data
// transformation"
// (https://docs.aws.amazon.com/firehose/latest/dev/data-transformation-status-model.html).
func TestFirehoseVerdict(t *testing.T) {
	ev, err := ParseEvent([]byte(`{"invocationId":"inv","deliveryStreamArn":"arn:aws:firehose:us-east-1:123456789012:deliverystream/s","region":"us-east-1",
		"records":[{"recordId":"r1","approximateArrivalTimestamp":1495072949453,"data":"eyJhIjoxfQ=="},{"recordId":"r2","data":"SGVsbG8="}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Source != events.SourceFirehose || !slices.Equal(ev.Items(), []string{"r1", "r2"}) || !strings.Contains(string(ev.Records[0].JSON), `"data":"eyJhIjoxfQ=="`) || !strings.HasPrefix(string(ev.Records[1].JSON), `{"recordId":"r2"`) {
		t.Fatalf("%+v", ev)
	}
	for _, tc := range []struct {
		resp     string
		outcome  string
		reported []string
		reason   string
	}{
		{`{"records":[{"recordId":"r1","result":"Ok","data":""},{"recordId":"r2","result":"Dropped","data":"SGVsbG8="}]}`, OutcomeSuccess, nil, ""},
		{`{"records":[{"recordId":"r2","result":"ProcessingFailed","data":"SGVsbG8="},{"recordId":"r1","result":"Ok","data":"eA=="}]}`, OutcomeProcessingFailed, []string{"r2"}, ""},
		{`{"records":[{"recordId":"r1","result":"Ok","data":""}]}`, OutcomeBatchFailure, nil, "does not answer 1 records: r2"},
		{`{"records":[{"recordId":"r1","result":"OK","data":""},{"recordId":"r2","result":"Ok","data":""}]}`, OutcomeBatchFailure, nil, `result "OK"`},
		{`{"records":[{"recordId":"r1","result":"Ok"},{"recordId":"r2","result":"Ok","data":""}]}`, OutcomeBatchFailure, nil, "has no data"},
		{`{"records":[{"recordId":"r1","result":"Ok","data":"%"},{"recordId":"r2","result":"Ok","data":""}]}`, OutcomeBatchFailure, nil, "not base64"},
		{`{"records":[{"recordId":"r3","result":"Ok","data":""}]}`, OutcomeBatchFailure, nil, "not in the event"},
		{`{"records":[{"recordId":"r1","result":"Ok","data":""},{"recordId":"r1","result":"Ok","data":""}]}`, OutcomeBatchFailure, nil, "twice"},
		{`{"batchItemFailures":[]}`, OutcomeBatchFailure, nil, "does not answer 2 records"},
		{`null`, OutcomeBatchFailure, nil, "does not answer"},
	} {
		v := ev.Verdict(Response{Payload: []byte(tc.resp)})
		if v.Outcome != tc.outcome || !slices.Equal(v.Reported, tc.reported) || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("%s: %+v, want %s %v %q", tc.resp, v, tc.outcome, tc.reported, tc.reason)
		}
		// ProcessingFailed records are not a partial batch response:
		// Firehose sends them to its error output and never retries them.
		if s := v.String(); tc.outcome == OutcomeProcessingFailed && (strings.Contains(s, "partial") || !strings.Contains(s, "without retrying")) {
			t.Errorf("%s: %q", tc.resp, s)
		}
	}
	for _, bad := range []string{`{"records":[{"data":"eA=="}]}`, `{"records":[{"recordId":"r","data":"%%"}]}`, `{"records":[1]}`} {
		if _, err := ParseEvent([]byte(bad)); err == nil || !strings.Contains(err.Error(), "Firehose") {
			t.Errorf("ParseEvent(%s): %v", bad, err)
		}
	}
}
