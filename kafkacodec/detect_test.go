package kafkacodec

import (
	"encoding/binary"
	"testing"
)

var glueID = [16]byte{0xa1, 0xb2, 0xc3, 0xd4, 0x56, 0x78, 0x90, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab}

func TestDetect(t *testing.T) {
	confluent := func(id uint32) []byte { return binary.BigEndian.AppendUint32([]byte{0}, id) }
	glue := func(compression byte) []byte { return append([]byte{3, compression}, glueID[:]...) }
	for _, tc := range []struct {
		data []byte
		want Wire
	}{
		{nil, WirePlain},
		{[]byte("{}"), WirePlain},
		{[]byte{0, 0, 0, 1}, WirePlain}, // too short for an id
		{confluent(1), WireConfluent},
		{glue(0), WireGlue},
		{append([]byte{3, 7}, glueID[:]...), WirePlain}, // unknown compression
		{glue(0)[:17], WirePlain},
	} {
		if got := detect(tc.data); got != tc.want {
			t.Errorf("detect(%x) = %v, want %v", tc.data, got, tc.want)
		}
	}
}
