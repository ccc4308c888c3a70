package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/kafkacodec/internal/wire"
)

var glueID = [16]byte{0xa1, 0xb2, 0xc3, 0xd4, 0x56, 0x78, 0x90, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab}

const glueUUID = "a1b2c3d4-5678-90ab-cdef-0123456789ab"

func confluent(id uint32, payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, id), payload...)
}

// glue writes a Glue header (the payload as it is, even for compression 5:
// the parser does not inflate).
func glue(compression byte, payload []byte) []byte {
	return append(append([]byte{3, compression}, glueID[:]...), payload...)
}

func TestUUIDString(t *testing.T) {
	if got := wire.UUIDString(glueID); got != glueUUID {
		t.Fatalf("UUIDString = %s, want %s", got, glueUUID)
	}
}

// appendIndexes writes Confluent message indexes as its serializer does.
func appendIndexes(b []byte, idx []int64) []byte {
	if len(idx) == 1 && idx[0] == 0 {
		return append(b, 0)
	}
	b = binary.AppendVarint(b, int64(len(idx)))
	for _, i := range idx {
		b = binary.AppendVarint(b, i)
	}
	return b
}

func TestParseMessageIndexes(t *testing.T) {
	msg := []byte{0x0a, 0x03, 'a', 'b', 'c'}
	for _, idx := range [][]int64{{0}, {1}, {2, 0}, {0, 3, 70}} {
		got, rest, err := wire.ParseMessageIndexes(appendIndexes(nil, idx))
		if err != nil || !slices.Equal(got, idx) || len(rest) != 0 {
			t.Errorf("%v: got %v rest %x err %v", idx, got, rest, err)
		}
		_, rest, err = wire.ParseMessageIndexes(append(appendIndexes(nil, idx), msg...))
		if err != nil || !bytes.Equal(rest, msg) {
			t.Errorf("%v: rest %x err %v", idx, rest, err)
		}
	}
	for _, bad := range [][]byte{nil, {0x80}, {0x04}, {0x03, 0x02}, {0x01}} {
		if _, _, err := wire.ParseMessageIndexes(bad); !errors.Is(err, wire.ErrFormat) {
			t.Errorf("ParseMessageIndexes(%x): err %v", bad, err)
		}
	}
	i, rest, err := wire.ParseGlueMessageIndex(append(binary.AppendUvarint(nil, 300), msg...))
	if err != nil || i != 300 || !bytes.Equal(rest, msg) {
		t.Fatalf("ParseGlueMessageIndex: %d %x %v", i, rest, err)
	}
	if _, _, err := wire.ParseGlueMessageIndex([]byte{0x80}); !errors.Is(err, wire.ErrFormat) {
		t.Fatalf("truncated Glue index: %v", err)
	}
}

// FuzzParseConfluent: a parsed header re-encodes to the input.
func FuzzParseConfluent(f *testing.F) {
	f.Add(confluent(7, []byte("x")))
	f.Add([]byte{0, 0, 0})
	f.Add([]byte{1, 2, 3, 4, 5})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, p, err := wire.ParseConfluent(b)
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
		id, c, p, err := wire.ParseGlue(b)
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
		idx, rest, err := wire.ParseMessageIndexes(b)
		if err != nil {
			return
		}
		used := b[:len(b)-len(rest)]
		if len(idx) == 0 {
			t.Fatalf("%x: no indexes", b)
		}
		// Varints have several encodings (padding); compare values.
		again, rest2, err := wire.ParseMessageIndexes(appendIndexes(nil, idx))
		if err != nil || len(rest2) != 0 || len(again) != len(idx) {
			t.Fatalf("%x: %v does not round-trip: %v %v", used, idx, again, err)
		}
		if n, k := binary.Varint(b); k > 0 && n > 0 && int64(len(idx)) != n {
			t.Fatalf("%x: count %d, parsed %d", b, n, len(idx))
		}
	})
}
