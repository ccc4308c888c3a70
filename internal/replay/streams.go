package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/twmb/franz-go/pkg/kgo"

	sevents "github.com/sluicehq/sluice/events"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/internal/redrive"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/source"
)

// DynamoDBRetention is how long a DynamoDB stream keeps its records.
const DynamoDBRetention = 24 * time.Hour

// nowSlack is how much later than the replay's start a record may have
// arrived and still count for a range that ends now (arrival times of
// DynamoDB stream records are rounded to the second).
const nowSlack = time.Second

// Kinesis is the Kinesis data stream streamName at the endpoint and region
// of cfg (kinesalite, LocalStack, AWS), read with the local runner's source.
func Kinesis(cfg aws.Config, streamName string) Stream {
	return &kinesisStream{cfg: cfg, name: streamName}
}

// DynamoDB is the DynamoDB stream streamARN (a table's LatestStreamArn) at
// the endpoint and region of cfg (DynamoDB Local, LocalStack, AWS).
func DynamoDB(cfg aws.Config, streamARN string) Stream {
	return &dynamoDBStream{cfg: cfg, arn: streamARN}
}

// Kafka is the topic of the cluster reached through seeds; envelope is
// what the events carry around the records, as for source.KafkaCluster
// (an empty BootstrapServers becomes the seeds). opts are added to the
// client's options (TLS, SASL).
func Kafka(seeds []string, topic string, envelope invocation.KafkaEnvelope, opts ...kgo.Opt) Stream {
	return &kafkaStream{seeds: seeds, topic: topic, env: envelope, opts: opts}
}

// pickLanes checks the lanes a range names against those the stream has.
func pickLanes(all, want []string, r Range, noun, stream string) ([]string, error) {
	if len(all) == 0 {
		return nil, fmt.Errorf("replay: %s has no %ss", stream, noun)
	}
	out := all
	if len(want) > 0 {
		out = nil
		for _, w := range want {
			if !slices.Contains(all, w) {
				return nil, fmt.Errorf("replay: %s has no %s %s (it has %s)", stream, noun, w, strings.Join(all, ", "))
			}
			if !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	if (r.From.Number != "" || r.To.Number != "") && len(out) != 1 {
		return nil, fmt.Errorf("replay: a sequence number or offset belongs to one %s, and %s has %d (%s): name the %s",
			noun, stream, len(out), strings.Join(out, ", "), noun)
	}
	return out, nil
}

// streamLane is a Kinesis or DynamoDB shard of the range: read pages
// after after (the checkpoint's record, or "" for the starting position);
// first, if set, checks the first record read.
func streamLane(id, after string, r Range, cutoff time.Time,
	read func(ctx context.Context, after string, n int) ([]invocation.StreamRecord, error),
	first func(invocation.StreamRecord) error, mk func(invocation.StreamRecord) rec) *lane {
	past := func(sr invocation.StreamRecord) bool {
		switch {
		case r.To.Number != "":
			return compareNumbers(sr.SequenceNumber, r.To.Number) > 0
		case !r.To.Time.IsZero():
			return !sr.Arrival.Before(r.To.Time)
		}
		return sr.Arrival.After(cutoff)
	}
	return &lane{id: id, fill: func(ctx context.Context, n int) ([]rec, bool, error) {
		for {
			recs, err := read(ctx, after, n)
			if errors.Is(err, source.ErrTrimmed) {
				return nil, false, fmt.Errorf("replay: shard %s: %w (%v)", id, ErrTrimmed, err)
			}
			if err != nil {
				return nil, false, err
			}
			if len(recs) == 0 {
				return nil, true, nil // nothing more now: the end
			}
			after = recs[len(recs)-1].SequenceNumber
			var out []rec
			for _, sr := range recs {
				if first != nil {
					if err := first(sr); err != nil {
						return nil, false, err
					}
					first = nil
				}
				if !r.From.Time.IsZero() && sr.Arrival.Before(r.From.Time) {
					continue // DynamoDB Streams has no AT_TIMESTAMP: skip to it
				}
				if past(sr) {
					return out, true, nil
				}
				out = append(out, mk(sr))
				if r.To.Number != "" && compareNumbers(sr.SequenceNumber, r.To.Number) == 0 {
					return out, true, nil
				}
			}
			if len(out) > 0 {
				return out, false, nil
			}
		}
	}}
}

// atSequence checks that the first record of an AT_SEQUENCE_NUMBER read is
// the one asked for; a later one means the ones before it are gone.
func atSequence(what, shard, seq string) func(invocation.StreamRecord) error {
	return func(sr invocation.StreamRecord) error {
		if compareNumbers(sr.SequenceNumber, seq) > 0 {
			return fmt.Errorf("replay: %s shard %s: the first record left at or after sequence number %s is %s (arrived %s): %w; replay from %s or later",
				what, shard, seq, sr.SequenceNumber, sr.Arrival.UTC().Format(time.RFC3339), ErrTrimmed, sr.SequenceNumber)
		}
		return nil
	}
}

// oldest says what a stream still holds: each shard's first record.
func oldest(ctx context.Context, shards []string, read func(ctx context.Context, shard string) ([]invocation.StreamRecord, error)) string {
	var parts []string
	for _, sh := range shards {
		recs, err := read(ctx, sh)
		switch {
		case err != nil:
			parts = append(parts, fmt.Sprintf("shard %s: unknown (%v)", sh, err))
		case len(recs) == 0:
			parts = append(parts, fmt.Sprintf("shard %s: no record", sh))
		default:
			parts = append(parts, fmt.Sprintf("shard %s from sequence number %s (arrived %s)", sh, recs[0].SequenceNumber, recs[0].Arrival.UTC().Format(time.RFC3339)))
		}
	}
	return strings.Join(parts, "; ")
}

// trimmedSince is the error for a range from a time before the stream's
// retention (none when from is within it, or retention is unknown), naming
// the oldest record left in each shard (read reads a shard's first).
func trimmedSince(ctx context.Context, what string, shards []string, from, now time.Time, retention time.Duration,
	read func(ctx context.Context, shard, after string, n int) ([]invocation.StreamRecord, error)) error {
	if retention <= 0 || !from.Before(now.Add(-retention)) {
		return nil
	}
	left := oldest(ctx, shards, func(ctx context.Context, sh string) ([]invocation.StreamRecord, error) { return read(ctx, sh, "", 1) })
	return fmt.Errorf("replay: %s keeps records for %v: --from %s is before %s, what it still holds: %w; what is left: %s",
		what, retention, from.UTC().Format(time.RFC3339), now.Add(-retention).UTC().Format(time.RFC3339), ErrTrimmed, left)
}

// shardLanes makes a lane of each shard of a Kinesis or DynamoDB stream
// (what names it), reading with read; each record becomes an envelope of
// source from stream arn, with the event id eventID gives it.
func shardLanes(shards []string, cp map[string]string, r Range, now time.Time, what string, source sevents.Source, arn string,
	read func(ctx context.Context, shard, after string, n int) ([]invocation.StreamRecord, error),
	eventID func(shard string, sr invocation.StreamRecord) string) []*lane {
	var lanes []*lane
	for _, id := range shards {
		var first func(invocation.StreamRecord) error
		if r.From.Number != "" && cp[id] == "" {
			first = atSequence(what, id, r.From.Number)
		}
		lanes = append(lanes, streamLane(id, cp[id], r, now.Add(nowSlack),
			func(ctx context.Context, after string, n int) ([]invocation.StreamRecord, error) {
				return read(ctx, id, after, n)
			}, first,
			func(sr invocation.StreamRecord) rec {
				return rec{id: sr.SequenceNumber, pos: sr.SequenceNumber, arrival: sr.Arrival, env: &dlq.Envelope{
					Version: dlq.Version, Source: source, SourceARN: arn, Shard: id,
					RecordID: sr.SequenceNumber, EventID: eventID(id, sr), SequenceNumber: sr.SequenceNumber,
					PartitionKey: sr.PartitionKey, ArrivalTime: sr.Arrival, Record: sr.Event}}
			}))
	}
	return lanes
}

type kinesisStream struct {
	cfg  aws.Config
	name string
}

func (k *kinesisStream) open(ctx context.Context, r Range, cp map[string]string, now time.Time) (sevents.Source, string, []*lane, error) {
	probe := source.KinesisStream(k.cfg, k.name, "TRIM_HORIZON")
	arn, err := probe.StreamARN(ctx)
	if err != nil {
		return "", "", nil, err
	}
	shards, err := probe.Shards(ctx)
	if err != nil {
		return "", "", nil, err
	}
	what := "Kinesis stream " + k.name
	ids, err := pickLanes(shards, r.Lanes, r, "shard", what)
	if err != nil {
		return "", "", nil, err
	}
	if !r.From.Time.IsZero() {
		retention, err := probe.Retention(ctx)
		if err != nil {
			return "", "", nil, err
		}
		if err := trimmedSince(ctx, what, ids, r.From.Time, now, retention, probe.Read); err != nil {
			return "", "", nil, err
		}
	}
	position := "TRIM_HORIZON"
	var opts []source.KinesisStreamOption
	switch {
	case !r.From.Time.IsZero():
		position = "AT_TIMESTAMP"
		opts = append(opts, source.KinesisStartingTimestamp(r.From.Time))
	case r.From.Number != "":
		position = "AT_SEQUENCE_NUMBER"
		opts = append(opts, source.KinesisStartingSequenceNumbers(map[string]string{ids[0]: r.From.Number}))
	}
	src := source.KinesisStream(k.cfg, k.name, position, opts...)
	return sevents.SourceKinesis, arn, shardLanes(ids, cp, r, now, what, sevents.SourceKinesis, arn, src.Read,
		func(shard string, sr invocation.StreamRecord) string { return shard + ":" + sr.SequenceNumber }), nil
}

func (k *kinesisStream) payload(recs []rec) ([]byte, error) { return envelopeEvent(recs) }
func (k *kinesisStream) close()                             {}

type dynamoDBStream struct {
	cfg aws.Config
	arn string
}

func (d *dynamoDBStream) open(ctx context.Context, r Range, cp map[string]string, now time.Time) (sevents.Source, string, []*lane, error) {
	probe := source.DynamoDBStream(d.cfg, d.arn, "TRIM_HORIZON")
	shards, err := probe.Shards(ctx)
	if err != nil {
		return "", "", nil, err
	}
	what := "DynamoDB stream " + d.arn
	ids, err := pickLanes(shards, r.Lanes, r, "shard", what)
	if err != nil {
		return "", "", nil, err
	}
	if !r.From.Time.IsZero() {
		if err := trimmedSince(ctx, what, ids, r.From.Time, now, DynamoDBRetention, probe.Read); err != nil {
			return "", "", nil, err
		}
	}
	position := "TRIM_HORIZON"
	var opts []source.DynamoDBStreamOption
	if r.From.Number != "" {
		position = "AT_SEQUENCE_NUMBER"
		opts = append(opts, source.DynamoDBStartingSequenceNumbers(map[string]string{ids[0]: r.From.Number}))
	}
	src := source.DynamoDBStream(d.cfg, d.arn, position, opts...)
	return sevents.SourceDynamoDB, d.arn, shardLanes(ids, cp, r, now, what, sevents.SourceDynamoDB, d.arn, src.Read,
		func(_ string, sr invocation.StreamRecord) string {
			var ev struct {
				EventID string `json:"eventID"`
			}
			_ = json.Unmarshal(sr.Event, &ev)
			return ev.EventID
		}), nil
}

func (d *dynamoDBStream) payload(recs []rec) ([]byte, error) { return envelopeEvent(recs) }
func (d *dynamoDBStream) close()                             {}

// envelopeEvent builds the event with redrive.Event, which checks it with
// the runner's parser.
func envelopeEvent(recs []rec) ([]byte, error) {
	envs := make([]*dlq.Envelope, len(recs))
	for i, r := range recs {
		envs[i] = r.env
	}
	b, err := redrive.Event(envs)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return b, nil
}

type kafkaStream struct {
	seeds []string
	topic string
	env   invocation.KafkaEnvelope
	opts  []kgo.Opt
	src   *source.KafkaClusterSource
}

func (k *kafkaStream) open(ctx context.Context, r Range, cp map[string]string, now time.Time) (sevents.Source, string, []*lane, error) {
	if k.env.BootstrapServers == "" {
		k.env.BootstrapServers = strings.Join(k.seeds, ",")
	}
	src, err := source.KafkaCluster(k.seeds, []string{k.topic}, k.env, source.KafkaClientOptions(k.opts...))
	if err != nil {
		return "", "", nil, err
	}
	k.src = src
	parts, err := src.Partitions(ctx)
	if err != nil {
		return "", "", nil, err
	}
	want := make([]string, len(r.Lanes))
	for i, l := range r.Lanes {
		if isDigits(l) {
			l = sevents.KafkaPartitionKey(k.topic, mustInt(l))
		}
		want[i] = l
	}
	what := "Kafka topic " + k.topic
	ids, err := pickLanes(parts, want, r, "partition", what)
	if err != nil {
		return "", "", nil, err
	}
	var lanes []*lane
	for _, id := range ids {
		start, end, err := src.OffsetRange(ctx, id)
		if err != nil {
			return "", "", nil, err
		}
		held := fmt.Sprintf("partition %s holds offsets %d to %d", id, start, end-1)
		if end <= start {
			held = fmt.Sprintf("partition %s holds no record (its next offset is %d)", id, end)
		}
		next := start
		switch {
		case r.From.Number != "":
			next = mustInt(r.From.Number)
			if next < start {
				return "", "", nil, fmt.Errorf("replay: %s: offset %d is past the topic's retention: %w; %s", what, next, ErrTrimmed, held)
			}
		case !r.From.Time.IsZero():
			if next, err = src.OffsetAt(ctx, id, r.From.Time); err != nil {
				return "", "", nil, err
			}
			if next == start && start > 0 {
				// The oldest record left is the first at or after the time:
				// were older ones deleted that were after it too?
				recs, err := src.Fetch(ctx, id, start, 1)
				if err != nil {
					return "", "", nil, err
				}
				if len(recs) > 0 && recs[0].Timestamp.After(r.From.Time) {
					return "", "", nil, fmt.Errorf("replay: %s: --from %s: the oldest record left, offset %d, is from %s: %w; %s",
						what, r.From.Time.UTC().Format(time.RFC3339), start, recs[0].Timestamp.UTC().Format(time.RFC3339), ErrTrimmed, held)
				}
			}
		}
		last := end - 1
		switch {
		case r.To.Number != "":
			last = mustInt(r.To.Number)
		case !r.To.Time.IsZero():
			at, err := src.OffsetAt(ctx, id, r.To.Time)
			if err != nil {
				return "", "", nil, err
			}
			last = at - 1
		}
		if p := cp[id]; p != "" {
			next = mustInt(p) + 1
		}
		topic, n, _ := sevents.ParseKafkaPartitionKey(id)
		lanes = append(lanes, &lane{id: id, fill: func(ctx context.Context, max int) ([]rec, bool, error) {
			if next > last {
				return nil, true, nil
			}
			krs, err := src.Fetch(ctx, id, next, int(min(int64(max), last-next+1)))
			if err != nil {
				return nil, false, err
			}
			if len(krs) == 0 {
				return nil, true, nil // nothing more: the rest of the range is a gap
			}
			var out []rec
			for _, kr := range krs {
				if kr.Offset > last {
					return out, true, nil
				}
				p, o := n, kr.Offset
				rid := sevents.KafkaPartitionKey(topic, n) + "@" + strconv.FormatInt(o, 10)
				out = append(out, rec{id: rid, pos: strconv.FormatInt(o, 10), arrival: kr.Timestamp, env: &dlq.Envelope{
					Version: dlq.Version, Source: sevents.SourceKafka, SourceARN: k.env.EventSourceARN,
					Topic: topic, Partition: &p, Offset: &o, RecordID: rid, EventID: fmt.Sprintf("%s-%d-%d", topic, n, o),
					ArrivalTime: kr.Timestamp, Record: kr.Event}})
				next = kr.Offset + 1
			}
			return out, next > last, nil
		}})
	}
	return sevents.SourceKafka, k.topic, lanes, nil
}

// payload builds the Kafka event with redrive.Event and adds what an
// envelope does not carry and the mapping sends: bootstrapServers, after
// eventSourceArn as the runner writes it.
func (k *kafkaStream) payload(recs []rec) ([]byte, error) {
	b, err := envelopeEvent(recs)
	if err != nil {
		return nil, err
	}
	i := bytes.Index(b, []byte(`,"records":{`))
	if i < 0 {
		return nil, errors.New("replay: the Kafka event built has no records map")
	}
	servers, _ := json.Marshal(k.env.BootstrapServers)
	out := make([]byte, 0, len(b)+len(servers)+24)
	out = append(out, b[:i]...)
	out = append(out, `,"bootstrapServers":`...)
	out = append(out, servers...)
	return append(out, b[i:]...), nil
}

func (k *kafkaStream) close() {
	if k.src != nil {
		k.src.Close()
	}
}

// mustInt reads a string of digits checked by isDigits (a number too big
// for int64 gives a huge value, which no offset reaches).
func mustInt(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 1<<63 - 1
	}
	return n
}
