package dlq

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// TruncationMarker is Truncation.Marker of an envelope whose record was cut
// to fit its destination.
const TruncationMarker = "TRUNCATED: the record did not fit the dead-letter destination; " +
	"record holds only a prefix of it, as a JSON string. Fetch the whole record back from its source " +
	"with the coordinates in this envelope (sluice fetch-failed, or the source's API) before replaying it."

// MarshalLimit encodes e as Marshal does when that fits in limit bytes.
// Otherwise it encodes a copy whose Record is the longest prefix of the
// record that fits, as a JSON string, with Truncated set (e itself is not
// changed). It fails when even an empty prefix does not fit.
func (e *Envelope) MarshalLimit(limit int) ([]byte, error) {
	b, err := e.Marshal()
	if err != nil || len(b) <= limit {
		return b, err
	}
	t := *e
	raw := []byte(e.Record)
	t.Truncated = &Truncation{OriginalBytes: len(raw), Marker: TruncationMarker}
	if e.Truncated != nil { // already a prefix: keep its story
		t.Truncated.OriginalBytes = e.Truncated.OriginalBytes
		var s string
		if json.Unmarshal(e.Record, &s) == nil {
			raw = []byte(s)
		}
	}
	// Find the longest prefix that fits: step down by the overshoot until
	// one fits (an escaped byte takes up to six, so this can step too far),
	// then search upwards between that and the last one that did not.
	fit := func(n int) ([]byte, error) {
		for n > 0 && n < len(raw) && !utf8.RuneStart(raw[n]) {
			n-- // cut between runes, so the prefix stays valid UTF-8
		}
		t.Record = jsonString(raw[:n])
		return t.Marshal()
	}
	hi := min(len(raw), limit) // does not fit (checked below)
	lo := hi
	var best []byte
	for {
		b, err := fit(lo)
		if err != nil {
			return nil, err
		}
		over := len(b) - limit
		if over <= 0 {
			best = b
			break
		}
		if lo == 0 {
			return nil, fmt.Errorf("dlq: the envelope of record %s takes %d bytes without its record, over the destination's limit of %d",
				e.RecordID, len(b), limit)
		}
		hi, lo = lo, max(0, lo-over)
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		b, err := fit(mid)
		if err != nil {
			return nil, err
		}
		if len(b) <= limit {
			lo, best = mid, b
		} else {
			hi = mid
		}
	}
	return best, nil
}

func jsonString(b []byte) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(string(b)) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
