package kafkacodec_test

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"testing"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/kafkacodec/internal/wire"
)

var glueID = [16]byte{0xa1, 0xb2, 0xc3, 0xd4, 0x56, 0x78, 0x90, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab}

const glueUUID = "a1b2c3d4-5678-90ab-cdef-0123456789ab"

func confluent(id uint32, payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, id), payload...)
}

func glue(compression byte, payload []byte) []byte {
	out := append([]byte{3, compression}, glueID[:]...)
	if compression == wire.GlueCompressionZlib {
		var b bytes.Buffer
		w := zlib.NewWriter(&b)
		w.Write(payload)
		w.Close()
		payload = b.Bytes()
	}
	return append(out, payload...)
}

func TestUnframeRoundTrips(t *testing.T) {
	body := []byte(`{"id":"o-1"}`)
	for _, tc := range []struct {
		name      string
		data      []byte
		meta      *sevents.KafkaSchemaMetadata
		wire      kafkacodec.Wire
		wantWire  kafkacodec.Wire
		wantID    string
		validated bool
	}{
		{"plain auto", body, nil, kafkacodec.WireAuto, kafkacodec.WirePlain, "", false},
		{"plain configured", body, nil, kafkacodec.WirePlain, kafkacodec.WirePlain, "", false},
		{"confluent auto", confluent(7, body), nil, kafkacodec.WireAuto, kafkacodec.WireConfluent, "7", false},
		{"confluent big id", confluent(1<<31+5, body), nil, kafkacodec.WireConfluent, kafkacodec.WireConfluent, "2147483653", false},
		{"glue auto", glue(0, body), nil, kafkacodec.WireAuto, kafkacodec.WireGlue, glueUUID, false},
		{"glue zlib", glue(5, body), nil, kafkacodec.WireGlue, kafkacodec.WireGlue, glueUUID, false},
		{"esm confluent", body, &sevents.KafkaSchemaMetadata{DataFormat: "AVRO", SchemaID: "12"}, kafkacodec.WireAuto, kafkacodec.WireConfluent, "12", true},
		{"esm glue", body, &sevents.KafkaSchemaMetadata{DataFormat: "AVRO", SchemaID: glueUUID}, kafkacodec.WireAuto, kafkacodec.WireGlue, glueUUID, true},
		{"configured wire wins over metadata", confluent(3, body), &sevents.KafkaSchemaMetadata{SchemaID: "3"}, kafkacodec.WireConfluent, kafkacodec.WireConfluent, "3", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := kafkacodec.Unframe(tc.data, tc.meta, tc.wire)
			if err != nil {
				t.Fatal(err)
			}
			if f.Wire != tc.wantWire || f.SchemaID != tc.wantID || f.Validated != tc.validated || !bytes.Equal(f.Payload, body) {
				t.Fatalf("got %+v (payload %q), want %v id %q validated %v", f, f.Payload, tc.wantWire, tc.wantID, tc.validated)
			}
		})
	}
}

func TestUnframeRejectsMalformedHeaders(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		wire kafkacodec.Wire
	}{
		{"confluent too short", []byte{0, 0, 1}, kafkacodec.WireConfluent},
		{"confluent wrong magic", []byte{1, 0, 0, 0, 1, 'x'}, kafkacodec.WireConfluent},
		{"glue too short", []byte{3, 0, 1, 2}, kafkacodec.WireGlue},
		{"glue wrong version", append([]byte{2, 0}, make([]byte, 16)...), kafkacodec.WireGlue},
		{"glue unknown compression", append([]byte{3, 9}, make([]byte, 16)...), kafkacodec.WireGlue},
		{"glue zlib garbage", append(append([]byte{3, 5}, glueID[:]...), 1, 2, 3), kafkacodec.WireGlue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kafkacodec.Unframe(tc.data, nil, tc.wire)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.name != "glue zlib garbage" && !errors.Is(err, kafkacodec.ErrWireFormat) {
				t.Fatalf("%v does not wrap ErrWireFormat", err)
			}
		})
	}
}
