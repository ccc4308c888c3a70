package protobuf_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/kafkacodec/protobuf"
)

// FuzzBound checks the count DecodeKafka makes before the Protobuf library
// decodes a value against the library: it never panics; bytes it calls
// malformed the library rejects too; bytes the library decodes it accepts
// unless a limit is reached; and what it accepts decodes within a bound
// the limits set. DecodeKafka itself fails only with DecodeErrors.
func FuzzBound(f *testing.F) {
	file, _ := proto.Marshal(&descriptorpb.FileDescriptorProto{Name: proto.String("a.proto"), MessageType: []*descriptorpb.DescriptorProto{
		{Name: proto.String("M"), Field: []*descriptorpb.FieldDescriptorProto{message()}, NestedType: []*descriptorpb.DescriptorProto{{Name: proto.String("N")}}}}})
	st, _ := structpb.NewStruct(map[string]any{"a": 1.5, "b": []any{"x", true, nil}, "c": map[string]any{"d": "e"}})
	stb, _ := proto.Marshal(st)
	for _, seed := range [][]byte{file, stb, runs(50), emptyMessages(50), nested(80), unknownOf(10), {0x22, 0x80}, {0x0a}} {
		for _, which := range []uint8{0, 1, 2} {
			f.Add(which, seed)
			f.Add(which, seed[:len(seed)/2])
		}
	}
	types := []func() proto.Message{
		func() proto.Message { return new(descriptorpb.FileDescriptorProto) },
		func() proto.Message { return new(structpb.Struct) },
		func() proto.Message { return new(descriptorpb.SourceCodeInfo_Location) },
	}
	l := kafkacodec.Limits{MaxItems: 1024, MaxDepth: 64, MaxBytes: 1024}
	c := protobuf.Must(protobuf.WithWire(kafkacodec.WirePlain), protobuf.WithLimits(l))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		into := types[int(which)%len(types)]
		berr := protobuf.Bound(into(), data, l)
		var le *kafkacodec.LimitError
		switch {
		case berr == nil:
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := c.DecodeKafka(context.Background(), data, nil, into())
			runtime.ReadMemStats(&after)
			if n, most := after.TotalAlloc-before.TotalAlloc, uint64(1<<20+64*len(data)); n > most {
				t.Fatalf("%x: decoding a counted value of %d bytes allocated %d bytes (at most %d)", data, len(data), n, most)
			}
			var de *kafkacodec.DecodeError
			if err != nil && !errors.As(err, &de) {
				t.Fatalf("%x: %v is not a DecodeError", data, err)
			}
		case errors.As(berr, &le):
		case errors.Is(berr, protobuf.ErrWire):
			if err := proto.Unmarshal(data, into()); err == nil {
				t.Fatalf("%x: the library decodes what the count calls malformed: %v", data, berr)
			}
		default:
			t.Fatalf("%x: a rejection of no known kind: %v", data, berr)
		}
	})
}
