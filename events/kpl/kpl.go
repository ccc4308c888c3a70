// Package kpl reads and writes the records of the Kinesis Producer Library's
// aggregation format: one Kinesis record that carries many user records.
//
// An aggregated record's data is the 4 magic bytes F3 89 9A C2, a protobuf
// AggregatedRecord (a table of partition keys, a table of explicit hash keys,
// and the user records, each naming its keys by index into the tables, with
// its data and optional tags), and the 16-byte MD5 of the protobuf bytes.
// Data without the magic, too short to hold a checksum and a message, or
// whose checksum does not match, is an ordinary record, as the Kinesis
// Client Library and AWS's deaggregation libraries treat it. Data whose
// checksum matches was written as an aggregate: if its protobuf is
// malformed, Deaggregate says so (the KCL passes such data on as an
// ordinary record, or drops the rest of the aggregate; Sluice fails it, so
// it is quarantined whole rather than decoded as garbage or lost).
//
// The protobuf is read with google.golang.org/protobuf/encoding/protowire,
// field by field within the bytes given: no length read from the input is
// trusted beyond the bytes present, and no allocation is sized from one.
package kpl

import (
	"bytes"
	"crypto/md5"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// Magic is the prefix of an aggregated record's data.
const Magic = "\xf3\x89\x9a\xc2"

// digestSize is the length of the MD5 checksum that ends an aggregate.
const digestSize = md5.Size

// Record is one user record of an aggregate.
type Record struct {
	PartitionKey string
	// ExplicitHashKey is the user record's explicit hash key (a decimal
	// 128-bit number), or "" when it has none.
	ExplicitHashKey string
	Data            []byte
	// Tags are the user record's tags, nil when it has none (the KPL writes
	// none).
	Tags []Tag
}

// Tag is a user record's tag.
type Tag struct {
	Key, Value string
}

// ErrMalformed is wrapped by the error of an aggregate whose checksum
// matches but whose protobuf is not a valid AggregatedRecord.
var ErrMalformed = errors.New("malformed KPL aggregated record")

// IsAggregated reports whether data is an aggregated record: it starts with
// Magic, holds at least one protobuf byte before the 16-byte checksum, and
// the checksum is the MD5 of those bytes.
func IsAggregated(data []byte) bool {
	_, ok := body(data)
	return ok
}

// body returns the protobuf bytes of an aggregate, or ok false for an
// ordinary record.
func body(data []byte) ([]byte, bool) {
	if len(data) <= len(Magic)+digestSize || string(data[:len(Magic)]) != Magic {
		return nil, false
	}
	msg := data[len(Magic) : len(data)-digestSize]
	sum := md5.Sum(msg)
	if !bytes.Equal(sum[:], data[len(data)-digestSize:]) {
		return nil, false
	}
	return msg, true
}

// Deaggregate returns the user records of an aggregated record, in the
// order they were written (a user record's index is its sub-sequence
// number). ok is false for an ordinary record: use data as it is. err is
// non-nil (wrapping ErrMalformed) for an aggregate whose checksum matches
// but whose protobuf is not valid: a wire-format error, a missing required
// field, a key index outside its table.
//
// Each Record's Data aliases data; the strings are copies.
func Deaggregate(data []byte) (recs []Record, ok bool, err error) {
	msg, ok := body(data)
	if !ok {
		return nil, false, nil
	}
	recs, err = AppendUserRecords(nil, msg)
	return recs, true, err
}

// AppendUserRecords parses msg, the protobuf AggregatedRecord of an
// aggregate (without the magic and checksum), and appends its user records
// to dst. Data aliases msg.
func AppendUserRecords(dst []Record, msg []byte) ([]Record, error) {
	var a Aggregate
	if err := a.parse(msg); err != nil {
		return dst, err
	}
	dst = growRecords(dst, a.n)
	for i := 0; i < a.n; i++ {
		r, err := a.Record(i)
		if err != nil {
			return dst, err
		}
		dst = append(dst, r)
	}
	return dst, nil
}

func growRecords(dst []Record, n int) []Record {
	if cap(dst)-len(dst) < n {
		grown := make([]Record, len(dst), len(dst)+n)
		copy(grown, dst)
		dst = grown
	}
	return dst
}

// Aggregate is a parsed AggregatedRecord whose user records are read one
// at a time (Len, Record): for a consumer that turns user records into its
// own type without a []Record between. The zero value holds no records.
type Aggregate struct {
	msg []byte
	// keys holds the partition key table then the explicit hash key
	// table, as strings over one copy of their bytes.
	keys  []string
	npk   int
	spans []span // of each user record's message in msg
	n     int
}

type span struct{ off, end int32 }

// Parse checks data and parses its aggregate; ok is false for an ordinary
// record (Deaggregate's rules).
func Parse(data []byte) (a *Aggregate, ok bool, err error) {
	a = &Aggregate{}
	if ok, err = a.Read(data); !ok || err != nil {
		return nil, ok, err
	}
	return a, true, nil
}

// Read is Parse into a: a consumer of many aggregates keeps their
// Aggregates in one slice. On an ordinary record or an error, a holds no
// records.
func (a *Aggregate) Read(data []byte) (ok bool, err error) {
	*a = Aggregate{}
	msg, ok := body(data)
	if !ok {
		return false, nil
	}
	if err := a.parse(msg); err != nil {
		*a = Aggregate{}
		return true, err
	}
	return true, nil
}

// Len is the number of user records.
func (a *Aggregate) Len() int { return a.n }

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// parse reads the tables and finds the user records. Nothing is allocated
// before the message has been walked once, and then only for what it holds.
func (a *Aggregate) parse(msg []byte) error {
	if len(msg) > 1<<31-1 {
		return malformed("the message is %d bytes, over 2 GiB", len(msg))
	}
	var npk, nehk, nrec, keyBytes int
	if err := walk(msg, func(field, wire, at int, v []byte, _ uint64) error {
		if wire != wireBytes {
			return nil
		}
		switch field {
		case 1:
			npk++
			keyBytes += len(v)
		case 2:
			nehk++
			keyBytes += len(v)
		case 3:
			nrec++
		}
		return nil
	}); err != nil {
		return err
	}
	a.msg, a.npk, a.n = msg, npk, nrec
	// The keys, copied once into one string, each a slice of it.
	buf := make([]byte, 0, keyBytes)
	if err := walk(msg, func(field, wire, _ int, v []byte, _ uint64) error {
		if wire == wireBytes && (field == 1 || field == 2) {
			buf = append(buf, v...)
		}
		return nil
	}); err != nil {
		return err
	}
	keys := string(buf)
	buf = buf[:0]
	a.keys = make([]string, npk+nehk)
	a.spans = make([]span, 0, nrec)
	ipk, iehk := 0, npk
	err := walk(msg, func(field, wire, at int, v []byte, _ uint64) error {
		if wire != wireBytes {
			return nil
		}
		switch field {
		case 1, 2:
			start := len(buf)
			buf = append(buf, v...)
			s := keys[start : start+len(v)]
			if field == 1 {
				a.keys[ipk], ipk = s, ipk+1
			} else {
				a.keys[iehk], iehk = s, iehk+1
			}
		case 3:
			a.spans = append(a.spans, span{int32(at), int32(at + len(v))})
		}
		return nil
	})
	return err
}

// Record returns user record i (0 <= i < Len). Data aliases the aggregate's
// bytes.
func (a *Aggregate) Record(i int) (Record, error) {
	pk, ehk, data, tags, err := a.fields(i, true)
	if err != nil {
		return Record{}, err
	}
	return Record{PartitionKey: pk, ExplicitHashKey: ehk, Data: data, Tags: tags}, nil
}

// Keys returns user record i's partition key, explicit hash key ("" for
// none) and data, without its tags: the allocation-free read.
func (a *Aggregate) Keys(i int) (partitionKey, explicitHashKey string, data []byte, err error) {
	pk, ehk, data, _, err := a.fields(i, false)
	return pk, ehk, data, err
}

func (a *Aggregate) fields(i int, wantTags bool) (pk, ehk string, data []byte, tags []Tag, err error) {
	if i < 0 || i >= a.n {
		return "", "", nil, nil, fmt.Errorf("kpl: user record %d of an aggregate of %d", i, a.n)
	}
	sp := a.spans[i]
	var pkIdx, ehkIdx uint64
	var havePK, haveEHK, haveData bool
	err = walk(a.msg[sp.off:sp.end], func(field, wire, _ int, v []byte, n uint64) error {
		switch {
		case field == 1 && wire == wireVarint:
			pkIdx, havePK = n, true
		case field == 2 && wire == wireVarint:
			ehkIdx, haveEHK = n, true
		case field == 3 && wire == wireBytes:
			data, haveData = v, true
		case field == 4 && wire == wireBytes:
			t, err := parseTag(v)
			if err != nil {
				return err
			}
			if wantTags {
				tags = append(tags, t)
			}
		}
		return nil
	})
	if err != nil {
		return "", "", nil, nil, fmt.Errorf("user record %d: %w", i, err)
	}
	switch {
	case !havePK:
		return "", "", nil, nil, malformed("user record %d has no partition_key_index", i)
	case !haveData:
		return "", "", nil, nil, malformed("user record %d has no data", i)
	case pkIdx >= uint64(a.npk):
		return "", "", nil, nil, malformed("user record %d: partition_key_index %d is outside the table of %d keys", i, pkIdx, a.npk)
	}
	pk = a.keys[pkIdx]
	if haveEHK {
		nehk := uint64(len(a.keys) - a.npk)
		if ehkIdx >= nehk {
			return "", "", nil, nil, malformed("user record %d: explicit_hash_key_index %d is outside the table of %d keys", i, ehkIdx, nehk)
		}
		ehk = a.keys[uint64(a.npk)+ehkIdx]
	}
	if len(data) == 0 {
		data = nil
	}
	return pk, ehk, data, tags, nil
}

func parseTag(b []byte) (Tag, error) {
	var t Tag
	haveKey := false
	err := walk(b, func(field, wire, _ int, v []byte, _ uint64) error {
		if wire != wireBytes {
			return nil
		}
		switch field {
		case 1:
			t.Key, haveKey = string(v), true
		case 2:
			t.Value = string(v)
		}
		return nil
	})
	if err != nil {
		return Tag{}, fmt.Errorf("tag: %w", err)
	}
	if !haveKey {
		return Tag{}, malformed("a tag has no key")
	}
	return t, nil
}

// Protobuf wire types, as walk reports them.
const (
	wireVarint = int(protowire.VarintType)
	wireBytes  = int(protowire.BytesType)
)

// walk calls fn for each field of the protobuf message b: its number, wire
// type, and its bytes (length-delimited) or value (varint). Unknown fields
// and known fields of an unexpected wire type reach fn too, which ignores
// them, as protobuf parsers skip unknown fields; groups are refused (the
// format has none).
func walk(b []byte, fn func(field, wire, at int, v []byte, n uint64) error) error {
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			if tag, m := protowire.ConsumeVarint(b[i:]); m > 0 {
				return malformed("field number %d at byte %d", tag>>3, i)
			}
			return malformed("a field tag at byte %d is not a varint", i)
		}
		tagAt := i
		i += n
		field := int(num)
		switch typ {
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b[i:])
			if n < 0 {
				return malformed("field %d at byte %d: the varint is cut off or too long", field, i)
			}
			i += n
			if err := fn(field, wireVarint, i-n, nil, v); err != nil {
				return err
			}
		case protowire.BytesType:
			l, n := protowire.ConsumeVarint(b[i:])
			if n < 0 {
				return malformed("field %d at byte %d: the length is cut off or too long", field, i)
			}
			i += n
			if l > uint64(len(b)-i) {
				return malformed("field %d at byte %d claims %d bytes, %d are left", field, i, l, len(b)-i)
			}
			v := b[i : i+int(l) : i+int(l)]
			at := i
			i += int(l)
			if err := fn(field, wireBytes, at, v, 0); err != nil {
				return err
			}
		case protowire.Fixed64Type:
			if len(b)-i < 8 {
				return malformed("field %d at byte %d: a fixed64 is cut off", field, i)
			}
			i += 8
		case protowire.Fixed32Type:
			if len(b)-i < 4 {
				return malformed("field %d at byte %d: a fixed32 is cut off", field, i)
			}
			i += 4
		default:
			return malformed("field %d at byte %d has wire type %d", field, tagAt, typ)
		}
	}
	return nil
}

// Encode encodes records as one aggregated record's data, as the KPL
// writes it: partition keys and explicit hash keys each in a table, in
// order of first use, records in order, then the MD5 of the protobuf. The
// Kinesis record that carries it takes the first record's partition key
// (and explicit hash key), as the KPL's does. No records encode to data
// that is not an aggregate (it holds no message).
func Encode(records []Record) []byte {
	pkIdx := map[string]uint64{}
	ehkIdx := map[string]uint64{}
	var pks, ehks []string
	for _, r := range records {
		if _, ok := pkIdx[r.PartitionKey]; !ok {
			pkIdx[r.PartitionKey] = uint64(len(pks))
			pks = append(pks, r.PartitionKey)
		}
		if r.ExplicitHashKey != "" {
			if _, ok := ehkIdx[r.ExplicitHashKey]; !ok {
				ehkIdx[r.ExplicitHashKey] = uint64(len(ehks))
				ehks = append(ehks, r.ExplicitHashKey)
			}
		}
	}
	out := []byte(Magic)
	for _, k := range pks {
		out = appendBytesField(out, 1, []byte(k))
	}
	for _, k := range ehks {
		out = appendBytesField(out, 2, []byte(k))
	}
	var rec []byte
	for _, r := range records {
		rec = appendVarintField(rec[:0], 1, pkIdx[r.PartitionKey])
		if r.ExplicitHashKey != "" {
			rec = appendVarintField(rec, 2, ehkIdx[r.ExplicitHashKey])
		}
		rec = appendBytesField(rec, 3, r.Data)
		for _, t := range r.Tags {
			var tb []byte
			tb = appendBytesField(tb, 1, []byte(t.Key))
			if t.Value != "" {
				tb = appendBytesField(tb, 2, []byte(t.Value))
			}
			rec = appendBytesField(rec, 4, tb)
		}
		out = appendBytesField(out, 3, rec)
	}
	sum := md5.Sum(out[len(Magic):])
	return append(out, sum[:]...)
}

func appendVarintField(b []byte, field int, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, protowire.Number(field), protowire.VarintType), v)
}

func appendBytesField(b []byte, field int, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, protowire.Number(field), protowire.BytesType), v)
}

// SubSequenceKey is how Sluice names user record sub of the Kinesis record
// whose identifier is id: id, ":", and the sub-sequence number. It is the
// suffix that makes the default idempotency key and the attempts key of a
// user record its own.
func SubSequenceKey(id string, sub int) string { return id + ":" + strconv.Itoa(sub) }
