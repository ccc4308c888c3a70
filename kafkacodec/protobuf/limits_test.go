package protobuf_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/kafkacodec/protobuf"
)

// runs is a SourceCodeInfo.Location whose packed path comes in n runs of
// one element each: the library copies the path so far for each run.
func runs(n int) []byte {
	return bytes.Repeat([]byte{0x0a, 0x01, 0x00}, n)
}

// emptyMessages is a FileDescriptorProto with n empty message_type
// entries: two bytes each, a whole DescriptorProto each once decoded.
func emptyMessages(n int) []byte {
	return bytes.Repeat([]byte{0x22, 0x00}, n)
}

// unknownOf is an unknown length-delimited field of n bytes.
func unknownOf(n int) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, 99, protowire.BytesType), make([]byte, n))
}

// nested is a DescriptorProto nesting depth messages (itself included).
func nested(depth int) []byte {
	var b []byte
	for range depth - 1 {
		b = protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), b)
	}
	return b
}

// TestLimits: a value at a limit decodes, one beyond it fails as a
// permanent DecodeError wrapping a LimitError on that limit, and the
// defaults stop the values that cost the library more than their size.
func TestLimits(t *testing.T) {
	ctx := context.Background()
	small := kafkacodec.Limits{MaxItems: 1000, MaxDepth: 5, MaxBytes: 64, MaxValueSize: 4096}
	name := func(n int) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), bytes.Repeat([]byte{'n'}, n))
	}
	twoRuns := append(runs(1), runs(1)...)
	for _, tc := range []struct {
		name    string
		limits  kafkacodec.Limits
		into    func() proto.Message
		ok, bad []byte
		limit   string
		says    string
	}{
		{"messages", small, func() proto.Message { return new(descriptorpb.FileDescriptorProto) }, emptyMessages(1000), emptyMessages(1001),
			"MaxItems", "the value holds at least 1001 messages, repeated elements and map entries, more than Limits.MaxItems (1000) allows; if such values are legitimate, raise it with WithLimits"},
		{"packed runs", small, func() proto.Message { return new(descriptorpb.SourceCodeInfo_Location) }, runs(45), runs(46),
			"MaxItems", "packed field path comes in so many separate runs that decoding them copies 1035 elements"},
		{"packed runs, defaults", kafkacodec.Limits{}, func() proto.Message { return new(descriptorpb.SourceCodeInfo_Location) }, twoRuns, runs(40000),
			"MaxItems", "separate runs that decoding them copies 6292378 elements, more than Limits.MaxItems (6291456)"},
		{"depth", small, func() proto.Message { return new(descriptorpb.DescriptorProto) }, nested(5), nested(6),
			"MaxDepth", "the value nests 6 messages deep, more than Limits.MaxDepth (5)"},
		{"string length", small, func() proto.Message { return new(descriptorpb.FieldDescriptorProto) }, name(64), name(65),
			"MaxBytes", "field name is 65 bytes, more than Limits.MaxBytes (64)"},
		{"value size", small, func() proto.Message { return new(descriptorpb.FileDescriptorProto) }, unknownOf(4092), unknownOf(4093),
			"MaxValueSize", "the value is 4097 bytes, more than Limits.MaxValueSize (4096)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := protobuf.New(protobuf.WithWire(kafkacodec.WirePlain), protobuf.WithLimits(tc.limits))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.DecodeKafka(ctx, tc.ok, nil, tc.into()); err != nil {
				t.Fatalf("at the limit: %v", err)
			}
			err = c.DecodeKafka(ctx, tc.bad, nil, tc.into())
			var de *kafkacodec.DecodeError
			var le *kafkacodec.LimitError
			if !errors.As(err, &de) || !errors.As(err, &le) || le.Limit != tc.limit || batch.Classify(err) != batch.ClassPermanent || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("beyond the limit: %v, want a permanent DecodeError on %s that says %q", err, tc.limit, tc.says)
			}
		})
	}
	if _, err := protobuf.New(protobuf.WithLimits(kafkacodec.Limits{MaxValueSize: -1})); err == nil || !strings.Contains(err.Error(), "Limits.MaxValueSize is -1") {
		t.Fatalf("a negative limit: %v", err)
	}
}

// TestLimitsKeepValues: what the count reads as the library does (two
// packed runs merge, a map, an unknown field, a group-typed unknown)
// decodes as it would without it.
func TestLimitsKeepValues(t *testing.T) {
	loc := &descriptorpb.SourceCodeInfo_Location{Path: []int32{1, 2, 300}, Span: []int32{4, 5, 6}, LeadingComments: proto.String("c")}
	enc, err := proto.Marshal(loc)
	if err != nil {
		t.Fatal(err)
	}
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7)
	group := protowire.AppendTag(protowire.AppendTag(nil, 98, protowire.StartGroupType), 98, protowire.EndGroupType)
	data := append(append(append(append([]byte{}, enc...), enc...), unknown...), group...)
	want := &descriptorpb.SourceCodeInfo_Location{}
	if err := proto.Unmarshal(data, want); err != nil {
		t.Fatal(err)
	}
	got := &descriptorpb.SourceCodeInfo_Location{}
	if err := protobuf.Must(protobuf.WithWire(kafkacodec.WirePlain)).DecodeKafka(context.Background(), data, nil, got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) || len(got.Path) != 6 {
		t.Fatalf("got %v, want %v", got, want)
	}
}
