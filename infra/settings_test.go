package infra

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	stream := mappingSettings{source: sourceKinesis, timeout: 30, batchSize: 100, retries: 5, maxAge: 21600, parallelization: 1,
		maxAttempts: 3, startingPosition: "TRIM_HORIZON"}
	queue := mappingSettings{source: sourceSQS, timeout: 30, batchSize: 10, maxAttempts: 3, maxReceive: 5, visibility: 180}
	fifo := queue
	fifo.source = sourceSQSFIFO
	kafka := stream
	kafka.source = sourceKafka
	with := func(s mappingSettings, f func(*mappingSettings)) mappingSettings { f(&s); return s }
	cases := []struct {
		name string
		s    mappingSettings
		want string // "" valid
	}{
		{"stream defaults", stream, ""},
		{"queue defaults", queue, ""},
		{"fifo defaults", fifo, ""},
		{"kafka defaults", kafka, ""},
		{"record age -1", with(stream, func(s *mappingSettings) { s.maxAge = -1 }), ""},
		{"record age 60", with(stream, func(s *mappingSettings) { s.maxAge = 60 }), ""},
		{"record age 59", with(stream, func(s *mappingSettings) { s.maxAge = 59 }), "MaximumRecordAgeInSeconds 59"},
		{"record age 1", with(stream, func(s *mappingSettings) { s.maxAge = 1 }), "MaximumRecordAgeInSeconds 1"},
		{"record age 0", with(stream, func(s *mappingSettings) { s.maxAge = 0 }), "MaximumRecordAgeInSeconds 0"},
		{"record age 604801", with(stream, func(s *mappingSettings) { s.maxAge = 604801 }), "MaximumRecordAgeInSeconds 604801"},
		{"retries -1", with(stream, func(s *mappingSettings) { s.retries = -1 }), ""},
		{"retries -2", with(stream, func(s *mappingSettings) { s.retries = -2 }), "MaximumRetryAttempts -2 is outside -1..10000"},
		{"attempts over retries", with(stream, func(s *mappingSettings) { s.retries = 1; s.maxAttempts = 3 }), "MaxAttempts 3 exceeds MaximumRetryAttempts 1 + 1"},
		{"attempts at retries+1", with(stream, func(s *mappingSettings) { s.retries = 2; s.maxAttempts = 3 }), ""},
		{"attempts 0", with(stream, func(s *mappingSettings) { s.maxAttempts = 0 }), "MaxAttempts 0"},
		{"batch 10001", with(stream, func(s *mappingSettings) { s.batchSize = 10001 }), "BatchSize 10001 is outside 1..10000"},
		{"parallel 11", with(stream, func(s *mappingSettings) { s.parallelization = 11 }), "ParallelizationFactor 11"},
		{"window 301", with(stream, func(s *mappingSettings) { s.window = 301 }), "MaximumBatchingWindowInSeconds 301"},
		{"timeout 901", with(stream, func(s *mappingSettings) { s.timeout = 901 }), "Function.Timeout (seconds) 901"},
		{"at timestamp kinesis", with(stream, func(s *mappingSettings) { s.startingPosition = "AT_TIMESTAMP" }), ""},
		{"at timestamp dynamodb", with(stream, func(s *mappingSettings) { s.source = sourceDynamoDB; s.startingPosition = "AT_TIMESTAMP" }),
			`StartingPosition "AT_TIMESTAMP" is not valid for dynamodb`},
		{"at timestamp kafka", with(kafka, func(s *mappingSettings) { s.startingPosition = "AT_TIMESTAMP" }), `StartingPosition "AT_TIMESTAMP" is not valid for kafka`},
		{"kafka on-demand ignores retries", with(kafka, func(s *mappingSettings) { s.onDemand = true; s.maxAge = 5 }), ""},
		{"fifo window 1", with(fifo, func(s *mappingSettings) { s.window = 1 }), "no batching window for FIFO"},
		{"fifo window 0", with(fifo, func(s *mappingSettings) { s.window = 0 }), ""},
		{"fifo batch 11", with(fifo, func(s *mappingSettings) { s.batchSize = 11 }), "BatchSize 11: a FIFO queue's mapping takes 1..10"},
		{"standard batch 11 no window", with(queue, func(s *mappingSettings) { s.batchSize = 11 }), "BatchSize 11 needs MaximumBatchingWindowInSeconds of at least 1"},
		{"standard batch 11 window 1", with(queue, func(s *mappingSettings) { s.batchSize = 11; s.window = 1 }), ""},
		{"attempts over receive count", with(queue, func(s *mappingSettings) { s.maxAttempts = 6 }), "MaxAttempts 6 exceeds MaxReceiveCount 5"},
		{"receive count 0", with(queue, func(s *mappingSettings) { s.maxReceive = 0; s.maxAttempts = 0 }), "MaxReceiveCount 0 is outside 1..1000"},
		{"visibility = timeout", with(queue, func(s *mappingSettings) { s.visibility = 30 }), ""},
		{"visibility < timeout + window", with(queue, func(s *mappingSettings) { s.visibility = 30; s.window = 1 }), "VisibilityTimeoutInSeconds 30 is below"},
		{"visibility 43201", with(queue, func(s *mappingSettings) { s.visibility = 43201 }), "VisibilityTimeoutInSeconds 43201 is outside"},
		{"concurrency 1", with(queue, func(s *mappingSettings) { s.maxConcurrency = 1 }), "MaximumConcurrency 1 is outside 2..1000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := strings.Join(c.s.validate(), "\n")
			switch {
			case c.want == "" && p != "":
				t.Fatalf("problems:\n%s", p)
			case c.want != "" && !strings.Contains(p, c.want):
				t.Fatalf("problems:\n%s\nwant one containing %q", p, c.want)
			}
		})
	}
}

func TestMinVisibility(t *testing.T) {
	for _, c := range []struct{ timeout, window, want int }{{30, 0, 180}, {20, 5, 125}, {900, 300, 5700}} {
		if got := minVisibility(c.timeout, c.window); got != c.want {
			t.Errorf("minVisibility(%d, %d) = %d, want %d", c.timeout, c.window, got, c.want)
		}
	}
}

func TestWhole(t *testing.T) {
	var p []string
	half := 2.5
	if got := whole("BatchSize", &half, 7, &p); got != 7 || len(p) != 1 || !strings.Contains(p[0], "BatchSize 2.5 is not a whole number") {
		t.Fatalf("whole(2.5) = %d, %v", got, p)
	}
	if got := whole("BatchSize", nil, 7, &p); got != 7 {
		t.Fatalf("whole(nil) = %d", got)
	}
}
