package handlers

import (
	"bytes"
	"testing"
)

// The unknown-field pairs: each source's benchmark event beside the same
// event with one member its reader does not know added to every record
// (as AWS adds fields to Lambda events over time), invoked alternately by
// benchPair. envelope-x is the unknown-field event's ns/record over the
// known one's; the guard is at most 1.25x.

// unknownField is what each record gains: a string member, the kind AWS
// adds.
const unknownField = `"sluiceFutureField":"a value AWS added later",`

// withUnknownField inserts unknownField at the start of every record,
// found by the member each record opens with.
func withUnknownField(b *testing.B, raw []byte, opener string) []byte {
	out := bytes.ReplaceAll(raw, []byte(`{`+opener), []byte(`{`+unknownField+opener))
	if bytes.Equal(out, raw) {
		b.Fatalf("no record opens with %s", opener)
	}
	return out
}

func BenchmarkUnknownFieldSQS1k(b *testing.B) {
	raw := sqsFixture(b, 1000)
	h := pairSQS(b, func(r SQSRecord[benchOrder]) { benchSink += r.Value.Amount })
	benchPair(b, 1000, h, raw, h, withUnknownField(b, raw, `"messageId"`))
}

func BenchmarkUnknownFieldKinesis10k(b *testing.B) {
	raw := kinesisFixture(b, 10000)
	h := pairKinesis(b, func(r KinesisRecord[benchOrder]) { benchSink += r.Value.Amount })
	benchPair(b, 10000, h, raw, h, withUnknownField(b, raw, `"awsRegion"`))
}
