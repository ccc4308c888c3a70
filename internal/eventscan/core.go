package eventscan

import (
	"bytes"
	"slices"

	"github.com/sluicehq/sluice/internal/jsonread"
)

// Bytes hands out byte slices from large chunks, so the base64 payloads of
// a batch (Kinesis data, Kafka keys and values) cost a few allocations
// rather than one per record. A chunk is never reused: each slice handed
// out is its record's own (its capacity ends where it ends). The zero
// value is ready to use; a Bytes is not safe for concurrent use.
type Bytes struct {
	buf []byte
}

// Alloc returns a slice of n bytes.
func (a *Bytes) Alloc(n int) []byte {
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]byte, 0, max(n, 64<<10))
	}
	l := len(a.buf)
	a.buf = a.buf[:l+n]
	return a.buf[l : l+n : l+n]
}

// isKey reports whether a member's key names name, as encoding/json
// matches the key of a struct's only field: exactly or case-insensitively.
func isKey(key []byte, name string) bool {
	return string(key) == name || bytes.EqualFold(key, []byte(name))
}

// readRecords reads an event of the shape {"<name>":[...]}, other members
// skipped, each element by rec (a null element is left zero), into recs:
// into when it has room (a slice of length 0 whose elements are zero up to
// its capacity), else a slice sized from the first record. recs is nil when
// the event has no such array. A repeated array decodes into the elements
// already read, as encoding/json does. A *jsonread.TypeError of the event's
// own shape (not an object, the records not an array) is left in r.Saved;
// rec takes those of its record.
func readRecords[E any](r *jsonread.Reader, name string, into []E, rec func(e *E, i int) error) (recs []E, err error) {
	if null, err := r.Null(); null || err != nil {
		return nil, err
	}
	err = r.Object("an event object", func(key []byte) error {
		if !isKey(key, name) {
			return r.Skip()
		}
		if null, err := r.Null(); null || err != nil {
			clear(recs)
			recs = nil
			return err
		}
		if r.Peek() == '[' && recs == nil {
			if recs = into[:0]; recs == nil {
				recs = make([]E, 0, 1)
			}
		}
		n, start := 0, 0
		err := r.Array("an array of records", func(i int) error {
			switch {
			case i < len(recs):
			case len(recs) < cap(recs):
				recs = recs[:i+1]
			default:
				var zero E
				recs = append(recs, zero)
			}
			if i == 0 {
				start = r.Offset()
			}
			if null, err := r.Null(); err != nil || null {
				n = i + 1
				return err
			}
			if err := rec(&recs[i], i); err != nil {
				return err
			}
			n = i + 1
			if i == 0 && r.Offset() > start && cap(recs) == 1 {
				// The records of one source are alike: size the slice from
				// the first, a few percent over, rather than grow it by
				// copying 10,000 records.
				est := len(r.Bytes()) / (r.Offset() - start)
				recs = slices.Grow(recs, est+est/16)
			}
			return nil
		})
		if n < len(recs) {
			clear(recs[n:])
			recs = recs[:n]
		}
		return err
	})
	return recs, err
}
