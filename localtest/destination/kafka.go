package destination

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/localtest/internal/remote"
	"github.com/sluicehq/sluice/localtest/onfailure"
)

// KafkaTopic produces on-failure records to a Kafka topic, as
// Lambda does for a kafka://topic destination of a Kafka mapping (AWS
// "Using a Kafka topic as an on-failure destination"): one message per
// failed record, keyed by the record's own key, whose value is the
// on-failure record with
//
//	"KafkaBatchInfo": {"batchSize": 1, "eventSourceArn", "bootstrapServers",
//	                   "payloadSize", "recordInfo": {"offset", "timestamp"}}
//	"payload":        the event of that one record (an object, not a string)
//
// AWS documents no headers; none are sent. A record without a key is
// spread round-robin over the topic's partitions; a keyed one goes where
// Kafka's default partitioner (murmur2) puts it. Close it when done.
type KafkaTopic struct {
	cl    *kgo.Client
	topic string
}

var _ onfailure.PayloadDestination = (*KafkaTopic)(nil)

// Kafka returns a destination producing to topic on the cluster
// reached through the seed brokers. The topic must exist, as on AWS.
func Kafka(seeds []string, topic string, opts ...kgo.Opt) (*KafkaTopic, error) {
	if len(seeds) == 0 {
		return nil, errors.New("localtest: destination.Kafka needs at least one seed broker address")
	}
	if topic == "" {
		return nil, errors.New("localtest: destination.Kafka needs a topic")
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(dltPartitioner{}),
	}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("localtest: Kafka client for the on-failure topic %s on %v: %w", topic, seeds, err)
	}
	return &KafkaTopic{cl: cl, topic: topic}, nil
}

// Close closes the producer.
func (d *KafkaTopic) Close() { d.cl.Close() }

// Send produces rec alone, metadata only: without the batch there are no
// records to send.
func (d *KafkaTopic) Send(ctx context.Context, rec sevents.OnFailureRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return d.produce(ctx, &kgo.Record{Value: b})
}

// SendBatch produces one message per record of the batch.
func (d *KafkaTopic) SendBatch(ctx context.Context, rec sevents.OnFailureRecord, batch onfailure.FailedBatch) error {
	msgs, err := kafkaFailureMessages(rec, batch.Event)
	if err != nil {
		return fmt.Errorf("on-failure topic %s: %w", d.topic, err)
	}
	return d.produce(ctx, msgs...)
}

func (d *KafkaTopic) produce(ctx context.Context, recs ...*kgo.Record) error {
	if err := d.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return remote.Err(ctx, "on-failure topic "+d.topic+": produce", err)
	}
	return nil
}

// kafkaFailureMessages splits the event of a given-up Kafka batch into the
// messages Lambda produces to a Kafka destination, in partition and offset
// order.
func kafkaFailureMessages(rec sevents.OnFailureRecord, event []byte) ([]*kgo.Record, error) {
	var ev struct {
		EventSource      string                       `json:"eventSource"`
		EventSourceARN   string                       `json:"eventSourceArn"`
		BootstrapServers string                       `json:"bootstrapServers"`
		Records          map[string][]json.RawMessage `json:"records"`
	}
	if err := json.Unmarshal(event, &ev); err != nil {
		return nil, fmt.Errorf("the failed batch's event is not a Kafka event: %w", err)
	}
	rec.KafkaBatchInfo, rec.Payload = nil, ""
	head, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	var out []*kgo.Record
	for _, part := range slices.Sorted(maps.Keys(ev.Records)) {
		for _, raw := range ev.Records[part] {
			var r struct {
				Key       *string `json:"key"`
				Offset    int64   `json:"offset"`
				Timestamp int64   `json:"timestamp"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				return nil, fmt.Errorf("record of %s in the failed batch: %w", part, err)
			}
			payload, err := json.Marshal(struct {
				BootstrapServers string                       `json:"bootstrapServers"`
				EventSource      string                       `json:"eventSource"`
				EventSourceARN   string                       `json:"eventSourceArn,omitempty"`
				Records          map[string][]json.RawMessage `json:"records"`
			}{ev.BootstrapServers, ev.EventSource, ev.EventSourceARN, map[string][]json.RawMessage{part: {raw}}})
			if err != nil {
				return nil, err
			}
			info, err := json.Marshal(kafkaDestinationInfo{
				BatchSize: 1, EventSourceARN: ev.EventSourceARN, BootstrapServers: ev.BootstrapServers,
				PayloadSize: len(payload),
				RecordInfo: kafkaRecordInfo{Offset: strconv.FormatInt(r.Offset, 10),
					Timestamp: remote.ISOTime(time.UnixMilli(r.Timestamp))},
			})
			if err != nil {
				return nil, err
			}
			value := spliceJSON(head, "KafkaBatchInfo", info, "payload", payload)
			m := &kgo.Record{Value: value}
			if r.Key != nil {
				if m.Key, err = base64.StdEncoding.DecodeString(*r.Key); err != nil {
					return nil, fmt.Errorf("record %s@%d: key: %w", part, r.Offset, err)
				}
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// kafkaDestinationInfo is KafkaBatchInfo as a Kafka destination's message
// carries it: one record, named by recordInfo.
type kafkaDestinationInfo struct {
	BatchSize        int             `json:"batchSize"`
	EventSourceARN   string          `json:"eventSourceArn,omitempty"`
	BootstrapServers string          `json:"bootstrapServers"`
	PayloadSize      int             `json:"payloadSize"`
	RecordInfo       kafkaRecordInfo `json:"recordInfo"`
}

type kafkaRecordInfo struct {
	Offset    string `json:"offset"`
	Timestamp string `json:"timestamp"`
}

// spliceJSON appends name/value pairs to the JSON object obj, keeping its
// fields' order.
func spliceJSON(obj []byte, pairs ...any) []byte {
	out := append([]byte(nil), obj[:len(obj)-1]...)
	for i := 0; i+1 < len(pairs); i += 2 {
		if len(out) > 1 {
			out = append(out, ',')
		}
		name, _ := json.Marshal(pairs[i].(string))
		out = append(out, name...)
		out = append(out, ':')
		out = append(out, pairs[i+1].([]byte)...)
	}
	return append(out, '}')
}

// dltPartitioner places keyed records as Kafka's default partitioner does
// and spreads unkeyed ones round-robin, as Lambda does for a Kafka
// on-failure destination.
type dltPartitioner struct{}

func (dltPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	return &dltTopicPartitioner{keyed: kgo.StickyKeyPartitioner(nil).ForTopic(topic)}
}

type dltTopicPartitioner struct {
	keyed kgo.TopicPartitioner
	next  atomic.Uint64
}

func (p *dltTopicPartitioner) RequiresConsistency(r *kgo.Record) bool { return r.Key != nil }

func (p *dltTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Key != nil {
		return p.keyed.Partition(r, n)
	}
	return int((p.next.Add(1) - 1) % uint64(n))
}
