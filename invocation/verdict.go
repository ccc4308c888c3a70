package invocation

import (
	"encoding/json"
	"fmt"
	"strings"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/batchresponse"
)

// Outcomes of a Verdict.
const (
	OutcomeSuccess       = "success"
	OutcomePartial       = "partial"
	OutcomeBatchFailure  = "batch failure"
	OutcomeFunctionError = "function error"
	// OutcomeProcessingFailed is a Firehose transformation's answer that
	// gives some records the result ProcessingFailed: Firehose counts them
	// as unsuccessfully processed and delivers them to the destination's
	// error output (the S3 bucket's processing-failed folder); it does not
	// send them to the function again, so this is not a partial batch
	// response ("Handle failure in data transformation", Amazon Data
	// Firehose Developer Guide).
	OutcomeProcessingFailed = "processing failed"
)

// Verdict is how an event source mapping with ReportBatchItemFailures reads
// a function's answer to an event.
type Verdict struct {
	// Outcome is OutcomeSuccess, OutcomePartial (some items reported
	// failed), OutcomeBatchFailure (the response is not a valid partial
	// batch response: the whole batch fails), OutcomeFunctionError, or,
	// for a Firehose transformation, OutcomeProcessingFailed.
	Outcome string
	// Reported are the identifiers of the items reported failed (for
	// Firehose, answered ProcessingFailed), in the event's order (see
	// Event.Items).
	Reported []string
	// Reason says why the batch failed: the error type and message of a
	// function error, or what is wrong with the response.
	Reason string
}

// Failed reports whether Lambda would retry the whole batch.
func (v Verdict) Failed() bool {
	return v.Outcome == OutcomeBatchFailure || v.Outcome == OutcomeFunctionError
}

func (v Verdict) String() string {
	switch v.Outcome {
	case OutcomePartial:
		noun := "items"
		if len(v.Reported) == 1 {
			noun = "item"
		}
		return fmt.Sprintf("partial: %d %s reported: %s", len(v.Reported), noun, strings.Join(v.Reported, ", "))
	case OutcomeProcessingFailed:
		noun := "records"
		if len(v.Reported) == 1 {
			noun = "record"
		}
		return fmt.Sprintf("processing failed: %d %s answered ProcessingFailed, which Firehose delivers to the destination's error output "+
			"(processing-failed) without retrying: %s", len(v.Reported), noun, strings.Join(v.Reported, ", "))
	case OutcomeSuccess:
		return OutcomeSuccess
	}
	return v.Outcome + ": " + v.Reason
}

// Verdict reads resp as Lambda reads the answer to this event with
// ReportBatchItemFailures on. (Without it a batchItemFailures list is
// ignored and every answer without a function error is a success.) A
// Firehose event's answer is read as Firehose reads a transformation's.
func (e *Event) Verdict(resp Response) Verdict {
	if resp.Failed() {
		return Verdict{Outcome: OutcomeFunctionError, Reason: functionErrorText(resp)}
	}
	ids := e.Items()
	var v batchresponse.Reading
	switch e.Source {
	case sevents.SourceFirehose:
		v = batchresponse.Firehose(resp.Payload, ids)
	case sevents.SourceKafka:
		refs := make([]batchresponse.KafkaRef, len(e.Records))
		for i, r := range e.Records {
			refs[i] = batchresponse.KafkaRef{Partition: r.Partition, Offset: r.Offset}
		}
		v = batchresponse.Kafka(resp.Payload, refs)
	case sevents.SourceKinesis, sevents.SourceDynamoDB:
		v = batchresponse.Stream(resp.Payload, ids)
	default:
		v = batchresponse.Strings(resp.Payload, ids)
	}
	switch v.Kind {
	case batchresponse.Partial:
		out := Verdict{Outcome: OutcomePartial}
		if e.Source == sevents.SourceFirehose {
			out.Outcome = OutcomeProcessingFailed
		}
		for _, i := range v.Reported {
			out.Reported = append(out.Reported, ids[i])
		}
		return out
	case batchresponse.Whole:
		return Verdict{Outcome: OutcomeBatchFailure, Reason: v.Reason}
	}
	return Verdict{Outcome: OutcomeSuccess}
}

// functionErrorText is "errorType: errorMessage" of a function error.
func functionErrorText(resp Response) string {
	var doc struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}
	_ = json.Unmarshal(resp.Payload, &doc)
	typ := or(doc.Type, resp.ErrorType)
	msg := doc.Message
	if msg == "" {
		msg = strings.TrimSpace(string(resp.Payload))
	}
	switch {
	case typ == "":
		return or(msg, resp.FunctionError)
	case msg == "":
		return typ
	}
	return typ + ": " + msg
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// AnswerVerdict reads resp to a payload that is not an event of a known
// source (sluice invoke sends any file as it is): a function error fails;
// an answer that names batch item failures reports them, as their JSON
// text when not strings, unchecked since there is no event to check them
// against; anything else is a success.
func AnswerVerdict(resp Response) Verdict {
	if resp.Failed() {
		return Verdict{Outcome: OutcomeFunctionError, Reason: functionErrorText(resp)}
	}
	var doc struct {
		Failures []struct {
			ID json.RawMessage `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	if json.Unmarshal(resp.Payload, &doc) != nil || len(doc.Failures) == 0 {
		return Verdict{Outcome: OutcomeSuccess}
	}
	out := Verdict{Outcome: OutcomePartial}
	for _, f := range doc.Failures {
		var id string
		if json.Unmarshal(f.ID, &id) != nil {
			id = string(f.ID)
		}
		out.Reported = append(out.Reported, id)
	}
	return out
}
