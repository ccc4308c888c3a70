package handlers

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/internal/eventscan"
)

// The eventSource values Lambda puts in the events of each source.
const (
	sourceKinesis          = "aws:kinesis"
	sourceDynamoDB         = "aws:dynamodb"
	sourceSQS              = "aws:sqs"
	sourceMSK              = "aws:kafka"
	sourceSelfManagedKafka = "SelfManagedKafka"
)

// SourceMismatchError is the function error of an invocation whose event
// does not come from the source the handler serves: the event source mapping
// feeds the function another source's events, or something that is not an
// event of its source at all. No record is run.
//
// The handler returns it unwrapped, so aws-lambda-go reports the invocation's
// errorType as "SourceMismatchError", and a runner can tell that the function
// cannot handle this source at all from an ordinary failure.
type SourceMismatchError struct {
	// Handler names the constructor of the handler, e.g. "handlers.MustKinesis".
	Handler string
	// Want lists the eventSource values the handler accepts: "aws:kinesis",
	// "aws:dynamodb", "aws:sqs", or "aws:kafka" and "SelfManagedKafka".
	Want []string
	// Got is the eventSource the event carries, or "" when it carries none.
	Got string
	// Array is the records array the handler reads: "Records", or "records"
	// for Kafka.
	Array string
	// Event names an event that is not a mapping's but another service's
	// invocation (an Amazon Data Firehose transformation), "" otherwise.
	Event string
}

func (e *SourceMismatchError) Error() string {
	want := strings.Join(e.Want, " or ")
	if e.Event != "" {
		return fmt.Sprintf("event is %s, but this handler expects %s records (%s): the function serves a Firehose stream "+
			"as its transformation; build it with handlers.NewFirehose", e.Event, want, e.Handler)
	}
	if e.Got == "" {
		return fmt.Sprintf("event has no %q array of %s records, which this handler expects (%s): "+
			"the event source mapping and the handler do not match", e.Array, want, e.Handler)
	}
	return fmt.Sprintf("event records come from %s but this handler expects %s (%s): "+
		"the event source mapping and the handler do not match", e.Got, want, e.Handler)
}

// expect is what a handler expects of an event.
type expect struct {
	handler string   // the constructor, for messages
	array   string   // the records array: "Records" or "records"
	sources []string // the eventSource values it accepts
}

// mismatch returns the error for an event whose records say they come from
// got.
func (x expect) mismatch(got string) *SourceMismatchError {
	return &SourceMismatchError{Handler: x.handler, Want: slices.Clone(x.sources), Got: got, Array: x.array}
}

// accepts reports whether a record's eventSource is one the handler serves;
// an empty eventSource (a hand-made event) is accepted.
func (x expect) accepts(src string) bool {
	return src == "" || slices.Contains(x.sources, src)
}

// check explains an event that the handler could not decode (err != nil)
// or that decoded without a records array (err == nil): when the event is a
// JSON object without the expected array, or its records name another
// source, it returns a *SourceMismatchError; otherwise err itself, which may
// be nil.
func (x expect) check(payload []byte, err error) error {
	var top map[string]json.RawMessage
	if json.Unmarshal(payload, &top) != nil {
		return err // not a JSON object: malformed, not another source
	}
	if eventscan.IsFirehoseEvent(top) {
		return x.firehose()
	}
	got := eventscan.EventSourceOf(top)
	_, has := top[x.array]
	switch {
	case !x.accepts(got):
		return x.mismatch(got)
	case !has:
		return x.mismatch("") // no records array of the expected name
	}
	return err // the array is there but something in it is wrong
}

// firehoseEvent names Firehose's transformation event in errors.
const firehoseEvent = `an Amazon Data Firehose transformation event ({"invocationId", "deliveryStreamArn", "records":[{"recordId", "data"}]})`

// firehose returns the error for a Firehose transformation event.
func (x expect) firehose() *SourceMismatchError {
	e := x.mismatch("")
	e.Event = firehoseEvent
	return e
}

// foreign checks an event whose first record carries no eventSource (every
// record Lambda's mappings deliver carries one): when it is a Firehose
// transformation event, which encoding/json's case-insensitive keys would
// decode as records without ids, it returns a *SourceMismatchError.
func (x expect) foreign(payload []byte) error {
	var top map[string]json.RawMessage
	if json.Unmarshal(payload, &top) != nil || !eventscan.IsFirehoseEvent(top) {
		return nil
	}
	return x.firehose()
}
