package kafkacodec_test

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/kafkacodec"
)

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
