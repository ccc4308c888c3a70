package protobuf_test

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/batch"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/kafkacodec/protobuf"
)

var glueID = [16]byte{0xa1, 0xb2, 0xc3, 0xd4, 0x56, 0x78, 0x90, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab}

const glueUUID = "a1b2c3d4-5678-90ab-cdef-0123456789ab"

// A generated message type stands in for a user's (FieldDescriptorProto
// has strings, numbers and enums).
func message() *descriptorpb.FieldDescriptorProto {
	return &descriptorpb.FieldDescriptorProto{Name: proto.String("amount_cents"), Number: proto.Int32(2),
		Type: descriptorpb.FieldDescriptorProto_TYPE_INT64.Enum(), JsonName: proto.String("amountCents")}
}

func confluentIndexes(idx ...int64) []byte {
	if len(idx) == 1 && idx[0] == 0 {
		return []byte{0}
	}
	b := binary.AppendVarint(nil, int64(len(idx)))
	for _, i := range idx {
		b = binary.AppendVarint(b, i)
	}
	return b
}

func TestRoundTrips(t *testing.T) {
	enc, err := proto.Marshal(message())
	if err != nil {
		t.Fatal(err)
	}
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	confluent := func(id uint32) []byte { return binary.BigEndian.AppendUint32([]byte{0}, id) }
	glue := append([]byte{3, 0}, glueID[:]...)
	auto := protobuf.Must()
	for _, tc := range []struct {
		name  string
		codec *protobuf.Codec
		data  []byte
		meta  *sevents.KafkaSchemaMetadata
	}{
		{"plain", protobuf.Must(protobuf.WithWire(kafkacodec.WirePlain)), enc, nil},
		{"confluent, first message", auto, cat(confluent(5), confluentIndexes(0), enc), nil},
		{"confluent, nested message", auto, cat(confluent(5), confluentIndexes(1, 0, 2), enc), nil},
		{"glue", auto, cat(glue, binary.AppendUvarint(nil, 3), enc), nil},
		{"validated (SOURCE), confluent id keeps the indexes", auto, cat(confluentIndexes(0), enc), &sevents.KafkaSchemaMetadata{DataFormat: "PROTOBUF", SchemaID: "5"}},
		{"validated (SOURCE), glue id keeps the index", auto, cat([]byte{0}, enc), &sevents.KafkaSchemaMetadata{DataFormat: "PROTOBUF", SchemaID: glueUUID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The target of a KafkaRecord[*pb.M] is a **pb.M.
			var got *descriptorpb.FieldDescriptorProto
			if err := tc.codec.DecodeKafka(context.Background(), tc.data, tc.meta, &got); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, message()) {
				t.Fatalf("got %v", got)
			}
			// A message itself works too.
			m := &descriptorpb.FieldDescriptorProto{Name: proto.String("stale")}
			if err := tc.codec.DecodeKafka(context.Background(), tc.data, tc.meta, m); err != nil || !proto.Equal(m, message()) {
				t.Fatalf("into a message: %v %v", m, err)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	c := protobuf.Must()
	var m *descriptorpb.FieldDescriptorProto
	err := c.DecodeKafka(context.Background(), append(binary.BigEndian.AppendUint32([]byte{0}, 8), 0, 0x0a, 0x10, 'x'), nil, &m)
	var de *kafkacodec.DecodeError
	if !errors.As(err, &de) || de.SchemaID != "8" || batch.Classify(err) != batch.ClassPermanent || !strings.Contains(err.Error(), "protobuf (confluent schema id 8)") {
		t.Fatalf("truncated message: %v", err)
	}
	err = c.DecodeKafka(context.Background(), append(binary.BigEndian.AppendUint32([]byte{0}, 8), 0x80), nil, &m)
	if !errors.Is(err, kafkacodec.ErrWireFormat) {
		t.Fatalf("bad message indexes: %v", err)
	}
	var s struct{ A int }
	if err := c.DecodeKafka(context.Background(), []byte{}, nil, &s); err == nil || !strings.Contains(err.Error(), "generated message type") {
		t.Fatalf("into a struct: %v", err)
	}
	if _, err := protobuf.New(protobuf.WithWire(7)); err == nil {
		t.Fatal("unknown wire: no error")
	}
}
