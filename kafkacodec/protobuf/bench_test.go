package protobuf_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/kafkacodec/protobuf"
)

// BenchmarkDecode is one Confluent-framed message through DecodeKafka: a
// FileDescriptorProto with a message of three fields (strings, enums,
// numbers, nested messages; 104 bytes).
func BenchmarkDecode(b *testing.B) {
	m := &descriptorpb.FileDescriptorProto{Name: proto.String("orders.proto"), Package: proto.String("shop"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("Order"), Field: []*descriptorpb.FieldDescriptorProto{
			message(),
			{Name: proto.String("id"), Number: proto.Int32(1), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()},
			{Name: proto.String("note"), Number: proto.Int32(3), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()},
		}}}}
	enc, err := proto.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	data := append(append([]byte{0, 0, 0, 0, 7}, 0), enc...)
	c := protobuf.Must()
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var v *descriptorpb.FileDescriptorProto
		if err := c.DecodeKafka(ctx, data, nil, &v); err != nil {
			b.Fatal(err)
		}
	}
}
