package protobuf

import (
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/kafkacodec"
)

// Bound runs the count DecodeKafka makes before the library decodes b
// into a message of m's type.
func Bound(m proto.Message, b []byte, l kafkacodec.Limits) error {
	l, err := l.WithDefaults()
	if err != nil {
		return err
	}
	return bound(m.ProtoReflect().Descriptor(), b, l)
}

// ErrWire is wrapped by the count's error for bytes that are not wire
// format.
var ErrWire = errWire
