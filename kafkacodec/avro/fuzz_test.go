package avro_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	hamba "github.com/hamba/avro/v2"

	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/kafkacodec/avro"
	"github.com/sluicehq/sluice/kafkacodec/internal/wire"
)

// sinkSchema has every kind of Avro type, and refers to itself.
const sinkSchema = `{"type":"record","name":"Sink","fields":[
	{"name":"b","type":"boolean"},
	{"name":"i","type":"int"},
	{"name":"l","type":"long"},
	{"name":"f","type":"float"},
	{"name":"d","type":"double"},
	{"name":"by","type":"bytes"},
	{"name":"s","type":"string"},
	{"name":"fx","type":{"type":"fixed","name":"F4","size":4}},
	{"name":"e","type":{"type":"enum","name":"Color","symbols":["RED","GREEN","BLUE"]}},
	{"name":"u","type":["null","long"]},
	{"name":"a","type":{"type":"array","items":"int"}},
	{"name":"m","type":{"type":"map","values":"boolean"}},
	{"name":"next","type":["null","Sink"]}]}`

type Sink struct {
	B    bool            `avro:"b"`
	I    int32           `avro:"i"`
	L    int64           `avro:"l"`
	F    float32         `avro:"f"`
	D    float64         `avro:"d"`
	By   []byte          `avro:"by"`
	S    string          `avro:"s"`
	Fx   [4]byte         `avro:"fx"`
	E    string          `avro:"e"`
	U    *int64          `avro:"u"`
	A    []int32         `avro:"a"`
	M    map[string]bool `avro:"m"`
	Next *Sink           `avro:"next"`
}

const listSchema = `{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}`

type Node struct {
	Next *Node `avro:"next"`
}

// fuzzSchemas are the writer's schemas the fuzz targets pick from, each
// with a Go type to decode into (nil: generic decoding only).
var fuzzSchemas = []struct {
	text string
	into func() any
}{
	{order9Schema, func() any { return new(Order9) }},
	{keySchema, func() any { return new(OrderKey) }},
	{sinkSchema, func() any { return new(Sink) }},
	{hostileSchema, func() any { return new(hostile) }},
	{listSchema, func() any { return new(Node) }},
	// Items that encode in no bytes. (The library's generic decoding does
	// not take null items, so an empty record stands for them.)
	{`{"type":"array","items":{"type":"record","name":"Empty","fields":[]}}`, nil},
	{`{"type":"map","values":{"type":"record","name":"Empty","fields":[]}}`, nil},
}

// fuzzLimits are small, so that the fuzzer reaches them.
var fuzzLimits = kafkacodec.Limits{MaxItems: 1024, MaxBytes: 1024, MaxDepth: 64}

// fuzzSeeds are values of fuzzSchemas[i]: encoded ones, every cut of
// them, trailing bytes, the hostile value and its relatives.
func fuzzSeeds(f *testing.F) (seeds []struct {
	which uint8
	data  []byte
}) {
	add := func(which int, data []byte) {
		seeds = append(seeds, struct {
			which uint8
			data  []byte
		}{uint8(which), data})
	}
	five := int64(5)
	values := map[int]any{
		0: sampleOrder9(),
		1: OrderKey{"acme", "cus-981"},
		2: Sink{B: true, I: -7, L: 1 << 40, F: 1.5, D: -2.25, By: []byte{1, 2}, S: "s", Fx: [4]byte{9, 8, 7, 6}, E: "BLUE", U: &five,
			A: []int32{1, 2, 3}, M: map[string]bool{"k": true}, Next: &Sink{E: "RED", A: []int32{}, M: map[string]bool{}}},
		3: hostile{ID: "x", Note: "\x00", Items: []int64{1, -1}},
		4: Node{Next: &Node{Next: &Node{}}},
	}
	for _, counted := range []bool{false, true} {
		api := hamba.Config{DisableBlockSizeHeader: counted}.Freeze()
		for which, v := range values {
			b := encodeWith(f, api, fuzzSchemas[which].text, v)
			for cut := range len(b) + 1 {
				add(which, b[:cut])
			}
			add(which, append(b[:len(b):len(b)], 0x02, 'x'))
		}
	}
	add(3, hostileValue[wire.ConfluentHeaderSize:])
	add(5, []byte{0x80, 0x80, 0x80, 0x80, 0x40, 0x00})      // 2^33 empty records
	add(5, []byte{0x80, 0x10, 0x00})                        // 1024 of them: at the limit
	add(6, []byte{0x01, 0x02, 0x02, 'k', 0x00})             // a block size that lies
	add(6, []byte{0x80, 0x80, 0x80, 0x80, 0x40, 0x02, 'k'}) // 2^33 entries
	add(2, append(make([]byte, 5), 0x80, 0x80, 0x80, 0x80)) // a long cut mid-varint
	return seeds
}

// FuzzValidate checks the validation DecodeKafka runs before the Avro
// library decodes a value against the library itself: it never panics;
// what it accepts the library decodes (generically and into the Go type)
// without error, reading every byte, and without allocating more than
// the limits allow for; what the library decodes into the Go type reading
// every byte (with its own caps at the same limits), it accepts, unless
// the value breaks a rule the library does not check (an int of more than
// 32 bits, a block byte size that lies) or one of the codec's Limits.
// Every rejection says which kind it is.
func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s.which, s.data)
	}
	validators := make([]func([]byte) error, len(fuzzSchemas))
	schemas := make([]hamba.Schema, len(fuzzSchemas))
	for i, s := range fuzzSchemas {
		v, err := avro.Validator(s.text, fuzzLimits)
		if err != nil {
			f.Fatal(err)
		}
		validators[i], schemas[i] = v, hamba.MustParse(s.text)
	}
	api := hamba.Config{MaxByteSliceSize: fuzzLimits.MaxBytes, MaxSliceAllocSize: fuzzLimits.MaxItems}.Freeze()
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		i := int(which) % len(fuzzSchemas)
		s, into := schemas[i], fuzzSchemas[i].into
		err := validators[i](data)
		if err == nil {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			r := hamba.NewReader(nil, 0, hamba.WithReaderConfig(api)).Reset(data)
			r.ReadNext(s)
			if err := readAll(r); err != nil {
				t.Fatalf("schema %d, %x: validated, but the library's generic decoding: %v", i, data, err)
			}
			runtime.ReadMemStats(&after)
			if n, most := after.TotalAlloc-before.TotalAlloc, uint64(64<<10+1024*len(data)+256*fuzzLimits.MaxItems); n > most {
				t.Fatalf("schema %d, %x: decoding a validated value of %d bytes allocated %d bytes (at most %d)", i, data, len(data), n, most)
			}
			if into != nil {
				r.Reset(data)
				r.ReadVal(s, into())
				if err := readAll(r); err != nil {
					t.Fatalf("schema %d, %x: validated, but the library's decoding into %T: %v", i, data, into(), err)
				}
			}
			return
		}
		var le *kafkacodec.LimitError
		lenient := errors.Is(err, avro.ErrOverflow) || errors.Is(err, avro.ErrBlockSize) || errors.As(err, &le)
		if !lenient && !errors.Is(err, avro.ErrTruncated) && !errors.Is(err, avro.ErrTrailingBytes) && !errors.Is(err, avro.ErrMalformed) {
			t.Fatalf("schema %d, %x: a rejection of no known kind: %v", i, data, err)
		}
		if into == nil || lenient {
			return
		}
		if libraryDecodes(api, s, data, into()) == nil {
			t.Fatalf("schema %d, %x: the library decodes it reading every byte, the validation rejects it: %v", i, data, err)
		}
	})
}

// readAll returns r's error, or one if r has bytes left.
func readAll(r *hamba.Reader) error {
	if r.Error != nil {
		return r.Error
	}
	r.Peek()
	if r.Error == nil {
		return errors.New("bytes left over")
	}
	r.Error = nil
	return nil
}

// libraryDecodes decodes data the validation rejected with the library
// alone, its caps set, and returns nil if it read every byte without
// error. The library may panic on such bytes: that is an error too.
func libraryDecodes(api hamba.API, s hamba.Schema, data []byte, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	r := hamba.NewReader(nil, 0, hamba.WithReaderConfig(api)).Reset(data)
	r.ReadVal(s, v)
	return readAll(r)
}

// FuzzDecodeKafka runs framed values through codecs with and without a
// registry and schema resolution: it never panics, a failure is a
// *kafkacodec.DecodeError, and a value decodes only if the writer's
// validation accepts its body.
func FuzzDecodeKafka(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		if s.which == 0 {
			f.Add(confluent(4, s.data))
		}
	}
	f.Add(hostileValue)
	f.Add(confluent(4, nil))
	f.Add(confluent(3, encode(f, orderV3, orderV3Value{ID: "o", Channel: "web"})))
	f.Add(confluent(1, encode(f, orderV1, Order{ID: "o"})))
	f.Add(glue(true, encode(f, orderV2, Order{ID: "o"})))
	reg := &registry{schemas: map[string]string{"1": orderV1, "2": orderV2, "3": orderV3, "4": order9Schema, glueUUID: orderV2}}
	resolving := avro.Must(avro.WithSchema(orderV2), avro.WithRegistry(reg), avro.WithLimits(fuzzLimits))
	writers := avro.Must(avro.WithRegistry(reg), avro.WithLimits(fuzzLimits))
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range []*avro.Codec{resolving, writers} {
			var o Order
			var m map[string]any
			for _, v := range []any{&o, &m} {
				err := c.DecodeKafka(ctx, data, nil, v)
				var de *kafkacodec.DecodeError
				if err != nil && !errors.As(err, &de) {
					t.Fatalf("%x: %v is not a DecodeError", data, err)
				}
				if err != nil || len(data) < wire.ConfluentHeaderSize || data[0] != 0 {
					continue
				}
				id := fmt.Sprint(uint32(data[1])<<24 | uint32(data[2])<<16 | uint32(data[3])<<8 | uint32(data[4]))
				validate, verr := avro.Validator(reg.schemas[id], fuzzLimits)
				if verr != nil {
					t.Fatalf("%x: decoded with schema %s: %v", data, id, verr)
				}
				if verr := validate(data[wire.ConfluentHeaderSize:]); verr != nil {
					t.Fatalf("%x: decoded, though its writer's schema %s rejects it: %v", data, id, verr)
				}
			}
		}
	})
}
