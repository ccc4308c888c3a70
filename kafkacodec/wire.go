package kafkacodec

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"strconv"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/kafkacodec/internal/wire"
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

// ErrWireFormat is wrapped by every error about a malformed wire header.
var ErrWireFormat = wire.ErrFormat

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
		w = detect(data)
	}
	switch w {
	case WireConfluent:
		id, p, err := wire.ParseConfluent(data)
		if err != nil {
			return Frame{}, err
		}
		return Frame{Wire: WireConfluent, SchemaID: strconv.FormatUint(uint64(id), 10), Payload: p}, nil
	case WireGlue:
		id, c, p, err := wire.ParseGlue(data)
		if err != nil {
			return Frame{}, err
		}
		f := Frame{Wire: WireGlue, SchemaID: wire.UUIDString(id), Payload: p}
		if c == wire.GlueCompressionZlib {
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

// detect tells the framing of data by its first bytes: Confluent for magic
// byte 0 with room for the id, Glue for version byte 3 with a known
// compression byte and room for the UUID, plain otherwise.
func detect(data []byte) Wire {
	switch {
	case len(data) >= wire.ConfluentHeaderSize && data[0] == wire.ConfluentMagic:
		return WireConfluent
	case len(data) >= wire.GlueHeaderSize && data[0] == wire.GlueVersion && (data[1] == wire.GlueCompressionNone || data[1] == wire.GlueCompressionZlib):
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
