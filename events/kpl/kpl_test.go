package kpl

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

// The format is the KPL's "aggregation-format.md"
// (github.com/awslabs/amazon-kinesis-producer/blob/master/aggregation-format.md,
// also described under "Consumer-side deaggregation" in the Kinesis Data
// Streams developer guide,
// docs.aws.amazon.com/streams/latest/dev/kinesis-kpl-consumer-deaggregation.html):
// magic F3 89 9A C2, the protobuf AggregatedRecord, the MD5 of the protobuf.

func readVector(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestKPLWrittenRecords reads aggregates the KPL wrote (see
// testdata/README.md) into the user records it was given.
func TestKPLWrittenRecords(t *testing.T) {
	t.Run("with explicit hash keys", func(t *testing.T) {
		recs, ok, err := Deaggregate(readVector(t, "kpl-with-ehks.b64"))
		if !ok || err != nil {
			t.Fatalf("ok %v, err %v", ok, err)
		}
		want := []Record{
			{PartitionKey: "fc03dd88-3e79-448a-b01a-7cf1bd47b784", ExplicitHashKey: "38486495867508399078159723846051807020", Data: []byte("RECORD 22 peeobhczbzdmskboupgyq\n")},
			{PartitionKey: "cae41b1c-ea61-43f2-90be-b8755ebf88e2", ExplicitHashKey: "193787600037681706952143357071916352604", Data: []byte("RECORD 23 uswkxftxroeusscxsjhno\n")},
			{PartitionKey: "d490690c-e74d-4db2-a3c8-d8f2f184fd23", ExplicitHashKey: "266880436964932424265466916734068684439", Data: []byte("RECORD 24 casehdgivfaxeustlyszy\n")},
			{PartitionKey: "c924bc09-b85e-47f1-b32e-336522ee53c8", ExplicitHashKey: "339606600942967391854603552402021847292", Data: []byte("RECORD 25 nvffvpmuogdopjhamevrk\n")},
		}
		if !reflect.DeepEqual(recs, want) {
			t.Fatalf("got %+v\nwant %+v", recs, want)
		}
	})
	t.Run("without explicit hash keys", func(t *testing.T) {
		recs, ok, err := Deaggregate(readVector(t, "kpl-no-ehks.b64"))
		if !ok || err != nil {
			t.Fatalf("ok %v, err %v", ok, err)
		}
		keys := []string{"78feb12a-dba0-45ca-a91e-bb1f2f1819b4", "c2a75787-469b-4310-840d-d486dca7eb5e",
			"650e9362-572b-4427-b3fc-13549d7e5ae5", "1d8d9600-00b7-46f3-a983-de83477540c0",
			"f2e718a0-389b-494a-b796-3355b07569cc", "965b8da4-a6bd-4755-81c9-e7181ab7dc9a",
			"d693c5f0-5772-46c9-8d86-08c7055bdb75", "8d92476b-eb89-4e81-99fb-c2ba63ad6d90"}
		if len(recs) != len(keys) {
			t.Fatalf("%d records, want %d", len(recs), len(keys))
		}
		for i, r := range recs {
			if r.PartitionKey != keys[i] || r.ExplicitHashKey != "" || !bytes.HasPrefix(r.Data, fmt.Appendf(nil, "RECORD %d ", 18+i)) {
				t.Errorf("record %d: %q %q %q", i, r.PartitionKey, r.ExplicitHashKey, r.Data)
			}
		}
		if string(recs[0].Data) != "RECORD 18 iklrpsvyhxnerodfeheru\n" || string(recs[7].Data) != "RECORD 25 txbbvnozrwsboxuomqboq\n" {
			t.Fatalf("data %q ... %q", recs[0].Data, recs[7].Data)
		}
	})
}

// TestEncodeAsTheKPL: one user record encodes to the bytes another KPL
// implementation (ex_kpl, a port of the AdRoll Erlang aggregator) documents
// for {"partition_key", "data"}.
func TestEncodeAsTheKPL(t *testing.T) {
	want := []byte{243, 137, 154, 194, 10, 13, 112, 97, 114, 116, 105, 116, 105, 111, 110, 95, 107, 101, 121, 26, 8, 8, 0, 26, 4, 100, 97, 116, 97,
		208, 54, 153, 218, 90, 34, 47, 163, 33, 8, 173, 27, 217, 85, 161, 78}
	got := Encode([]Record{{PartitionKey: "partition_key", Data: []byte("data")}})
	if !bytes.Equal(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	// And the KPL's own aggregates encode back to their bytes.
	for _, name := range []string{"kpl-with-ehks.b64", "kpl-no-ehks.b64"} {
		data := readVector(t, name)
		recs, _, _ := Deaggregate(data)
		if got := Encode(recs); !bytes.Equal(got, data) {
			t.Errorf("%s: Encode of its records differs from the KPL's bytes", name)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	recs := []Record{
		{PartitionKey: "a", Data: []byte(`{"id":1}`)},
		{PartitionKey: "b", ExplicitHashKey: "170141183460469231731687303715884105728", Data: []byte(`{"id":2}`), Tags: []Tag{{Key: "k", Value: "v"}, {Key: "only"}}},
		{PartitionKey: "a", Data: nil},
		{PartitionKey: "", Data: []byte{0, 1, 2}},
	}
	got, ok, err := Deaggregate(Encode(recs))
	if !ok || err != nil {
		t.Fatalf("ok %v err %v", ok, err)
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("got %+v\nwant %+v", got, recs)
	}
	a, ok, err := Parse(Encode(recs))
	if !ok || err != nil || a.Len() != 4 {
		t.Fatalf("Parse: %v %v", ok, err)
	}
	pk, ehk, data, err := a.Keys(1)
	if err != nil || pk != "b" || ehk != recs[1].ExplicitHashKey || string(data) != `{"id":2}` {
		t.Fatalf("Keys(1): %q %q %q %v", pk, ehk, data, err)
	}
	if _, err := a.Record(4); err == nil {
		t.Fatal("Record(4) of 4: no error")
	}
}

// TestOrdinaryRecords: what the KCL passes on as an ordinary record.
func TestOrdinaryRecords(t *testing.T) {
	agg := Encode([]Record{{PartitionKey: "a", Data: []byte("x")}})
	badSum := bytes.Clone(agg)
	badSum[len(badSum)-1] ^= 1
	badBody := bytes.Clone(agg)
	badBody[6] ^= 1
	justSum := append([]byte(Magic), make([]byte, 16)...) // an empty message is not an aggregate
	sum := md5.Sum(nil)
	emptyMsg := append([]byte(Magic), sum[:]...)
	for name, data := range map[string][]byte{
		"nil": nil, "JSON": []byte(`{"orderId":"o-1"}`), "magic only": []byte(Magic),
		"no magic": agg[1:], "md5 mismatch": badSum, "body changed": badBody,
		"magic and 16 zero bytes": justSum, "empty message with its md5": emptyMsg,
	} {
		t.Run(name, func(t *testing.T) {
			recs, ok, err := Deaggregate(data)
			if ok || err != nil || recs != nil || IsAggregated(data) {
				t.Fatalf("ok %v err %v recs %v", ok, err, recs)
			}
		})
	}
}

// withSum makes an aggregate of a hand-written protobuf message.
func withSum(msg []byte) []byte {
	sum := md5.Sum(msg)
	return append(append([]byte(Magic), msg...), sum[:]...)
}

func TestMalformed(t *testing.T) {
	rec := func(fields ...[]byte) []byte { return appendBytesField(nil, 3, bytes.Join(fields, nil)) }
	pk := appendBytesField(nil, 1, []byte("k"))
	idx0 := appendVarintField(nil, 1, 0)
	data := appendBytesField(nil, 3, []byte("d"))
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name, msg string
		in        []byte
	}{
		{"partition key index outside the table", "partition_key_index 1 is outside the table of 1 keys", cat(pk, rec(appendVarintField(nil, 1, 1), data))},
		{"no partition key table", "outside the table of 0 keys", rec(idx0, data)},
		{"explicit hash key index outside the table", "explicit_hash_key_index 0 is outside the table of 0 keys", cat(pk, rec(idx0, appendVarintField(nil, 2, 0), data))},
		{"no partition key index", "has no partition_key_index", cat(pk, rec(data))},
		{"no data", "has no data", cat(pk, rec(idx0))},
		{"tag without key", "a tag has no key", cat(pk, rec(idx0, data, appendBytesField(nil, 4, appendBytesField(nil, 2, []byte("v")))))},
		{"length past the end", "claims 100 bytes", cat(pk, []byte{0x1a, 100, 1, 2})},
		{"huge length", "claims 4611686018427387904 bytes", cat(pk, []byte{0x1a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40})},
		{"varint over 64 bits", "cut off or too long", cat(pk, []byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})},
		{"varint cut off", "cut off or too long", cat(pk, []byte{0x08, 0xff})},
		{"group wire type", "wire type 3", cat(pk, []byte{0x0b})},
		{"field number 0", "field number 0", cat(pk, []byte{0x02, 0x00})},
		{"fixed64 cut off", "fixed64 is cut off", cat(pk, []byte{0x21, 1, 2})},
		{"record body malformed", "user record 0", cat(pk, rec(idx0, []byte{0x1a, 9}))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, ok, err := Deaggregate(withSum(tc.in))
			if !ok || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("ok %v, err %v (recs %v); want ErrMalformed with %q", ok, err, recs, tc.msg)
			}
		})
	}
}

// TestUnknownFieldsSkipped: fields the format does not define, and known
// fields of another wire type, are skipped as protobuf parsers skip them;
// tables may come after the records that use them; a repeated optional
// field keeps its last value.
func TestUnknownFieldsSkipped(t *testing.T) {
	r := bytes.Join([][]byte{
		appendVarintField(nil, 1, 7), appendVarintField(nil, 1, 1), // last wins
		appendBytesField(nil, 3, []byte("d")),
		appendVarintField(nil, 9, 5), {0x2d, 1, 2, 3, 4}, // field 5 fixed32
	}, nil)
	msg := bytes.Join([][]byte{
		appendBytesField(nil, 3, r),
		appendBytesField(nil, 1, []byte("first")), appendVarintField(nil, 1, 3), appendBytesField(nil, 1, []byte("second")),
		{0x79, 1, 2, 3, 4, 5, 6, 7, 8}, // field 15 fixed64
	}, nil)
	recs, ok, err := Deaggregate(withSum(msg))
	if !ok || err != nil || len(recs) != 1 || recs[0].PartitionKey != "second" || string(recs[0].Data) != "d" {
		t.Fatalf("ok %v err %v recs %+v", ok, err, recs)
	}
}

// TestZeroRecords: an aggregate of no user records holds nothing to process.
func TestZeroRecords(t *testing.T) {
	recs, ok, err := Deaggregate(withSum(appendBytesField(nil, 1, []byte("k"))))
	if !ok || err != nil || len(recs) != 0 {
		t.Fatalf("ok %v err %v recs %v", ok, err, recs)
	}
}

func TestSubSequenceKey(t *testing.T) {
	if got := SubSequenceKey("shardId-000000000000:4959", 12); got != "shardId-000000000000:4959:12" {
		t.Fatal(got)
	}
}

// FuzzDeaggregate: no input panics; an aggregate that parses re-encodes to
// one that parses to the same user records; no user record's data reaches
// outside the input.
func FuzzDeaggregate(f *testing.F) {
	f.Add(Encode([]Record{{PartitionKey: "a", Data: []byte("x")}, {PartitionKey: "b", ExplicitHashKey: "1", Data: []byte("y"), Tags: []Tag{{"k", "v"}}}}))
	f.Add([]byte(Magic))
	f.Add([]byte(`{"orderId":"o-1"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, data := range [][]byte{in, append([]byte(Magic), in...), withSum(in)} {
			recs, ok, err := Deaggregate(data)
			if !ok {
				if recs != nil || err != nil {
					t.Fatalf("not an aggregate, yet recs %v err %v", recs, err)
				}
				continue
			}
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("error not ErrMalformed: %v", err)
				}
				continue
			}
			for _, r := range recs {
				if len(r.Data) > len(data) {
					t.Fatalf("data of %d bytes from %d", len(r.Data), len(data))
				}
			}
			if len(recs) == 0 {
				continue // Encode of nothing is no aggregate (an empty message)
			}
			back, ok, err := Deaggregate(Encode(recs))
			if !ok || err != nil || !reflect.DeepEqual(back, recs) {
				t.Fatalf("re-encoded: ok %v err %v\n%+v\n%+v", ok, err, back, recs)
			}
		}
	})
}
