package handlers

import (
	"context"
	"testing"

	sevents "github.com/sluicehq/sluice/events"
)

// scribbler's UnmarshalJSON writes over the bytes it is given, as a
// careless type may (the contract lets it keep them, not change them).
type scribbler struct{ seen string }

func (s *scribbler) UnmarshalJSON(b []byte) error {
	s.seen = string(b)
	for i := range b {
		b[i] = 'X'
	}
	return nil
}

// TestUnmarshalJSONGetsBytesOfItsOwn: a type's UnmarshalJSON receives bytes
// of its own, never the memory of a string the record keeps: scribbling
// over them leaves the SQS body the function reads as delivered. (Before,
// the default codec handed it the body string's own memory.)
func TestUnmarshalJSONGetsBytesOfItsOwn(t *testing.T) {
	raw, err := sevents.MarshalEvent((&sevents.SQSBuilder{}).Add(`{"id":"1"}`).Event())
	if err != nil {
		t.Fatal(err)
	}
	var body, seen string
	h := must(NewSQS(func(_ context.Context, r SQSRecord[scribbler]) error {
		body, seen = r.Body(), r.Value.seen
		return nil
	}, quiet()...))
	if _, err := h.Invoke(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	if seen != `{"id":"1"}` || body != `{"id":"1"}` {
		t.Fatalf("UnmarshalJSON saw %q; the body is now %q", seen, body)
	}
}
