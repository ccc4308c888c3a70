package localtest

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/internal/emuqueue"
)

// The emulated sources hold the input records in memory and assign ids,
// sequence numbers, offsets and arrival times as the real services would.
// The first record arrives as the run starts and the others 1 ms apart, in
// input order: a record is never older than the run, so
// MaximumRecordAgeInSeconds counts only the time the run spends on it.

// kinesisShard maps a partition key to one of n shards as Kinesis does: the
// MD5 of the key as a 128-bit number, in n equal hash-key ranges.
func kinesisShard(partitionKey string, n int) int {
	sum := md5.Sum([]byte(partitionKey))
	h := new(big.Int).SetBytes(sum[:])
	h.Mul(h, big.NewInt(int64(n)))
	h.Rsh(h, 128)
	return int(h.Int64())
}

func shardID(i int) string { return fmt.Sprintf("shardId-%012d", i) }

// memStream is an emulated Kinesis or DynamoDB stream.
type memStream struct {
	shards []string
	recs   map[string][]invocation.StreamRecord
}

func (m *memStream) Shards(context.Context) ([]string, error) { return m.shards, nil }

func (m *memStream) Read(_ context.Context, shard, after string, max int) ([]invocation.StreamRecord, error) {
	recs := m.recs[shard]
	i := 0
	if after != "" {
		i = sort.Search(len(recs), func(i int) bool { return recs[i].SequenceNumber > after })
	}
	return recs[i:min(len(recs), i+max)], nil
}

func newMemKinesis(m *Mapping, s settings, in []InputRecord, start time.Time) (*memStream, []inputRef, error) {
	region := or(m.Region, sevents.DefaultRegion)
	arn := fmt.Sprintf("arn:aws:kinesis:%s:%s:stream/%s", region, sevents.DefaultAccount, or(m.StreamName, "stream"))
	ms := &memStream{recs: map[string][]invocation.StreamRecord{}}
	builders := make([]*sevents.KinesisBuilder, s.shards)
	for i := range builders {
		ms.shards = append(ms.shards, shardID(i))
		builders[i] = &sevents.KinesisBuilder{Region: region, StreamARN: arn, ShardID: shardID(i), FirstSequence: uint64(i) << 40}
	}
	refs := make([]inputRef, len(in))
	for i, r := range in {
		pk, payload, users, err := kinesisData(r)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v; a Kinesis record is %s", where(i, r), err, recordShapes[sevents.SourceKinesis])
		}
		if pk == "" {
			return nil, nil, fmt.Errorf("%s: a Kinesis record needs a partitionKey; a Kinesis record is %s", where(i, r), recordShapes[sevents.SourceKinesis])
		}
		sh := kinesisShard(pk, s.shards)
		at := start.Add(time.Duration(i) * time.Millisecond)
		b := builders[sh]
		b.Clock = func() time.Time { return at }
		b.Add(pk, payload)
		rec := b.Last()
		raw, err := json.Marshal(rec)
		if err != nil {
			return nil, nil, err
		}
		seq := rec.Kinesis.SequenceNumber
		ms.recs[shardID(sh)] = append(ms.recs[shardID(sh)], invocation.StreamRecord{SequenceNumber: seq, PartitionKey: pk, Arrival: at, Event: raw})
		refs[i] = newRef(i, r, seq, pk, payload)
		refs[i].lane = laneName(shardID(sh), pk, s.parallelization)
		if users == nil {
			// An aggregate given as its bytes (dataBase64, an event
			// file's): its user records, as the handlers read them.
			refs[i] = deaggregated(refs[i])
		} else {
			expects := make([]string, len(r.Aggregate))
			for j, u := range r.Aggregate {
				expects[j] = u.Expect
			}
			refs[i].users = userRefs(refs[i], users, expects)
		}
	}
	return ms, refs, nil
}

// plainObject decodes a records.jsonl keys/image object for MarshalImage:
// numbers stay numbers with all their digits (attribute N), strings
// strings (S), and so on.
func plainObject(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// ddbImages are a DynamoDB records line's keys and images: the plain JSON
// objects, or the AttributeValue maps of "dynamodb" as they are (an image
// argument of events.DynamoDBBuilder), and the images as plain values for
// the record's payload.
func ddbImages(r InputRecord) (keys, newImg, oldImg any, plainKeys, plainNew, plainOld map[string]any, err error) {
	if d := r.DynamoDB; d != nil {
		keys, plainKeys, plainNew, plainOld = d.Keys, plainImage(d.Keys), plainImage(d.NewImage), plainImage(d.OldImage)
		if d.NewImage != nil {
			newImg = d.NewImage
		}
		if d.OldImage != nil {
			oldImg = d.OldImage
		}
		return
	}
	if plainKeys, err = plainObject(r.Keys); err != nil || plainKeys == nil {
		return nil, nil, nil, nil, nil, nil, fmt.Errorf("a DynamoDB record needs keys, a JSON object (%v)", err)
	}
	if plainNew, err = plainObject(r.NewImage); err != nil {
		return nil, nil, nil, nil, nil, nil, fmt.Errorf("newImage: %w", err)
	}
	if plainOld, err = plainObject(r.OldImage); err != nil {
		return nil, nil, nil, nil, nil, nil, fmt.Errorf("oldImage: %w", err)
	}
	keys = plainKeys
	if plainNew != nil {
		newImg = plainNew
	}
	if plainOld != nil {
		oldImg = plainOld
	}
	return
}

func newMemDynamoDB(m *Mapping, s settings, in []InputRecord, start time.Time) (*memStream, []inputRef, error) {
	region := or(m.Region, sevents.DefaultRegion)
	arn := fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s/stream/%s", region, sevents.DefaultAccount, or(m.TableName, "table"), start.UTC().Format("2006-01-02T15:04:05.000"))
	ms := &memStream{recs: map[string][]invocation.StreamRecord{}}
	builders := make([]*sevents.DynamoDBBuilder, s.shards)
	for i := range builders {
		ms.shards = append(ms.shards, shardID(i))
		builders[i] = &sevents.DynamoDBBuilder{Region: region, StreamARN: arn, FirstSequence: uint64(i) << 40}
	}
	refs := make([]inputRef, len(in))
	for i, r := range in {
		keys, nImg, oImg, plainKeys, newImg, oldImg, err := ddbImages(r)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v; a DynamoDB Streams record is %s", where(i, r), err, recordShapes[sevents.SourceDynamoDB])
		}
		keyText := string(r.Keys)
		if kb, err := json.Marshal(plainKeys); err == nil {
			keyText = string(kb) // canonical: sorted names
		}
		sh := kinesisShard(keyText, s.shards)
		at := start.Add(time.Duration(i) * time.Millisecond).Truncate(time.Second)
		b := builders[sh]
		b.Clock = func() time.Time { return at }
		name := r.EventName
		if name == "" {
			switch {
			case newImg != nil && oldImg != nil:
				name = "MODIFY"
			case newImg != nil:
				name = "INSERT"
			default:
				name = "REMOVE"
			}
		}
		switch name {
		case "INSERT":
			err = b.Insert(keys, nImg)
		case "MODIFY":
			err = b.Modify(keys, oImg, nImg)
		case "REMOVE":
			err = b.Remove(keys, oImg)
		default:
			err = fmt.Errorf("eventName %q is not INSERT, MODIFY or REMOVE", name)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where(i, r), err)
		}
		rec := b.Last()
		raw, err := json.Marshal(rec)
		if err != nil {
			return nil, nil, err
		}
		seq := rec.Change.SequenceNumber
		ms.recs[shardID(sh)] = append(ms.recs[shardID(sh)], invocation.StreamRecord{SequenceNumber: seq, PartitionKey: keyText, Arrival: at, Event: raw})
		refs[i] = newRef(i, r, seq, keyText, ddbPayload(newImg, oldImg))
	}
	return ms, refs, nil
}

// ddbPayload is what effects and reports read a DynamoDB record's payload
// from: the new image (else the old one) as plain JSON or, when that image
// has a string attribute "payload" holding a JSON object (the conformance
// function's convention), that object.
func ddbPayload(newImg, oldImg map[string]any) []byte {
	img := newImg
	if img == nil {
		img = oldImg
	}
	if img == nil {
		return nil
	}
	if p, ok := img["payload"].(string); ok && strings.HasPrefix(strings.TrimSpace(p), "{") {
		return []byte(p)
	}
	b, _ := json.Marshal(img)
	return b
}

// newMemQueue is the emulated queue holding the input records.
func newMemQueue(m *Mapping, s settings, in []InputRecord, start time.Time, c clock) (*emuqueue.Queue, []inputRef, error) {
	region := or(m.Region, sevents.DefaultRegion)
	name := or(m.QueueName, "queue")
	fifo := s.source == sevents.SourceSQSFIFO
	if fifo && !endsWith(name, ".fifo") {
		name += ".fifo"
	}
	q := emuqueue.New(c, fmt.Sprintf("arn:aws:sqs:%s:%s:%s", region, sevents.DefaultAccount, name), region, fifo, s.maxReceive)
	refs := make([]inputRef, len(in))
	for i, r := range in {
		bb, err := payloadBytes("body", r.Body, r.BodyBase64)
		if err == nil {
			err = sqsBodyError(bb)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where(i, r), err)
		}
		body := string(bb)
		id := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", i+1, 0, 0, 0, i+1)
		if err := checkMessageAttributes(r.MessageAttributes); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where(i, r), err)
		}
		msg := emuqueue.Message{ID: id, Body: body, Attributes: r.Attributes, Sent: start.Add(time.Duration(i) * time.Millisecond),
			MessageAttributes: eventMessageAttributes(r.MessageAttributes), MD5OfMessageAttributes: md5OfMessageAttributes(r.MessageAttributes)}
		if n := emuqueue.MessageSize(body, msg.MessageAttributes); n > emuqueue.MaxMessageBytes {
			return nil, nil, fmt.Errorf("%s: the message is %d bytes (its body and message attributes), over SQS's limit of %d: SQS would refuse to send it, "+
				"so no event carries it; send a larger payload through S3 (the SQS Extended Client; package largemessage reads it)", where(i, r), n, emuqueue.MaxMessageBytes)
		}
		key := id
		if fifo {
			if r.MessageGroupID == "" {
				return nil, nil, fmt.Errorf("%s: a FIFO message needs a messageGroupId; an SQS FIFO record is %s", where(i, r), recordShapes[sevents.SourceSQSFIFO])
			}
			msg.Group, msg.Dedup = r.MessageGroupID, r.MessageDeduplicationID
			if msg.Dedup == "" {
				sum := md5.Sum([]byte(body))
				msg.Dedup = hex.EncodeToString(sum[:])
			}
			msg.Seq = strconv.FormatUint(18000000000000000000+uint64(i), 10)
			key = r.MessageGroupID
		}
		q.Add(msg)
		refs[i] = newRef(i, r, id, key, []byte(body))
		refs[i].seq = msg.Seq
	}
	return q, refs, nil
}

func endsWith(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}

// memKafka is an emulated Kafka topic.
type memKafka struct {
	env   invocation.KafkaEnvelope
	parts []string
	recs  map[string][]invocation.KafkaRecord
}

func (k *memKafka) Partitions(context.Context) ([]string, error) { return k.parts, nil }
func (k *memKafka) Envelope() invocation.KafkaEnvelope           { return k.env }

func (k *memKafka) Fetch(_ context.Context, partition string, offset int64, max int) ([]invocation.KafkaRecord, error) {
	recs := k.recs[partition]
	i := sort.Search(len(recs), func(i int) bool { return recs[i].Offset >= offset })
	return recs[i:min(len(recs), i+max)], nil
}

func newMemKafka(m *Mapping, s settings, in []InputRecord, start time.Time) (*memKafka, []inputRef, error) {
	topic := or(m.Topic, "topic")
	b := &sevents.KafkaBuilder{BootstrapServers: m.BootstrapServers}
	if !m.SelfManaged {
		b.EventSourceARN = fmt.Sprintf("arn:aws:kafka:%s:%s:cluster/local/00000000-0000-0000-0000-000000000000-1", or(m.Region, sevents.DefaultRegion), sevents.DefaultAccount)
	}
	k := &memKafka{recs: map[string][]invocation.KafkaRecord{}}
	for p := 0; p < s.partitions; p++ {
		k.parts = append(k.parts, sevents.KafkaPartitionKey(topic, int64(p)))
	}
	refs := make([]inputRef, len(in))
	for i, r := range in {
		key, err := payloadBytes("key", r.Key, r.KeyBase64)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where(i, r), err)
		}
		value, err := payloadBytes("value", r.Value, r.ValueBase64)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where(i, r), err)
		}
		p := 0
		switch {
		case r.Partition != nil:
			p = *r.Partition
			if p < 0 || p >= s.partitions {
				return nil, nil, fmt.Errorf("%s: partition %d is outside 0..%d (Partitions)", where(i, r), p, s.partitions-1)
			}
		case key != nil:
			sum := md5.Sum(key)
			p = int(binary.BigEndian.Uint32(sum[:4]) % uint32(s.partitions))
		}
		at := start.Add(time.Duration(i) * time.Millisecond)
		b.Clock = func() time.Time { return at }
		hs := []sevents.KafkaHeader(r.Headers)
		if r.HeadersBase64 != nil {
			hs = r.HeadersBase64
		}
		b.Add(topic, int64(p), key, value, hs...)
		pk := sevents.KafkaPartitionKey(topic, int64(p))
		rec := b.Last(pk)
		raw, err := json.Marshal(rec)
		if err != nil {
			return nil, nil, err
		}
		k.recs[pk] = append(k.recs[pk], invocation.KafkaRecord{Offset: rec.Offset, Timestamp: at, Key: string(key), Event: raw})
		refs[i] = newRef(i, r, kafkaID(pk, rec.Offset), pk, value)
	}
	ev := b.Envelope()
	k.env = invocation.KafkaEnvelope{EventSource: ev.EventSource, EventSourceARN: ev.EventSourceARN, BootstrapServers: ev.BootstrapServers}
	return k, refs, nil
}

func kafkaID(partition string, offset int64) string {
	return partition + "@" + strconv.FormatInt(offset, 10)
}

// inputRef ties a record to its id in the source (item identifier; for
// Kafka "<topic>-<partition>@<offset>"; for a KPL user record
// "<sequenceNumber>:<subSequenceNumber>"), its ordering key, where it came
// from, its payload (for matching effects by a payload field, and the id
// it carries, read when the record is named unless payloadID is set), and
// its expectation.
type inputRef struct {
	id, key, payloadID string
	line               int    // records-file line, or 0
	input              int    // 1-based position among Options.Records, or 0 (a real source)
	payload            []byte // the record's payload: data, body, value, or the DynamoDB image
	expect             string // its InputRecord.Expect (a user record's own, else its line's), "" for the default
	items              int    // the items effects may name one by one (payloadItems)
	// A KPL user record: its sub-sequence number. A KPL aggregate (as the
	// engine sees it): its user records, the records of the run it
	// stands for (runRecords).
	user  bool
	sub   int
	users []inputRef
	// lane is the shard (and, with ParallelizationFactor > 1, the shard's
	// lane) a Kinesis record was read from: Lambda keeps order within it
	// only, so a KPL user record's ordering key is its own partition key
	// in its aggregate's lane (userRefs). "" when unknown.
	lane string
	// seq is an SQS FIFO message's SequenceNumber, when the runner gave
	// it (the emulated queue).
	seq string
}

// position is the record's position in its ordered lane as the handlers
// name it (idempotency.Position), from its id: a Kinesis or DynamoDB
// Streams sequence number (and a KPL user record's sub-sequence number),
// a Kafka offset, an SQS FIFO message's sequence number. false when the
// source has no lanes or the runner does not know it.
func (r inputRef) position(source sevents.Source) (string, bool) {
	switch source {
	case sevents.SourceKinesis:
		if seq, sub, ok := strings.Cut(r.id, ":"); ok {
			return idempotency.Position(seq, sub)
		}
		return idempotency.Position(r.id)
	case sevents.SourceDynamoDB:
		return idempotency.Position(r.id)
	case sevents.SourceKafka:
		at := strings.LastIndexByte(r.id, '@')
		if at < 0 {
			return "", false
		}
		return idempotency.Position(r.id[at+1:])
	case sevents.SourceSQSFIFO:
		if r.seq == "" {
			return "", false
		}
		return idempotency.Position(r.seq)
	}
	return "", false
}

// name is how reports name the record (see RecordFate.Name).
func (r inputRef) name() string { return r.fate("").Name() }

// fate is the RecordFate of the record.
func (r inputRef) fate(f string) RecordFate {
	pid := r.payloadID
	if pid == "" {
		pid = payloadID(r.payload) // read when a record is named, not for every record
	}
	rf := RecordFate{ID: r.id, Line: r.line, Input: r.input, PayloadID: pid, Key: r.key, Fate: f}
	if r.user {
		sub := r.sub
		rf.SubSequenceNumber = &sub
	}
	return rf
}

// where names input record i for an error message.
func where(i int, r InputRecord) string {
	if r.Line > 0 {
		return fmt.Sprintf("records line %d", r.Line)
	}
	return fmt.Sprintf("record %d", i+1)
}

// newRef is the inputRef of input record i.
func newRef(i int, r InputRecord, id, key string, payload []byte) inputRef {
	return inputRef{id: id, key: key, line: r.Line, input: i + 1, payload: payload, expect: r.Expect,
		items: payloadItems(payload)}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
