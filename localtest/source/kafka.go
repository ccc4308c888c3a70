package source

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/destination"
	"github.com/sluicehq/sluice/localtest/internal/remote"
	"github.com/sluicehq/sluice/localtest/onfailure"
)

// KafkaClusterSource reads topics of a real Kafka cluster (MSK, a
// self-managed cluster, kfake, Redpanda) with franz-go, as a KafkaSource.
// It commits nothing: the runner keeps the offsets.
//
// It consumes one partition at a time. A Fetch that continues where the last
// one ended (same partition, offset one past the last record returned) takes
// records the client has already buffered; any other Fetch moves the consumer
// to the requested partition and offset, dropping what was buffered, which
// costs a round trip to the broker. Fetch calls are serialised.
type KafkaClusterSource struct {
	cl       *kgo.Client
	seeds    []string // for a kafka://topic on-failure destination on this cluster
	topics   []string
	envelope invocation.KafkaEnvelope
	pollWait time.Duration

	// start maps "<topic>-<n>" to the partition's end offset when the
	// source was created, for StartingPosition LATEST: a Fetch at offset 0
	// reads from there.
	start map[string]int64

	mu   sync.Mutex
	cur  string // "<topic>-<n>" being consumed, "" for none
	next int64  // offset the consumer of cur continues at
}

// KafkaClusterOption configures KafkaCluster.
type KafkaClusterOption func(*kafkaClusterConfig)

type kafkaClusterConfig struct {
	pollWait time.Duration
	opts     []kgo.Opt
	position string
}

// KafkaStartingPosition sets where the runner's partitions start:
// "TRIM_HORIZON" (the default, and "") reads every partition from its
// first record; "LATEST" reads only records produced after the source was
// created. For LATEST, KafkaCluster records every partition's end offset
// (ListOffsets) and a Fetch at offset 0 (where the runner starts) reads
// from that offset; the records carry their real offsets, and a Fetch at
// any other offset reads from that offset. A partition created later
// starts at 0.
func KafkaStartingPosition(position string) KafkaClusterOption {
	return func(c *kafkaClusterConfig) { c.position = position }
}

// kafkaStartTimeout bounds the ListOffsets of a LATEST source's creation.
const kafkaStartTimeout = 30 * time.Second

// KafkaPollWait sets how long a Fetch waits for records when none are
// buffered before it returns an empty result. Default 250 ms.
func KafkaPollWait(d time.Duration) KafkaClusterOption {
	return func(c *kafkaClusterConfig) { c.pollWait = d }
}

// KafkaClientOptions adds franz-go client options, e.g. kgo.DialTLSConfig or
// kgo.SASL for MSK.
func KafkaClientOptions(opts ...kgo.Opt) KafkaClusterOption {
	return func(c *kafkaClusterConfig) { c.opts = append(c.opts, opts...) }
}

// KafkaCluster returns a KafkaSource for topics on the cluster reached
// through the seed brokers. envelope is what the events carry around the
// records: EventSource "aws:kafka" with EventSourceARN for MSK, or
// "SelfManagedKafka"; an empty BootstrapServers becomes the seeds joined by
// commas. Close the source when done.
func KafkaCluster(seeds []string, topics []string, envelope invocation.KafkaEnvelope, opts ...KafkaClusterOption) (*KafkaClusterSource, error) {
	if len(seeds) == 0 {
		return nil, errors.New("localtest: KafkaCluster needs at least one seed broker address")
	}
	if len(topics) == 0 {
		return nil, errors.New("localtest: KafkaCluster needs at least one topic")
	}
	cfg := kafkaClusterConfig{pollWait: 250 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.pollWait <= 0 {
		return nil, fmt.Errorf("localtest: KafkaPollWait %v must be positive", cfg.pollWait)
	}
	if cfg.position != "" && cfg.position != "TRIM_HORIZON" && cfg.position != "LATEST" {
		return nil, fmt.Errorf("localtest: KafkaStartingPosition %q: want TRIM_HORIZON or LATEST", cfg.position)
	}
	if envelope.EventSource == "" {
		envelope.EventSource = "SelfManagedKafka"
		if envelope.EventSourceARN != "" {
			envelope.EventSource = "aws:kafka"
		}
	}
	if envelope.BootstrapServers == "" {
		envelope.BootstrapServers = strings.Join(seeds, ",")
	}
	kopts := append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		// A direct consumer with no partitions yet; Fetch adds them.
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{}),
		// A broker holds an empty fetch this long, and a fetch in flight
		// delays the first one after a move: keep it near the poll wait.
		kgo.FetchMaxWait(min(max(cfg.pollWait, 10*time.Millisecond), time.Second)),
		kgo.MetadataMinAge(100 * time.Millisecond),
	}, cfg.opts...)
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("localtest: Kafka client for %v: %w", seeds, err)
	}
	k := &KafkaClusterSource{
		cl:       cl,
		seeds:    slices.Clone(seeds),
		topics:   slices.Clone(topics),
		envelope: envelope,
		pollWait: cfg.pollWait,
	}
	if cfg.position == "LATEST" {
		ctx, cancel := context.WithTimeout(context.Background(), kafkaStartTimeout)
		defer cancel()
		if k.start, err = k.endOffsets(ctx); err != nil {
			cl.Close()
			return nil, fmt.Errorf("localtest: Kafka StartingPosition LATEST: %w", err)
		}
	}
	return k, nil
}

// endOffsets returns the end offset of every partition of the topics.
func (k *KafkaClusterSource) endOffsets(ctx context.Context) (map[string]int64, error) {
	parts, err := k.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	byTopic := map[string]int{}
	for _, key := range parts {
		topic, p, _ := sevents.ParseKafkaPartitionKey(key)
		i, ok := byTopic[topic]
		if !ok {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
			byTopic[topic] = i
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = int32(p)
		rp.Timestamp = -1 // latest
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp, err := req.RequestWith(ctx, k.cl)
	if err != nil {
		return nil, remote.Err(ctx, fmt.Sprintf("localtest: Kafka ListOffsets for topics %v", k.topics), err)
	}
	out := make(map[string]int64, len(parts))
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			key := sevents.KafkaPartitionKey(t.Topic, int64(p.Partition))
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("localtest: Kafka ListOffsets %s: %v", key, err)
			}
			out[key] = p.Offset
		}
	}
	for _, key := range parts {
		if _, ok := out[key]; !ok {
			return nil, fmt.Errorf("localtest: Kafka ListOffsets %s: no answer for the partition", key)
		}
	}
	return out, nil
}

// Close closes the client.
func (k *KafkaClusterSource) Close() { k.cl.Close() }

// Envelope returns the event envelope.
func (k *KafkaClusterSource) Envelope() invocation.KafkaEnvelope { return k.envelope }

// Partitions lists "<topic>-<n>" for every partition of the topics, ordered
// by topic (as given) then partition number.
func (k *KafkaClusterSource) Partitions(ctx context.Context) ([]string, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range k.topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, k.cl)
	if err != nil {
		return nil, remote.Err(ctx, fmt.Sprintf("localtest: Kafka metadata for topics %v", k.topics), err)
	}
	parts := map[string][]int32{}
	for _, t := range resp.Topics {
		name := kmsg.StringPtr("")
		if t.Topic != nil {
			name = t.Topic
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return nil, fmt.Errorf("localtest: Kafka topic %q: %v", *name, err)
		}
		for _, p := range t.Partitions {
			parts[*name] = append(parts[*name], p.Partition)
		}
	}
	var out []string
	for _, t := range k.topics {
		ps := parts[t]
		if len(ps) == 0 {
			return nil, fmt.Errorf("localtest: Kafka topic %q has no partitions (does it exist?)", t)
		}
		slices.Sort(ps)
		for _, p := range ps {
			out = append(out, sevents.KafkaPartitionKey(t, int64(p)))
		}
	}
	return out, nil
}

// Fetch returns up to max records of partition ("<topic>-<n>") from offset
// on (for StartingPosition LATEST, offset 0 means the partition's end
// offset when the source was created; see KafkaStartingPosition). With nothing buffered it polls for the poll wait (KafkaPollWait); if
// nothing came but the partition's end offset (ListOffsets) is past offset,
// the consumer is still starting up and it keeps waiting, up to 5 s;
// otherwise it returns an empty result.
func (k *KafkaClusterSource) Fetch(ctx context.Context, partition string, offset int64, max int) ([]invocation.KafkaRecord, error) {
	if max <= 0 {
		return nil, nil
	}
	topic, p, err := sevents.ParseKafkaPartitionKey(partition)
	if err != nil {
		return nil, fmt.Errorf("localtest: Kafka Fetch: %w", err)
	}
	if !slices.Contains(k.topics, topic) {
		return nil, fmt.Errorf("localtest: Kafka Fetch %s: topic %q is not one of this source's topics %v", partition, topic, k.topics)
	}
	if offset < 0 {
		return nil, fmt.Errorf("localtest: Kafka Fetch %s: negative offset %d", partition, offset)
	}
	if offset == 0 {
		offset = k.start[partition]
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cur != partition || k.next != offset {
		if k.cur != "" {
			ct, cp, _ := sevents.ParseKafkaPartitionKey(k.cur)
			k.cl.RemoveConsumePartitions(map[string][]int32{ct: {int32(cp)}})
		}
		k.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {int32(p): kgo.NewOffset().At(offset)}})
		k.cur, k.next = partition, offset
	}

	pctx, cancel := context.WithTimeout(ctx, k.pollWait)
	defer cancel()
	var recs []events.KafkaRecord
	extended := false
	for {
		fs := k.cl.PollRecords(pctx, max-len(recs))
		var ferr error
		fs.EachError(func(t string, pp int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			if t == topic && pp == int32(p) || t == "" {
				ferr = errors.Join(ferr, fmt.Errorf("%s-%d: %v", t, pp, err))
			}
		})
		if ferr != nil {
			return nil, fmt.Errorf("localtest: Kafka Fetch %s at offset %d: %w", partition, offset, ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			// Anything else is from before a move.
			if r.Topic != topic || r.Partition != int32(p) || r.Offset < k.next || len(recs) >= max {
				return
			}
			recs = append(recs, kafkaRecord(r))
			k.next = r.Offset + 1
		})
		if ctx.Err() != nil {
			return nil, fmt.Errorf("localtest: Kafka Fetch %s: %w", partition, context.Cause(ctx))
		}
		// Return what the first non-empty poll brought rather than wait out
		// the poll wait for more.
		if len(recs) > 0 {
			break
		}
		if pctx.Err() != nil {
			// Nothing within the poll wait. If the log holds records from
			// offset on, the consumer is still starting up (metadata, first
			// fetch after a move): wait for them, up to kafkaMaxWait.
			if extended {
				break
			}
			end, err := k.endOffset(ctx, topic, int32(p))
			if err != nil {
				return nil, err
			}
			if end <= offset {
				break
			}
			extended = true
			cancel()
			pctx, cancel = context.WithTimeout(ctx, kafkaMaxWait)
			defer cancel()
		}
	}
	out := make([]invocation.KafkaRecord, len(recs))
	for i, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("localtest: encode Kafka record %s@%d: %w", partition, r.Offset, err)
		}
		out[i] = invocation.KafkaRecord{Offset: r.Offset, Timestamp: r.Timestamp.Time, Key: decodedKey(r.Key), Event: b}
	}
	return out, nil
}

func decodedKey(b64 string) string {
	b, _ := base64.StdEncoding.DecodeString(b64)
	return string(b)
}

// kafkaMaxWait bounds a Fetch waiting for records the log is known to hold.
const kafkaMaxWait = 5 * time.Second

// endOffset returns the partition's high watermark (ListOffsets, latest).
func (k *KafkaClusterSource) endOffset(ctx context.Context, topic string, partition int32) (int64, error) {
	return k.listOffset(ctx, topic, partition, -1)
}

// OffsetRange returns the offset of the first record partition
// ("<topic>-<n>") still holds (its log start offset) and its end offset
// (one past its last record): ListOffsets earliest and latest.
func (k *KafkaClusterSource) OffsetRange(ctx context.Context, partition string) (start, end int64, err error) {
	topic, p, err := sevents.ParseKafkaPartitionKey(partition)
	if err != nil {
		return 0, 0, fmt.Errorf("localtest: Kafka OffsetRange: %w", err)
	}
	if start, err = k.listOffset(ctx, topic, int32(p), -2); err != nil {
		return 0, 0, err
	}
	if end, err = k.listOffset(ctx, topic, int32(p), -1); err != nil {
		return 0, 0, err
	}
	return start, end, nil
}

// OffsetAt returns the offset of partition's first record whose timestamp
// is at or after t (ListOffsets by timestamp), or its end offset when
// there is none.
func (k *KafkaClusterSource) OffsetAt(ctx context.Context, partition string, t time.Time) (int64, error) {
	topic, p, err := sevents.ParseKafkaPartitionKey(partition)
	if err != nil {
		return 0, fmt.Errorf("localtest: Kafka OffsetAt: %w", err)
	}
	off, err := k.listOffset(ctx, topic, int32(p), t.UnixMilli())
	if err != nil {
		return 0, err
	}
	if off < 0 { // no record at or after t
		return k.listOffset(ctx, topic, int32(p), -1)
	}
	return off, nil
}

// listOffset asks ListOffsets for the partition's offset at ts: a time in
// Unix milliseconds, -1 latest, -2 earliest.
func (k *KafkaClusterSource) listOffset(ctx context.Context, topic string, partition int32, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = partition
	rp.Timestamp = ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	what := fmt.Sprintf("localtest: Kafka ListOffsets %s", sevents.KafkaPartitionKey(topic, int64(partition)))
	resp, err := req.RequestWith(ctx, k.cl)
	if err != nil {
		return 0, remote.Err(ctx, what, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if t.Topic != topic || p.Partition != partition {
				continue
			}
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return 0, fmt.Errorf("%s: %v", what, err)
			}
			return p.Offset, nil
		}
	}
	return 0, fmt.Errorf("%s: no answer for the partition", what)
}

// kafkaRecord converts a consumed record to the Lambda Kafka record.
func kafkaRecord(r *kgo.Record) events.KafkaRecord {
	ev := events.KafkaRecord{
		Topic:         r.Topic,
		Partition:     int64(r.Partition),
		Offset:        r.Offset,
		Timestamp:     events.MilliSecondsEpochTime{Time: r.Timestamp.Truncate(time.Millisecond)},
		TimestampType: "CREATE_TIME",
		Headers:       make([]map[string]events.JSONNumberBytes, 0, len(r.Headers)),
	}
	if r.Attrs.TimestampType() == 1 {
		ev.TimestampType = "LOG_APPEND_TIME"
	}
	if r.Key != nil {
		ev.Key = base64.StdEncoding.EncodeToString(r.Key)
	}
	if r.Value != nil {
		ev.Value = base64.StdEncoding.EncodeToString(r.Value)
	}
	for _, h := range r.Headers {
		v := h.Value
		if v == nil {
			v = []byte{}
		}
		ev.Headers = append(ev.Headers, map[string]events.JSONNumberBytes{h.Key: v})
	}
	return ev
}

// OpenTopic opens the on-failure destination kafka://topic (seeds nil: the
// topic on this source's cluster) or kafka://host:port/topic; the runner
// calls it for a mapping whose Options.Destination is nil.
func (k *KafkaClusterSource) OpenTopic(seeds []string, topic string) (onfailure.Destination, func(), error) {
	if seeds == nil {
		seeds = k.seeds
	}
	d, err := destination.Kafka(seeds, topic)
	if err != nil {
		return nil, nil, err
	}
	return d, d.Close, nil
}
