package protobuf

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"google.golang.org/protobuf/proto"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/kafkacodec/internal/wire"
)

// Codec decodes Protobuf keys or values. It is safe for concurrent use.
//
// Before the Protobuf library decodes a value, the codec counts what the
// library would allocate for it (messages, repeated elements, map
// entries, the copies that a packed field written in many runs costs,
// string and bytes lengths, nesting) against its Limits, so that a value
// fails with a *kafkacodec.DecodeError wrapping a *kafkacodec.LimitError
// instead of exhausting memory or time.
type Codec struct {
	wire   kafkacodec.Wire
	limits kafkacodec.Limits
	opts   proto.UnmarshalOptions
}

// An Option configures a Codec.
type Option func(*config)

type config struct {
	wire   kafkacodec.Wire
	limits kafkacodec.Limits
	errs   []error
}

// WithWire sets the framing of the payloads. Default kafkacodec.WireAuto.
func WithWire(w kafkacodec.Wire) Option {
	return func(c *config) {
		if w > kafkacodec.WireGlue {
			c.errs = append(c.errs, fmt.Errorf("WithWire: unknown %v", w))
		}
		c.wire = w
	}
}

// WithLimits bounds what decoding one value may read and allocate (see
// kafkacodec.Limits; a zero field keeps its default). MaxItems counts
// messages, repeated elements and map entries; MaxBytes bounds a string
// or bytes field; MaxDepth is also the library's recursion limit. A value
// beyond them fails with a *kafkacodec.LimitError naming the limit.
func WithLimits(l kafkacodec.Limits) Option {
	return func(c *config) {
		c.limits = l
	}
}

// New returns a Protobuf codec.
func New(opts ...Option) (*Codec, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	limits, err := cfg.limits.WithDefaults()
	if err != nil {
		cfg.errs = append(cfg.errs, fmt.Errorf("WithLimits: %w", err))
	}
	if err := errors.Join(cfg.errs...); err != nil {
		return nil, fmt.Errorf("kafkacodec/protobuf: %w", err)
	}
	return &Codec{wire: cfg.wire, limits: limits, opts: proto.UnmarshalOptions{RecursionLimit: limits.MaxDepth}}, nil
}

// Must is New that panics on an error, for use in main.
func Must(opts ...Option) *Codec {
	c, err := New(opts...)
	if err != nil {
		panic(err)
	}
	return c
}

// DecodeKafka decodes data into v: a proto.Message (such as *pb.Order), or
// a pointer to one (**pb.Order, the target for a KafkaRecord[*pb.Order]),
// which gets a new message.
func (c *Codec) DecodeKafka(_ context.Context, data []byte, meta *sevents.KafkaSchemaMetadata, v any) error {
	f, err := kafkacodec.Unframe(data, meta, c.wire)
	if err != nil {
		return &kafkacodec.DecodeError{Format: "protobuf", Err: err}
	}
	fail := func(err error) error {
		return &kafkacodec.DecodeError{Format: "protobuf", Wire: f.Wire, SchemaID: f.SchemaID, Err: err}
	}
	m, err := target(v)
	if err != nil {
		return fail(err)
	}
	p := f.Payload
	switch f.Wire {
	case kafkacodec.WireConfluent:
		if _, p, err = wire.ParseMessageIndexes(p); err != nil {
			return fail(err)
		}
	case kafkacodec.WireGlue:
		if _, p, err = wire.ParseGlueMessageIndex(p); err != nil {
			return fail(err)
		}
	}
	if err := c.limits.CheckSize(len(p)); err != nil {
		return fail(err)
	}
	if err := bound(m.ProtoReflect().Descriptor(), p, c.limits); err != nil {
		return fail(err)
	}
	if err := c.opts.Unmarshal(p, m); err != nil {
		return fail(err)
	}
	return nil
}

// target returns the message to decode into.
func target(v any) (proto.Message, error) {
	if m, ok := v.(proto.Message); ok {
		if reflect.ValueOf(m).IsNil() {
			return nil, fmt.Errorf("cannot decode into a nil %T", v)
		}
		return m, nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() && rv.Elem().Kind() == reflect.Pointer {
		if _, ok := rv.Elem().Interface().(proto.Message); ok {
			nm := reflect.New(rv.Elem().Type().Elem())
			rv.Elem().Set(nm)
			return nm.Interface().(proto.Message), nil
		}
	}
	return nil, fmt.Errorf("cannot decode into %T: want a generated message type, e.g. KafkaRecord[*pb.Order]", v)
}
