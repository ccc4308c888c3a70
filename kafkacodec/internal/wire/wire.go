// Package wire reads the wire headers Kafka serializers write before an
// encoded key or value: Confluent's (magic byte 0 and a 4-byte schema id)
// and the AWS Glue Schema Registry's (version byte 3, a compression byte and
// a 16-byte schema version UUID), and the message indexes their Protobuf
// serializers write after the header. Package kafkacodec's Unframe and the
// codecs of its subpackages use it; a user sees Unframe and Frame.
package wire

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// Header sizes and marker bytes of the framed formats.
const (
	ConfluentMagic      = 0x00
	ConfluentHeaderSize = 5
	GlueVersion         = 0x03
	GlueHeaderSize      = 18
	GlueCompressionNone = 0x00
	GlueCompressionZlib = 0x05
)

// ErrFormat is wrapped by every error about a malformed wire header
// (kafkacodec.ErrFormat is this error).
var ErrFormat = errors.New("malformed wire header")

// ParseConfluent splits a Confluent-framed payload into its schema id and
// the encoded bytes that follow the header.
func ParseConfluent(b []byte) (id uint32, payload []byte, err error) {
	if len(b) < ConfluentHeaderSize {
		return 0, nil, fmt.Errorf("%w: a Confluent header is %d bytes, the payload has %d", ErrFormat, ConfluentHeaderSize, len(b))
	}
	if b[0] != ConfluentMagic {
		return 0, nil, fmt.Errorf("%w: a Confluent header starts with magic byte 0, not 0x%02x", ErrFormat, b[0])
	}
	return binary.BigEndian.Uint32(b[1:5]), b[ConfluentHeaderSize:], nil
}

// ParseGlue splits a Glue Schema Registry payload into its schema version
// UUID, its compression byte and the (still compressed) bytes after the
// header.
func ParseGlue(b []byte) (id [16]byte, compression byte, payload []byte, err error) {
	if len(b) < GlueHeaderSize {
		return id, 0, nil, fmt.Errorf("%w: a Glue header is %d bytes, the payload has %d", ErrFormat, GlueHeaderSize, len(b))
	}
	if b[0] != GlueVersion {
		return id, 0, nil, fmt.Errorf("%w: a Glue header starts with version byte 3, not 0x%02x", ErrFormat, b[0])
	}
	if b[1] != GlueCompressionNone && b[1] != GlueCompressionZlib {
		return id, 0, nil, fmt.Errorf("%w: Glue compression byte 0x%02x is neither 0 (none) nor 5 (zlib)", ErrFormat, b[1])
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
		return nil, nil, fmt.Errorf("%w: the Protobuf message-index count is not a varint", ErrFormat)
	}
	b = b[k:]
	if n == 0 {
		return []int64{0}, b, nil
	}
	if n < 0 || n > int64(len(b)) {
		return nil, nil, fmt.Errorf("%w: %d Protobuf message indexes in %d bytes", ErrFormat, n, len(b))
	}
	indexes = make([]int64, n)
	for i := range indexes {
		v, k := binary.Varint(b)
		if k <= 0 {
			return nil, nil, fmt.Errorf("%w: Protobuf message index %d is not a varint", ErrFormat, i)
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
		return 0, nil, fmt.Errorf("%w: the Glue Protobuf message index is not a varint", ErrFormat)
	}
	return v, b[k:], nil
}
