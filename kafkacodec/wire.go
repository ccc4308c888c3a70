package kafkacodec

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"

	sevents "github.com/sluicehq/sluice/events"
)

// Wire is how a producer framed a serialized key or value.
type Wire uint8

const (
	// WireAuto detects the framing (see the package documentation).
	WireAuto Wire = iota
	// WirePlain is the encoded bytes alone.
	WirePlain
	// WireConfluent is magic byte 0 and a 4-byte big-endian schema id.
	WireConfluent
	// WireGlue is the 18-byte AWS Glue Schema Registry header.
	WireGlue
)

func (w Wire) String() string {
	switch w {
	case WireAuto:
		return "auto"
	case WirePlain:
		return "plain"
	case WireConfluent:
		return "confluent"
	case WireGlue:
		return "glue"
	}
	return "Wire(" + strconv.Itoa(int(w)) + ")"
}

// Header sizes and marker bytes of the framed formats.
const (
	ConfluentMagic      = 0x00
	ConfluentHeaderSize = 5
	GlueVersion         = 0x03
	GlueHeaderSize      = 18
	GlueCompressionNone = 0x00
	GlueCompressionZlib = 0x05
)

// ErrWireFormat is wrapped by every error about a malformed wire header.
var ErrWireFormat = errors.New("malformed wire header")

// ParseConfluent splits a Confluent-framed payload into its schema id and
// the encoded bytes that follow the header.
func ParseConfluent(b []byte) (id uint32, payload []byte, err error) {
	if len(b) < ConfluentHeaderSize {
		return 0, nil, fmt.Errorf("%w: a Confluent header is %d bytes, the payload has %d", ErrWireFormat, ConfluentHeaderSize, len(b))
	}
	if b[0] != ConfluentMagic {
		return 0, nil, fmt.Errorf("%w: a Confluent header starts with magic byte 0, not 0x%02x", ErrWireFormat, b[0])
	}
	return binary.BigEndian.Uint32(b[1:5]), b[ConfluentHeaderSize:], nil
}

// ParseGlue splits a Glue Schema Registry payload into its schema version
// UUID, its compression byte and the (still compressed) bytes after the
// header.
func ParseGlue(b []byte) (id [16]byte, compression byte, payload []byte, err error) {
	if len(b) < GlueHeaderSize {
		return id, 0, nil, fmt.Errorf("%w: a Glue header is %d bytes, the payload has %d", ErrWireFormat, GlueHeaderSize, len(b))
	}
	if b[0] != GlueVersion {
		return id, 0, nil, fmt.Errorf("%w: a Glue header starts with version byte 3, not 0x%02x", ErrWireFormat, b[0])
	}
	if b[1] != GlueCompressionNone && b[1] != GlueCompressionZlib {
		return id, 0, nil, fmt.Errorf("%w: Glue compression byte 0x%02x is neither 0 (none) nor 5 (zlib)", ErrWireFormat, b[1])
	}
	copy(id[:], b[2:18])
	return id, b[1], b[GlueHeaderSize:], nil
}

// UUIDString formats a Glue schema version id as Glue prints it.
func UUIDString(id [16]byte) string {
	var s [36]byte
	hex.Encode(s[0:8], id[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], id[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], id[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], id[8:10])
	s[23] = '-'
	hex.Encode(s[24:], id[10:16])
	return string(s[:])
}

// ParseMessageIndexes reads the message indexes a Confluent Protobuf
// serializer writes after the header: a zigzag varint count, then that many
// zigzag varints naming the message type within its schema (a single 0
// stands for [0], the first message). It returns the indexes and the
// encoded message after them.
func ParseMessageIndexes(b []byte) (indexes []int64, rest []byte, err error) {
	n, k := binary.Varint(b)
	if k <= 0 {
		return nil, nil, fmt.Errorf("%w: the Protobuf message-index count is not a varint", ErrWireFormat)
	}
	b = b[k:]
	if n == 0 {
		return []int64{0}, b, nil
	}
	if n < 0 || n > int64(len(b)) {
		return nil, nil, fmt.Errorf("%w: %d Protobuf message indexes in %d bytes", ErrWireFormat, n, len(b))
	}
	indexes = make([]int64, n)
	for i := range indexes {
		v, k := binary.Varint(b)
		if k <= 0 {
			return nil, nil, fmt.Errorf("%w: Protobuf message index %d is not a varint", ErrWireFormat, i)
		}
		indexes[i], b = v, b[k:]
	}
	return indexes, b, nil
}

// ParseGlueMessageIndex reads the one unsigned varint a Glue Protobuf
// serializer writes before the encoded message.
func ParseGlueMessageIndex(b []byte) (index uint64, rest []byte, err error) {
	v, k := binary.Uvarint(b)
	if k <= 0 {
		return 0, nil, fmt.Errorf("%w: the Glue Protobuf message index is not a varint", ErrWireFormat)
	}
	return v, b[k:], nil
}

// A Frame is a key or value with its wire header taken off.
type Frame struct {
	// Wire is the framing the bytes came in: WirePlain, WireConfluent or
	// WireGlue. For a record Lambda validated it is the registry's kind,
	// told by the form of the schema id.
	Wire Wire
	// SchemaID is the decimal Confluent id or the Glue schema version UUID;
	// empty for a plain payload.
	SchemaID string
	// Payload is the encoded bytes after the header, decompressed. For
	// Protobuf it still starts with the message indexes.
	Payload []byte
	// Validated is true when Lambda took the header off after validating
	// the record against the registry (its schema metadata was present).
	Validated bool
}

// Unframe takes the wire header off data as w says. meta is the schema
// metadata Lambda delivered with the key or value, or nil.
func Unframe(data []byte, meta *sevents.KafkaSchemaMetadata, w Wire) (Frame, error) {
	if meta != nil && w == WireAuto {
		return Frame{Wire: registryKind(meta.SchemaID), SchemaID: meta.SchemaID, Payload: data, Validated: true}, nil
	}
	if w == WireAuto {
		w = Detect(data)
	}
	switch w {
	case WireConfluent:
		id, p, err := ParseConfluent(data)
		if err != nil {
			return Frame{}, err
		}
		return Frame{Wire: WireConfluent, SchemaID: strconv.FormatUint(uint64(id), 10), Payload: p}, nil
	case WireGlue:
		id, c, p, err := ParseGlue(data)
		if err != nil {
			return Frame{}, err
		}
		f := Frame{Wire: WireGlue, SchemaID: UUIDString(id), Payload: p}
		if c == GlueCompressionZlib {
			if f.Payload, err = inflate(p); err != nil {
				return Frame{}, fmt.Errorf("glue schema version %s: zlib: %w", f.SchemaID, err)
			}
		}
		return f, nil
	case WirePlain:
		return Frame{Wire: WirePlain, Payload: data}, nil
	}
	return Frame{}, fmt.Errorf("kafkacodec: unknown %v", w)
}

// Detect tells the framing of data by its first bytes: Confluent for magic
// byte 0 with room for the id, Glue for version byte 3 with a known
// compression byte and room for the UUID, plain otherwise.
func Detect(data []byte) Wire {
	switch {
	case len(data) >= ConfluentHeaderSize && data[0] == ConfluentMagic:
		return WireConfluent
	case len(data) >= GlueHeaderSize && data[0] == GlueVersion && (data[1] == GlueCompressionNone || data[1] == GlueCompressionZlib):
		return WireGlue
	}
	return WirePlain
}

// registryKind tells a Confluent id (decimal) from a Glue one (a UUID).
func registryKind(id string) Wire {
	if _, err := strconv.ParseUint(id, 10, 32); err == nil {
		return WireConfluent
	}
	if len(id) == 36 && id[8] == '-' && id[13] == '-' && id[18] == '-' && id[23] == '-' {
		return WireGlue
	}
	return WirePlain
}

// maxInflated bounds a decompressed Glue payload (Kafka's own default
// maximum message size is 1 MiB; this leaves room for good compression).
const maxInflated = 64 << 20

func inflate(p []byte) ([]byte, error) {
	r, err := zlib.NewReader(bytes.NewReader(p))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out, err := io.ReadAll(io.LimitReader(r, maxInflated+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxInflated {
		return nil, fmt.Errorf("decompresses to more than %d bytes", maxInflated)
	}
	return out, nil
}
