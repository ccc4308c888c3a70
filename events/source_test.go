package events_test

import (
	"testing"

	"github.com/sluicehq/sluice/events"
)

func TestSources(t *testing.T) {
	tests := []struct {
		s             events.Source
		stream, queue bool
	}{
		{events.SourceKinesis, true, false},
		{events.SourceDynamoDB, true, false},
		{events.SourceSQS, false, true},
		{events.SourceSQSFIFO, false, true},
		{events.SourceKafka, false, false},
		{events.SourceFirehose, false, false},
	}
	all := events.Sources()
	if len(all) != len(tests) {
		t.Fatalf("Sources() = %v, want the %d sources", all, len(tests))
	}
	for i, tt := range tests {
		if all[i] != tt.s {
			t.Errorf("Sources()[%d] = %q, want %q", i, all[i], tt.s)
		}
		if tt.s.Stream() != tt.stream || tt.s.Queue() != tt.queue {
			t.Errorf("%s: Stream() %v Queue() %v, want %v %v", tt.s, tt.s.Stream(), tt.s.Queue(), tt.stream, tt.queue)
		}
	}
}
