package eventscan

import (
	"fmt"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/internal/jsonread"
)

// The SQS message, spelled once: every member Lambda writes, by
// aws-lambda-go's names; any other is skipped.
var (
	sqsMessageTable   *jsonread.Table[events.SQSMessage]
	sqsAttributeTable *jsonread.Table[events.SQSMessageAttribute]
	// The system attributes Lambda writes: their map keys cost nothing.
	sqsAttributeNames *jsonread.Names
	sqsOnce           sync.Once
)

// sqsTables builds the tables on first use: a function links the
// tables of the sources it reads, no others.
func sqsTables() {
	sqsOnce.Do(func() {
		sqsAttributeNames = jsonread.NewNames("ApproximateReceiveCount", "SentTimestamp", "SenderId",
			"ApproximateFirstReceiveTimestamp", "SequenceNumber", "MessageGroupId", "MessageDeduplicationId",
			"AWSTraceHeader", "DeadLetterQueueSourceArn")
		sqsMessageTable = jsonread.NewTable("an SQS message",
			jsonread.Str("messageId", func(m *events.SQSMessage) *string { return &m.MessageId }),
			jsonread.Str("receiptHandle", func(m *events.SQSMessage) *string { return &m.ReceiptHandle }),
			// The body's text is kept apart (DecodeSQSBodies): its string is
			// cut at the end from one string of all the bodies.
			jsonread.Field[events.SQSMessage]{Name: "body", Read: func(r *jsonread.Reader, _ *events.SQSMessage) error {
				return r.KeepText()
			}},
			jsonread.Field[events.SQSMessage]{Name: "attributes", Read: func(r *jsonread.Reader, m *events.SQSMessage) error {
				return jsonread.StringMap(r, &m.Attributes, 4, sqsAttributeNames)
			}},
			jsonread.Field[events.SQSMessage]{Name: "messageAttributes", Read: readSQSMessageAttributes},
			jsonread.Str("md5OfBody", func(m *events.SQSMessage) *string { return &m.Md5OfBody }),
			jsonread.Str("md5OfMessageAttributes", func(m *events.SQSMessage) *string { return &m.Md5OfMessageAttributes }),
			jsonread.Str("eventSource", func(m *events.SQSMessage) *string { return &m.EventSource }),
			jsonread.Str("eventSourceARN", func(m *events.SQSMessage) *string { return &m.EventSourceARN }),
			jsonread.Str("awsRegion", func(m *events.SQSMessage) *string { return &m.AWSRegion }),
		)
		sqsAttributeTable = jsonread.NewTable("an SQS message attribute",
			jsonread.Field[events.SQSMessageAttribute]{Name: "stringValue", Read: func(r *jsonread.Reader, a *events.SQSMessageAttribute) error {
				if null, err := r.Null(); null || err != nil {
					a.StringValue = nil
					return err
				}
				var s string
				if a.StringValue != nil {
					s = *a.StringValue
				}
				if err := r.StringInto(&s); err != nil {
					return err
				}
				a.StringValue = &s
				return nil
			}},
			jsonread.Field[events.SQSMessageAttribute]{Name: "binaryValue", Read: func(r *jsonread.Reader, a *events.SQSMessageAttribute) error {
				return r.Base64Into(&a.BinaryValue, nil)
			}},
			jsonread.Field[events.SQSMessageAttribute]{Name: "stringListValues", Read: func(r *jsonread.Reader, a *events.SQSMessageAttribute) error {
				return jsonread.StringSlice(r, &a.StringListValues)
			}},
			jsonread.Field[events.SQSMessageAttribute]{Name: "binaryListValues", Read: func(r *jsonread.Reader, a *events.SQSMessageAttribute) error {
				if null, err := r.Null(); null || err != nil {
					a.BinaryListValues = nil
					return err
				}
				out := a.BinaryListValues[:0]
				if out == nil && r.Peek() == '[' {
					out = [][]byte{}
				}
				err := r.Array("an array of base64 strings", func(i int) error {
					var b []byte
					if i < len(a.BinaryListValues) {
						b = a.BinaryListValues[i]
					}
					if err := r.Base64Into(&b, nil); err != nil {
						return err
					}
					out = append(out, b)
					return nil
				})
				if out != nil {
					a.BinaryListValues = out
				}
				return err
			}},
			jsonread.Str("dataType", func(a *events.SQSMessageAttribute) *string { return &a.DataType }),
		)
	})
}

// readSQSMessageAttributes reads the messageAttributes map as
// encoding/json fills a map of structs, but for one thing: {} leaves a nil
// map nil (a map costs an allocation per message; reading it is the same,
// and events.MarshalSQSMessage writes it back as {}).
func readSQSMessageAttributes(r *jsonread.Reader, m *events.SQSMessage) error {
	if null, err := r.Null(); null || err != nil {
		m.MessageAttributes = nil
		return err
	}
	return r.Object("an object of message attributes", func(key []byte) error {
		var a events.SQSMessageAttribute
		if null, err := r.Null(); err != nil {
			return err
		} else if !null {
			if err := sqsAttributeTable.Read(r, &a); err != nil {
				return err
			}
		}
		if m.MessageAttributes == nil {
			m.MessageAttributes = make(map[string]events.SQSMessageAttribute, 1)
		}
		m.MessageAttributes[r.Gather(key)] = a
		return nil
	})
}

// DecodeSQS decodes an SQS event into its messages. A message with a value
// of the wrong type fails alone (errs has an entry for it, nil when none
// did) if it carries its messageId to be reported by; without one the
// whole event fails. into is reused as DecodeKinesis reuses it. The result
// shares no memory with payload: its strings, the bodies' too, are
// written one after another into one Builder and cut from it
// (jsonread.Gathered), about two thirds of the event's bytes, not a copy
// of all of them.
func DecodeSQS(payload []byte, into []events.SQSMessage) (recs []events.SQSMessage, errs []error, err error) {
	recs, _, errs, err = DecodeSQSBodies(payload, into, nil)
	return recs, errs, err
}

// sqsSpan is where a message's body lies in the kept text.
type sqsSpan struct {
	start, end int
	ok         bool
}

// DecodeSQSBodies is DecodeSQS that also gives each message's body as
// bytes: bodies[i] holds the text of recs[i].Body (nil when the message
// has no body), in bodies' room when it has enough (a slice of length 0,
// as into). The bodies' texts lie in one buffer made for this event and
// their strings are cut from one string of it, with the message's other
// strings: a batch costs two allocations for its bodies, not two per
// message, and the bytes are shared with no string (each body's slice
// ends where its text ends).
func DecodeSQSBodies(payload []byte, into []events.SQSMessage, bodies [][]byte) (recs []events.SQSMessage, _ [][]byte, errs []error, err error) {
	sqsTables()
	r := jsonread.Gathered(payload)
	// Room for the first message's strings; the others' is made from it.
	r.GrowStrings(min(len(payload), 2048))
	var bad error
	var spans []sqsSpan
	recs, err = readRecords(r, "Records", into, func(m *events.SQSMessage, i int) error {
		start := r.Offset()
		r.TakeKept()
		if err := sqsMessageTable.Read(r, m); err != nil {
			return err
		}
		if s, e, ok := r.TakeKept(); ok {
			if i == 0 && len(spans) == 0 {
				// The messages of one event are alike: make room for all
				// the bodies from the first, as readRecords sizes recs.
				n := max(len(payload)/max(r.Offset()-start, 1), 1)
				spans = make([]sqsSpan, 0, n+n/16)
				r.GrowKept((e - s) * (n + n/16))
				// Its strings and, at the end, its body again (as a
				// string) for each message to come.
				r.GrowStrings((r.GatheredLen() + e - s) * (n - 1 + n/16))
			}
			spans = growTo(spans, i)
			spans[i] = sqsSpan{s, e, true}
		}
		if merr := r.Saved(); merr != nil {
			if m.MessageId == "" && bad == nil {
				bad = fmt.Errorf("sluice: sqs: record %d is malformed and has no identifier to report it by: %w", i, merr)
			}
			errs = growTo(errs, i)
			errs[i] = fmt.Errorf("malformed sqs record: %w", merr)
		} else if i < len(errs) {
			errs[i] = nil
		}
		return nil
	})
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sluice: sqs: the event is not a sqs event: %w", jsonread.SyntaxErr(payload, err))
	}
	if err := r.Saved(); err != nil {
		return nil, nil, nil, fmt.Errorf("sluice: sqs: the event is not a sqs event: %w", err)
	}
	if bad != nil {
		return nil, nil, nil, bad
	}
	if errs != nil {
		errs = fit(errs, len(recs))
	}
	if recs != nil {
		bodies = fit(bodies[:0], len(recs))
	}
	kept := r.Kept()
	text := r.Gather(kept)
	for i, sp := range spans[:min(len(spans), len(recs))] {
		if sp.ok {
			recs[i].Body = text[sp.start:sp.end]
			bodies[i] = kept[sp.start:sp.end:sp.end]
		}
	}
	return recs, bodies, errs, nil
}
