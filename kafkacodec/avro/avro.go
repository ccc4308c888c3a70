package avro

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	hamba "github.com/hamba/avro/v2"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/kafkacodec"
)

// Codec decodes Avro keys or values. It is safe for concurrent use.
//
// A value fails with a *kafkacodec.DecodeError unless it is exactly one
// value of its writer's schema: one that ends early (a cut-short record, a
// Confluent header with nothing after it) or has bytes left over fails
// (errors.Is ErrTruncated or ErrTrailingBytes), and so does one that claims
// more than its bytes can hold or than the codec's Limits allow (a
// *kafkacodec.LimitError), before anything is allocated for it.
type Codec struct {
	api      hamba.API
	reader   *schema // nil without WithSchema
	registry kafkacodec.Registry
	wire     kafkacodec.Wire
	limits   kafkacodec.Limits
	readers  sync.Pool // *hamba.Reader

	mu      sync.RWMutex
	byID    map[string]*schema // per writer id
	errByID map[string]error   // schemas that can never be used
}

// schema is what decoding a value needs: the schema to decode with (the
// writer's, or the writer's resolved into the reader's) and the writer's,
// compiled, to validate the bytes with.
type schema struct {
	decode hamba.Schema
	writer *node
}

// An Option configures a Codec.
type Option func(*config)

type config struct {
	schema   string
	registry kafkacodec.Registry
	wire     kafkacodec.Wire
	limits   kafkacodec.Limits
	errs     []error
}

// WithSchema sets the reader's schema (Avro JSON). Without a registry it is
// also the writer's.
func WithSchema(text string) Option {
	return func(c *config) {
		if text == "" {
			c.errs = append(c.errs, errors.New("WithSchema: schema is empty"))
		}
		c.schema = text
	}
}

// WithRegistry resolves each record's writer schema by the schema id its
// wire header or Lambda's schema metadata carries.
func WithRegistry(r kafkacodec.Registry) Option {
	return func(c *config) {
		if r == nil {
			c.errs = append(c.errs, errors.New("WithRegistry: registry is nil"))
		}
		c.registry = r
	}
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
// kafkacodec.Limits; a zero field keeps its default). A value beyond them
// fails with a *kafkacodec.LimitError naming the limit.
func WithLimits(l kafkacodec.Limits) Option {
	return func(c *config) {
		c.limits = l
	}
}

// New returns an Avro codec. It needs WithSchema, WithRegistry or both.
func New(opts ...Option) (*Codec, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.schema == "" && cfg.registry == nil && len(cfg.errs) == 0 {
		cfg.errs = append(cfg.errs, errors.New("give a schema (WithSchema), a registry (WithRegistry) or both"))
	}
	if cfg.wire == kafkacodec.WirePlain && cfg.schema == "" {
		cfg.errs = append(cfg.errs, errors.New("plain payloads carry no schema id: give WithSchema"))
	}
	limits, err := cfg.limits.WithDefaults()
	if err != nil {
		cfg.errs = append(cfg.errs, fmt.Errorf("WithLimits: %w", err))
	}
	c := &Codec{registry: cfg.registry, wire: cfg.wire, limits: limits, byID: map[string]*schema{}, errByID: map[string]error{}}
	// The library's own cap on strings and bytes is the codec's, so that
	// what validates decodes.
	c.api = hamba.Config{MaxByteSliceSize: limits.MaxBytes}.Freeze()
	c.readers.New = func() any { return hamba.NewReader(nil, 0, hamba.WithReaderConfig(c.api)) }
	if cfg.schema != "" {
		s, err := parse(cfg.schema)
		if err != nil {
			cfg.errs = append(cfg.errs, fmt.Errorf("WithSchema: %w", err))
		} else {
			n, err := compile(s)
			if err != nil {
				cfg.errs = append(cfg.errs, fmt.Errorf("WithSchema: %w", err))
			}
			c.reader = &schema{decode: s, writer: n}
		}
	}
	if err := errors.Join(cfg.errs...); err != nil {
		return nil, fmt.Errorf("kafkacodec/avro: %w", err)
	}
	return c, nil
}

// Must is New that panics on an error, for use in main.
func Must(opts ...Option) *Codec {
	c, err := New(opts...)
	if err != nil {
		panic(err)
	}
	return c
}

// parse parses a schema into a cache of its own, so that two versions of
// one named record never meet.
func parse(text string) (hamba.Schema, error) {
	return hamba.ParseWithCache(text, "", &hamba.SchemaCache{})
}

// DecodeKafka decodes data into v, a pointer to a struct with avro tags (or
// to a map[string]any).
func (c *Codec) DecodeKafka(ctx context.Context, data []byte, meta *sevents.KafkaSchemaMetadata, v any) error {
	f, err := kafkacodec.Unframe(data, meta, c.wire)
	if err != nil {
		return &kafkacodec.DecodeError{Format: "avro", Err: err}
	}
	s, err := c.schemaFor(ctx, f.SchemaID)
	if err != nil {
		var re *kafkacodec.RegistryError
		if errors.As(err, &re) && re.Transient() {
			return err
		}
		return &kafkacodec.DecodeError{Format: "avro", Wire: f.Wire, SchemaID: f.SchemaID, Err: err}
	}
	if err := c.decode(s, f.Payload, v); err != nil {
		return &kafkacodec.DecodeError{Format: "avro", Wire: f.Wire, SchemaID: f.SchemaID, Err: err}
	}
	return nil
}

// decode validates p against the writer's schema, then decodes it. The
// library's reader must then have read p exactly: an io.EOF it met (which
// its Unmarshal would take for success) or a byte it left fails the value,
// should the validation ever let one through.
func (c *Codec) decode(s *schema, p []byte, v any) error {
	if err := c.limits.CheckSize(len(p)); err != nil {
		return err
	}
	if err := validate(s.writer, p, c.limits); err != nil {
		return err
	}
	r := c.readers.Get().(*hamba.Reader)
	r.Reset(p)
	r.ReadVal(s.decode, v)
	err := r.Error
	if err == nil {
		r.Peek() // at the end of p, sets io.EOF
		if r.Error == nil {
			err = ErrTrailingBytes
		}
	} else if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("%w: %w", ErrTruncated, err)
	}
	r.Error = nil
	r.Reset(nil)
	c.readers.Put(r)
	return err
}

// schemaFor returns the schema to decode a record written with schema id:
// the reader's schema without a registry or an id, the writer's schema
// from the registry, or the two resolved.
func (c *Codec) schemaFor(ctx context.Context, id string) (*schema, error) {
	if c.registry == nil || id == "" {
		if c.reader == nil {
			return nil, errors.New("the payload names no schema id and the codec has no schema (WithSchema)")
		}
		return c.reader, nil
	}
	c.mu.RLock()
	s, ok := c.byID[id]
	err := c.errByID[id]
	c.mu.RUnlock()
	if ok || err != nil {
		return s, err
	}
	rs, err := c.registry.Schema(ctx, id)
	if err != nil {
		return nil, err // not kept: the codec's registry decides what it caches
	}
	s, err = c.build(rs)
	c.mu.Lock()
	if err != nil {
		c.errByID[id] = err
	} else {
		c.byID[id] = s
	}
	c.mu.Unlock()
	return s, err
}

func (c *Codec) build(rs kafkacodec.Schema) (*schema, error) {
	if rs.Format != "" && rs.Format != "AVRO" {
		return nil, fmt.Errorf("schema %s is %s, not Avro", rs.ID, rs.Format)
	}
	writer, err := parse(rs.Text)
	if err != nil {
		return nil, fmt.Errorf("registry schema %s: %w", rs.ID, err)
	}
	if c.reader != nil && writer.Fingerprint() == c.reader.decode.Fingerprint() {
		return c.reader, nil
	}
	n, err := compile(writer)
	if err != nil {
		return nil, fmt.Errorf("registry schema %s: %w", rs.ID, err)
	}
	if c.reader == nil {
		return &schema{decode: writer, writer: n}, nil
	}
	s, err := hamba.NewSchemaCompatibility().Resolve(c.reader.decode, writer)
	if err != nil {
		return nil, fmt.Errorf("writer schema %s cannot be read with the codec's schema: %w", rs.ID, err)
	}
	return &schema{decode: s, writer: n}, nil
}
