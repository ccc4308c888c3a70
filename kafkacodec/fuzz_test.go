package kafkacodec_test

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/kafkacodec"
)

// FuzzParseConfluent: a parsed header re-encodes to the input.
func FuzzParseConfluent(f *testing.F) {
	f.Add(confluent(7, []byte("x")))
	f.Add([]byte{0, 0, 0})
	f.Add([]byte{1, 2, 3, 4, 5})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, p, err := kafkacodec.ParseConfluent(b)
		if err != nil {
			return
		}
		if !bytes.Equal(confluent(id, p), b) {
			t.Fatalf("%x: id %d payload %x does not re-encode", b, id, p)
		}
	})
}

// FuzzParseGlue: a parsed header re-encodes to the input.
func FuzzParseGlue(f *testing.F) {
	f.Add(glue(0, []byte("x")))
	f.Add(glue(5, []byte("x")))
	f.Add([]byte{3, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, c, p, err := kafkacodec.ParseGlue(b)
		if err != nil {
			return
		}
		again := append(append([]byte{3, c}, id[:]...), p...)
		if !bytes.Equal(again, b) || (c != 0 && c != 5) {
			t.Fatalf("%x: does not re-encode (compression %d)", b, c)
		}
	})
}

// FuzzParseMessageIndexes: what parses re-encodes to the bytes it took.
func FuzzParseMessageIndexes(f *testing.F) {
	f.Add([]byte{0})
	f.Add(appendIndexes(nil, []int64{2, 0}))
	f.Add([]byte{0x80, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		idx, rest, err := kafkacodec.ParseMessageIndexes(b)
		if err != nil {
			return
		}
		used := b[:len(b)-len(rest)]
		if len(idx) == 0 {
			t.Fatalf("%x: no indexes", b)
		}
		// Varints have several encodings (padding); compare values.
		again, rest2, err := kafkacodec.ParseMessageIndexes(appendIndexes(nil, idx))
		if err != nil || len(rest2) != 0 || len(again) != len(idx) {
			t.Fatalf("%x: %v does not round-trip: %v %v", used, idx, again, err)
		}
		if n, k := binary.Varint(b); k > 0 && n > 0 && int64(len(idx)) != n {
			t.Fatalf("%x: count %d, parsed %d", b, n, len(idx))
		}
	})
}

// FuzzUnframe never panics, and what it detects parses.
func FuzzUnframe(f *testing.F) {
	f.Add(confluent(1, []byte("{}")), uint8(0))
	f.Add(glue(5, []byte("{}")), uint8(0))
	f.Add([]byte("{}"), uint8(1))
	// The Avro value of issue 25 (an array claiming 2^33 items), and a
	// Confluent header with nothing after it.
	f.Add(confluent(1, []byte{0x02, 0x78, 0x02, 0x00, 0x80, 0x80, 0x80, 0x80, 0x40}), uint8(0))
	f.Add(confluent(1, nil), uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, w uint8) {
		fr, err := kafkacodec.Unframe(b, nil, kafkacodec.Wire(w%4))
		if err != nil {
			return
		}
		switch fr.Wire {
		case kafkacodec.WireConfluent:
			if _, err := strconv.ParseUint(fr.SchemaID, 10, 32); err != nil {
				t.Fatalf("confluent id %q", fr.SchemaID)
			}
		case kafkacodec.WireGlue:
			if len(fr.SchemaID) != 36 {
				t.Fatalf("glue id %q", fr.SchemaID)
			}
		case kafkacodec.WirePlain:
			if !bytes.Equal(fr.Payload, b) || fr.SchemaID != "" {
				t.Fatalf("plain frame changed the bytes")
			}
		default:
			t.Fatalf("frame wire %v", fr.Wire)
		}
	})
}
