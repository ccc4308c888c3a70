package avro_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	hamba "github.com/hamba/avro/v2"

	"github.com/sluicehq/sluice/batch"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/kafkacodec/avro"
)

// orderV1 is the writer's first schema; orderV2 adds a field with a
// default; orderV3 adds one the reader does not know.
const (
	orderV1 = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"string"},
		{"name":"amount_cents","type":"long"}]}`
	orderV2 = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"string"},
		{"name":"amount_cents","type":"long"},
		{"name":"note","type":["null","string"],"default":null}]}`
	orderV3 = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"string"},
		{"name":"channel","type":"string"},
		{"name":"amount_cents","type":"long"},
		{"name":"note","type":["null","string"],"default":null}]}`
)

type Order struct {
	ID          string  `avro:"id" json:"id"`
	AmountCents int64   `avro:"amount_cents" json:"amount_cents"`
	Note        *string `avro:"note" json:"note"`
}

type orderV3Value struct {
	ID          string  `avro:"id"`
	Channel     string  `avro:"channel"`
	AmountCents int64   `avro:"amount_cents"`
	Note        *string `avro:"note"`
}

const glueUUID = "a1b2c3d4-5678-90ab-cdef-0123456789ab"

var glueID = [16]byte{0xa1, 0xb2, 0xc3, 0xd4, 0x56, 0x78, 0x90, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab}

func encode(t testing.TB, schema string, v any) []byte {
	t.Helper()
	b, err := hamba.Marshal(hamba.MustParse(schema), v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func confluent(id uint32, p []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, id), p...)
}

func glue(zip bool, p []byte) []byte {
	c := byte(0)
	if zip {
		c = 5
		var b bytes.Buffer
		w := zlib.NewWriter(&b)
		w.Write(p)
		w.Close()
		p = b.Bytes()
	}
	return append(append([]byte{3, c}, glueID[:]...), p...)
}

// registry is an in-memory kafkacodec.Registry counting lookups.
type registry struct {
	schemas map[string]string
	calls   atomic.Int32
	err     error
}

func (r *registry) Schema(_ context.Context, id string) (kafkacodec.Schema, error) {
	r.calls.Add(1)
	if r.err != nil {
		return kafkacodec.Schema{}, r.err
	}
	s, ok := r.schemas[id]
	if !ok {
		return kafkacodec.Schema{}, &kafkacodec.RegistryError{Registry: "test", ID: id, NotFound: true, Err: errors.New("no such schema")}
	}
	return kafkacodec.Schema{ID: id, Format: "AVRO", Text: s}, nil
}

func TestRoundTrips(t *testing.T) {
	note := "gift"
	want := Order{ID: "o-1", AmountCents: 1299, Note: &note}
	v2 := encode(t, orderV2, want)
	v1 := encode(t, orderV1, Order{ID: "o-1", AmountCents: 1299})
	v3 := encode(t, orderV3, orderV3Value{ID: "o-1", Channel: "web", AmountCents: 1299, Note: &note})
	reg := &registry{schemas: map[string]string{"1": orderV1, "2": orderV2, "3": orderV3, glueUUID: orderV2}}
	withReg := avro.Must(avro.WithSchema(orderV2), avro.WithRegistry(reg))
	fixed := avro.Must(avro.WithSchema(orderV2))
	onlyReg := avro.Must(avro.WithRegistry(reg))
	plain := avro.Must(avro.WithSchema(orderV2), avro.WithWire(kafkacodec.WirePlain))
	noNote := Order{ID: "o-1", AmountCents: 1299}
	for _, tc := range []struct {
		name  string
		codec *avro.Codec
		data  []byte
		meta  *sevents.KafkaSchemaMetadata
		want  Order
	}{
		{"plain, fixed schema", plain, v2, nil, want},
		{"plain auto-detected", fixed, v2, nil, want},
		{"confluent, fixed schema", fixed, confluent(2, v2), nil, want},
		{"confluent, registry", withReg, confluent(2, v2), nil, want},
		{"confluent, registry only", onlyReg, confluent(2, v2), nil, want},
		{"confluent, older writer takes the default", withReg, confluent(1, v1), nil, noNote},
		{"confluent, newer writer's extra field skipped", withReg, confluent(3, v3), nil, want},
		{"glue, registry", withReg, glue(false, v2), nil, want},
		{"glue zlib, registry", withReg, glue(true, v2), nil, want},
		{"glue, fixed schema", fixed, glue(false, v2), nil, want},
		{"validated by the mapping (SOURCE), confluent id", withReg, v1, &sevents.KafkaSchemaMetadata{DataFormat: "AVRO", SchemaID: "1"}, noNote},
		{"validated by the mapping (SOURCE), glue id", withReg, v2, &sevents.KafkaSchemaMetadata{DataFormat: "AVRO", SchemaID: glueUUID}, want},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got Order
			if err := tc.codec.DecodeKafka(context.Background(), tc.data, tc.meta, &got); err != nil {
				t.Fatal(err)
			}
			if got.ID != tc.want.ID || got.AmountCents != tc.want.AmountCents || (got.Note == nil) != (tc.want.Note == nil) ||
				(got.Note != nil && *got.Note != *tc.want.Note) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	before := reg.calls.Load()
	for range 10 {
		var o Order
		if err := withReg.DecodeKafka(context.Background(), confluent(3, v3), nil, &o); err != nil {
			t.Fatal(err)
		}
	}
	if reg.calls.Load() != before {
		t.Fatalf("the codec asked the registry again for a schema it had resolved")
	}
}

func TestDecodeErrors(t *testing.T) {
	ctx := context.Background()
	reg := &registry{schemas: map[string]string{"1": orderV1, "9": `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"int"}]}`}}
	c := avro.Must(avro.WithSchema(orderV2), avro.WithRegistry(reg))
	for _, tc := range []struct {
		name, want string
		data       []byte
		class      batch.Class
	}{
		{"truncated value", "avro (confluent schema id 1)", confluent(1, []byte{0x08, 'o'}), batch.ClassPermanent},
		{"unknown schema id", "schema registry has no schema 77", confluent(77, []byte{2, 'x', 0}), batch.ClassPermanent},
		{"incompatible writer", "writer schema 9 cannot be read", confluent(9, []byte{2}), batch.ClassPermanent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o Order
			err := c.DecodeKafka(ctx, tc.data, nil, &o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want it to say %q", err, tc.want)
			}
			if cl := batch.Classify(err); cl != tc.class {
				t.Fatalf("class %v, want %v", cl, tc.class)
			}
		})
	}
	// A registry that is down: transient, not a decode error.
	down := &registry{err: &kafkacodec.RegistryError{Registry: "test", ID: "1", Err: errors.New("connection refused")}}
	var o Order
	err := avro.Must(avro.WithRegistry(down)).DecodeKafka(ctx, confluent(1, []byte{2, 'x', 0}), nil, &o)
	var de *kafkacodec.DecodeError
	if batch.Classify(err) != batch.ClassTransient || errors.As(err, &de) {
		t.Fatalf("registry down: %v (class %v)", err, batch.Classify(err))
	}
	// A header the codec was told to expect, malformed.
	err = avro.Must(avro.WithSchema(orderV1), avro.WithWire(kafkacodec.WireGlue)).DecodeKafka(ctx, []byte{3, 0, 1, 2}, nil, &o)
	if !errors.Is(err, kafkacodec.ErrWireFormat) || !strings.Contains(err.Error(), "avro: malformed wire header") || batch.Classify(err) != batch.ClassPermanent {
		t.Fatalf("malformed Glue header: %v", err)
	}
	// A plain payload and a codec without a schema.
	err = avro.Must(avro.WithRegistry(reg)).DecodeKafka(ctx, []byte{2, 'x', 0}, nil, &o)
	if err == nil || !strings.Contains(err.Error(), "no schema id") {
		t.Fatalf("plain payload without a schema: %v", err)
	}
}

func TestNewRejects(t *testing.T) {
	for name, opts := range map[string][]avro.Option{
		"nothing":                {},
		"empty schema":           {avro.WithSchema("")},
		"bad schema":             {avro.WithSchema(`{"type":"record"}`)},
		"nil registry":           {avro.WithRegistry(nil)},
		"unknown wire":           {avro.WithSchema(orderV1), avro.WithWire(9)},
		"plain without a schema": {avro.WithRegistry(&registry{}), avro.WithWire(kafkacodec.WirePlain)},
	} {
		if _, err := avro.New(opts...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
