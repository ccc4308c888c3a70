// Package window is the tumbling window of a stream mapping
// (TumblingWindowInSeconds) as the localtest runner emulates it: where a
// window starts, the fields Lambda adds to the event, and the state the
// function answers with.
package window

import (
	"encoding/json"
	"time"
)

// Start is the start of the tumbling window holding t: windows are
// aligned to the Unix epoch, as Lambda aligns them to arrival times.
// (time.Time.Truncate aligns to year 1 instead, which differs for a window
// length that does not divide a day, such as 7 s.)
func Start(t time.Time, win time.Duration) time.Time {
	since := t.Sub(time.Unix(0, 0))
	return time.Unix(0, 0).Add(since - since%win).In(t.Location())
}

// Fields is what Lambda adds to a stream event of a tumbling window.
type Fields struct {
	Start     time.Time       // the window's start
	Length    time.Duration   // the window's length
	State     json.RawMessage // the state the last invocation answered with; nil for none
	Shard     string          // shardId
	ARN       string          // eventSourceARN
	Final     bool            // isFinalInvokeForWindow
	TermEarly bool            // isWindowTerminatedEarly
}

// Event adds the tumbling window fields to a stream event (a JSON object).
func Event(payload []byte, f Fields) []byte {
	state := f.State
	if len(state) == 0 {
		state = json.RawMessage("{}")
	}
	extra, _ := json.Marshal(map[string]any{
		"window":                  map[string]string{"start": f.Start.UTC().Format(time.RFC3339), "end": f.Start.Add(f.Length).UTC().Format(time.RFC3339)},
		"state":                   state,
		"shardId":                 f.Shard,
		"eventSourceARN":          f.ARN,
		"isFinalInvokeForWindow":  f.Final,
		"isWindowTerminatedEarly": f.TermEarly,
	})
	out := append([]byte(nil), payload[:len(payload)-1]...)
	out = append(out, ',')
	return append(out, extra[1:]...)
}

// State takes the state of a tumbling window response; false when there
// is none, or it is not an object of strings (the invocation then counts
// as failed).
func State(body []byte) (json.RawMessage, bool) {
	var resp struct {
		State json.RawMessage `json:"state"`
	}
	if json.Unmarshal(body, &resp) != nil || len(resp.State) == 0 || string(resp.State) == "null" {
		return nil, false
	}
	var m map[string]string
	if json.Unmarshal(resp.State, &m) != nil {
		return nil, false
	}
	return resp.State, true
}

// Limits are a stream mapping's retry policy as it applies to the final
// invocation of a window. AWS: "Tumbling windows fully support the
// existing retry policies maxRetryAttempts and maxRecordAge"
// (services-kinesis-windows, services-ddb-windows).
type Limits struct {
	// MaxRetries is MaximumRetryAttempts; -1 retries without limit.
	MaxRetries int
	// MaxAge is MaximumRecordAgeInSeconds; negative for no limit.
	MaxAge time.Duration
	// UntilSuccess retries the final invocation until it succeeds,
	// whatever the limits say: the literal reading of "If invocation is
	// unsuccessful, your Lambda function suspends further processing until
	// a successful invocation" on the same pages (a runner option).
	UntilSuccess bool
}

// Expired reports whether a window's final invocation is no longer made
// at now because even the window's newest record, which arrived at
// newest, is older than MaxAge: the final invocation carries no records,
// so its age is that of the records whose result it writes.
func Expired(l Limits, newest, now time.Time) bool {
	return !l.UntilSuccess && l.MaxAge >= 0 && newest.Before(now.Add(-l.MaxAge))
}

// Exhausted reports whether a final invocation that has now failed
// retries+1 times (retries of them retries) is given up.
func Exhausted(l Limits, retries int) bool {
	return !l.UntilSuccess && l.MaxRetries >= 0 && retries > l.MaxRetries
}
