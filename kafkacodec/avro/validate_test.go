package avro_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	hamba "github.com/hamba/avro/v2"

	"github.com/sluicehq/sluice/batch"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/kafkacodec/avro"
)

// hostileSchema and hostileValue are the value of the issue: a Confluent
// header, two one-byte strings, then an array that claims 2^33 longs with
// no byte after the claim. The library, unguarded, preallocates 64 GiB for
// it.
const hostileSchema = `{"type":"record","name":"Hostile","fields":[
	{"name":"id","type":"string"},
	{"name":"note","type":"string"},
	{"name":"items","type":{"type":"array","items":"long"}}]}`

var hostileValue = confluent(1, []byte{0x02, 0x78, 0x02, 0x00, 0x80, 0x80, 0x80, 0x80, 0x40})

type hostile struct {
	ID    string  `avro:"id"`
	Note  string  `avro:"note"`
	Items []int64 `avro:"items"`
}

// encodeWith encodes v with a library configuration: blocks with or
// without their byte size.
func encodeWith(t testing.TB, api hamba.API, schema string, v any) []byte {
	t.Helper()
	b, err := api.Marshal(hamba.MustParse(schema), v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type truncCase struct {
	name  string
	codec *avro.Codec
	id    uint32
	body  []byte
	want  any
	into  func() any // a pointer to a new target
}

func truncCases(t *testing.T) []truncCase {
	sized := hamba.Config{}.Freeze() // blocks as -count, byte size
	counted := hamba.Config{DisableBlockSizeHeader: true}.Freeze()
	order := sampleOrder9()
	bare := Order9{ID: "o", Lines: []Line{}, Attributes: map[string]string{}}
	note := "gift"
	reg := &registry{schemas: map[string]string{"1": orderV1, "2": orderV2, "3": orderV3, "4": order9Schema, "5": keySchema}}
	withReg := avro.Must(avro.WithSchema(orderV2), avro.WithRegistry(reg))
	newOrder9 := func() any { return new(Order9) }
	return []truncCase{
		{"order9, block sizes", avro.Must(avro.WithSchema(order9Schema)), 4, encodeWith(t, sized, order9Schema, order), order, newOrder9},
		{"order9, block counts only", avro.Must(avro.WithSchema(order9Schema)), 4, encodeWith(t, counted, order9Schema, order), order, newOrder9},
		{"order9 from the registry", avro.Must(avro.WithRegistry(reg)), 4, encodeWith(t, sized, order9Schema, order), order, newOrder9},
		{"order9, null note, empty array and map", avro.Must(avro.WithSchema(order9Schema)), 4, encodeWith(t, sized, order9Schema, bare), bare, newOrder9},
		{"two-string key", avro.Must(avro.WithSchema(keySchema)), 5, encode(t, keySchema, OrderKey{"acme", "cus-981"}), OrderKey{"acme", "cus-981"},
			func() any { return new(OrderKey) }},
		{"order v3 resolved into v2 (a field skipped)", withReg, 3, encode(t, orderV3, orderV3Value{ID: "o-1", Channel: "web", AmountCents: 1299, Note: &note}),
			Order{ID: "o-1", AmountCents: 1299, Note: &note}, func() any { return new(Order) }},
		{"order v1 resolved into v2 (a default taken)", withReg, 1, encode(t, orderV1, Order{ID: "o-1", AmountCents: 1299}),
			Order{ID: "o-1", AmountCents: 1299}, func() any { return new(Order) }},
	}
}

// TestTruncatedValuesFail cuts each value at every byte boundary: every cut
// fails as a permanent *kafkacodec.DecodeError that says the value ends
// early, and the whole value decodes to what was encoded.
func TestTruncatedValuesFail(t *testing.T) {
	ctx := context.Background()
	for _, tc := range truncCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			whole := tc.into()
			if err := tc.codec.DecodeKafka(ctx, confluent(tc.id, tc.body), nil, whole); err != nil {
				t.Fatalf("the whole value: %v", err)
			}
			if got := reflect.ValueOf(whole).Elem().Interface(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("the whole value decoded to %+v, want %+v", got, tc.want)
			}
			for cut := range len(tc.body) {
				err := tc.codec.DecodeKafka(ctx, confluent(tc.id, tc.body[:cut]), nil, tc.into())
				var de *kafkacodec.DecodeError
				if !errors.As(err, &de) || !errors.Is(err, avro.ErrTruncated) || batch.Classify(err) != batch.ClassPermanent {
					t.Errorf("cut at %d of %d bytes: err %v, want a permanent DecodeError wrapping ErrTruncated", cut, len(tc.body), err)
				}
			}
		})
	}
}

// TestTrailingBytesFail: a value with bytes after its end fails.
func TestTrailingBytesFail(t *testing.T) {
	ctx := context.Background()
	for _, tc := range truncCases(t) {
		for _, extra := range [][]byte{{0}, {0x02, 'x'}, []byte("trailing garbage")} {
			err := tc.codec.DecodeKafka(ctx, confluent(tc.id, append(tc.body[:len(tc.body):len(tc.body)], extra...)), nil, tc.into())
			var de *kafkacodec.DecodeError
			if !errors.As(err, &de) || !errors.Is(err, avro.ErrTrailingBytes) || !strings.Contains(err.Error(), fmt.Sprintf("ends at byte %d of %d", len(tc.body), len(tc.body)+len(extra))) {
				t.Errorf("%s + %x: err %v, want a DecodeError wrapping ErrTrailingBytes", tc.name, extra, err)
			}
		}
	}
}

// TestEmptyBodyFails: a Confluent header with nothing after it fails for a
// schema whose values take bytes, and decodes for one whose values take
// none.
func TestEmptyBodyFails(t *testing.T) {
	ctx := context.Background()
	for _, s := range []string{orderV1, keySchema, order9Schema, `"string"`, `"long"`, `["null","string"]`} {
		var v any
		err := avro.Must(avro.WithSchema(s)).DecodeKafka(ctx, confluent(1, nil), nil, &v)
		var de *kafkacodec.DecodeError
		if !errors.As(err, &de) || !errors.Is(err, avro.ErrTruncated) || de.SchemaID != "1" {
			t.Errorf("%s: err %v, want a DecodeError wrapping ErrTruncated", s, err)
		}
	}
	for _, s := range []string{`"null"`, `{"type":"record","name":"Empty","fields":[]}`} {
		var v any
		if err := avro.Must(avro.WithSchema(s)).DecodeKafka(ctx, confluent(1, nil), nil, &v); err != nil {
			t.Errorf("%s: an empty body is its one value: %v", s, err)
		}
	}
}

// TestMalformedValuesFail: bytes that claim more than they hold, or that
// no writer of the schema writes, fail before the library allocates for
// them, each with an error that says what is wrong and where.
func TestMalformedValuesFail(t *testing.T) {
	ctx := context.Background()
	small := kafkacodec.Limits{MaxItems: 100, MaxBytes: 64, MaxDepth: 8}
	nulls := `{"type":"array","items":"null"}`
	list := `{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}`
	kinds := `{"type":"record","name":"Kinds","fields":[
		{"name":"flag","type":"boolean"},
		{"name":"color","type":{"type":"enum","name":"Color","symbols":["RED","GREEN"]}},
		{"name":"n","type":"int"}]}`
	mapOfLongs := `{"type":"map","values":"long"}`
	for _, tc := range []struct {
		name, schema string
		limits       kafkacodec.Limits
		body         []byte
		is           error  // errors.Is, or nil
		limit        string // a *kafkacodec.LimitError's Limit, or ""
		says         string
	}{
		{"the issue's 2^33 longs", hostileSchema, kafkacodec.Limits{}, hostileValue[5:], avro.ErrTruncated, "",
			"items, at byte 9: the value ends before its schema does: array block claims 8589934592 items of 1 or more bytes each, 0 bytes are left"},
		{"a map of 2^33 entries", mapOfLongs, kafkacodec.Limits{}, []byte{0x80, 0x80, 0x80, 0x80, 0x40, 0x02, 'k', 0x02}, avro.ErrTruncated, "", "map block claims 8589934592 items of 2 or more bytes each"},
		{"a block size past the end", mapOfLongs, kafkacodec.Limits{}, []byte{0x01, 0x80, 0x80, 0x04, 0x02, 'k', 0x02, 0x00}, avro.ErrBlockSize, "", "says 32768 bytes, its 1 items take 3"},
		{"a string longer than the value", `"string"`, kafkacodec.Limits{}, []byte{0xfe, 0xff, 0xff, 0xff, 0x0f, 'a'}, avro.ErrTruncated, "", "string needs 2147483647 bytes, 1 are left"},
		{"2^33 nulls: only the item limit bounds them", nulls, kafkacodec.Limits{}, []byte{0x80, 0x80, 0x80, 0x80, 0x40, 0x00}, nil, "MaxItems",
			"at least 8589934592 array items and map entries, more than Limits.MaxItems (6291456) allows; if such values are legitimate, raise it with WithLimits"},
		{"items over the limit across blocks", nulls, small, []byte{0xc8, 0x01, 0x02, 0x00}, nil, "MaxItems", "101 array items"},
		{"a string over the limit", `"string"`, small, append([]byte{0x82, 0x01}, make([]byte, 65)...), nil, "MaxBytes", "65 bytes, more than Limits.MaxBytes (64)"},
		{"nesting over the limit", list, small, []byte{2, 2, 2, 2, 2, 2, 2, 2, 0}, nil, "MaxDepth", "Limits.MaxDepth (8)"},
		{"a value over the size limit", `"bytes"`, kafkacodec.Limits{MaxValueSize: 4}, []byte{0x08, 1, 2, 3, 4}, nil, "MaxValueSize", "the value is 5 bytes"},
		{"a block size that lies", mapOfLongs, kafkacodec.Limits{}, []byte{0x01, 0x02, 0x02, 'k', 0x02, 0x00}, avro.ErrBlockSize, "", "says 1 bytes, its 1 items take 3"},
		{"a boolean of 2", kinds, kafkacodec.Limits{}, []byte{2, 0, 0}, avro.ErrMalformed, "", "flag, at byte 0: not an Avro value of the writer's schema: boolean byte 0x02"},
		{"an enum index out of range", kinds, kafkacodec.Limits{}, []byte{1, 4, 0}, avro.ErrMalformed, "", "color, at byte 2: not an Avro value of the writer's schema: enum index 2, the enum has 2 symbols"},
		{"a union index out of range", list, kafkacodec.Limits{}, []byte{2, 4}, avro.ErrMalformed, "", "next[1].next, at byte 2: not an Avro value of the writer's schema: union index 2, the union has 2 branches"},
		{"an int of 33 bits", kinds, kafkacodec.Limits{}, []byte{1, 0, 0x80, 0x80, 0x80, 0x80, 0x10}, avro.ErrOverflow, "", "int is more than 32 bits"},
		{"an int of 6 bytes", kinds, kafkacodec.Limits{}, []byte{1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, avro.ErrOverflow, "", "int is more than 32 bits"},
		{"a negative string length", `"string"`, kafkacodec.Limits{}, []byte{0x01}, avro.ErrMalformed, "", "string length -1 is negative"},
		{"a map's key cut short", mapOfLongs, kafkacodec.Limits{}, []byte{0x02, 0x08, 'k'}, avro.ErrTruncated, "", "[0], at byte 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := avro.New(avro.WithSchema(tc.schema), avro.WithLimits(tc.limits))
			if err != nil {
				t.Fatal(err)
			}
			var v any
			err = c.DecodeKafka(ctx, confluent(1, tc.body), nil, &v)
			var de *kafkacodec.DecodeError
			if !errors.As(err, &de) || batch.Classify(err) != batch.ClassPermanent || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err %v, want a permanent DecodeError that says %q", err, tc.says)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("err %v, want errors.Is %v", err, tc.is)
			}
			var le *kafkacodec.LimitError
			if errors.As(err, &le) != (tc.limit != "") || (le != nil && le.Limit != tc.limit) {
				t.Fatalf("err %v, want a LimitError on %q", err, tc.limit)
			}
		})
	}
}

// TestLimitsAtTheirEdge: a value exactly at a limit decodes; one item,
// byte or level more fails.
func TestLimitsAtTheirEdge(t *testing.T) {
	ctx := context.Background()
	l := kafkacodec.Limits{MaxItems: 3, MaxBytes: 3, MaxDepth: 4, MaxValueSize: 8}
	list := `{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}`
	for _, tc := range []struct {
		schema   string
		ok, fail []byte
	}{
		{`{"type":"array","items":"null"}`, []byte{6, 0}, []byte{8, 0}},
		{`"string"`, []byte{6, 'a', 'b', 'c'}, []byte{8, 'a', 'b', 'c', 'd'}},
		{list, []byte{2, 0}, []byte{2, 2, 0}}, // record, union, record, union: 4 levels; then 6
		{`"bytes"`, []byte{6, 1, 2, 3}, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0}},
	} {
		c := avro.Must(avro.WithSchema(tc.schema), avro.WithLimits(l), avro.WithWire(kafkacodec.WirePlain))
		var v any
		if err := c.DecodeKafka(ctx, tc.ok, nil, &v); err != nil {
			t.Errorf("%s %x: %v", tc.schema, tc.ok, err)
		}
		var le *kafkacodec.LimitError
		if err := c.DecodeKafka(ctx, tc.fail, nil, &v); !errors.As(err, &le) {
			t.Errorf("%s %x: err %v, want a LimitError", tc.schema, tc.fail, err)
		}
	}
	if _, err := avro.New(avro.WithSchema(orderV1), avro.WithLimits(kafkacodec.Limits{MaxItems: -1, MaxDepth: -2})); err == nil ||
		!strings.Contains(err.Error(), "Limits.MaxItems is -1") || !strings.Contains(err.Error(), "Limits.MaxDepth is -2") {
		t.Fatalf("negative limits: %v", err)
	}
}

// TestTruncatedValueThroughHandler: in a Kafka batch, a cut-short value
// fails only its own record, permanently, and the error names its offset.
func TestTruncatedValueThroughHandler(t *testing.T) {
	body := encode(t, order9Schema, sampleOrder9())
	var kb sevents.KafkaBuilder
	kb.Add("orders", 0, nil, confluent(4, body))
	kb.Add("orders", 1, nil, confluent(4, body[:len(body)-3]))
	kb.Add("orders", 2, nil, confluent(4, body))
	raw, err := json.Marshal(kb.Event())
	if err != nil {
		t.Fatal(err)
	}
	var failed []error
	h := handlers.MustKafka(func(_ context.Context, r handlers.KafkaRecord[Order9]) error {
		if r.Value.ID != "ord-000042" {
			t.Errorf("offset %d decoded to %+v", r.Raw.Offset, r.Value)
		}
		return nil
	}, handlers.WithKafkaValue(avro.Must(avro.WithSchema(order9Schema))), handlers.WithLogger(slog.New(slog.DiscardHandler)),
		handlers.WithOnBatch(func(_ context.Context, r handlers.BatchReport) {
			for _, o := range r.Records {
				if o.Err != nil {
					failed = append(failed, o.Err)
				}
			}
		}))
	out, err := h.Invoke(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	var resp sevents.KafkaEventResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier.Partition != "orders-1" {
		t.Fatalf("failures %+v, want orders-1 alone", resp.BatchItemFailures)
	}
	var ke *handlers.KafkaDecodeError
	if len(failed) != 1 || !errors.As(failed[0], &ke) || ke.Offset != 0 || ke.Partition != 1 || !errors.Is(failed[0], avro.ErrTruncated) ||
		batch.Classify(failed[0]) != batch.ClassPermanent {
		t.Fatalf("failure %v, want a permanent KafkaDecodeError of orders-1 wrapping ErrTruncated", failed)
	}
}
