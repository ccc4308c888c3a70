package destination_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/source"
)

// A Kafka mapping with a kafka://topic destination on the source's cluster
// (kfake) gives up on a batch: each failed record becomes one message on
// the destination topic, keyed by its own key, holding the on-failure
// record with KafkaBatchInfo.recordInfo and the record's own event as
// payload (AWS "Record format for a Kafka destination").
func TestKafkaTopicDestination(t *testing.T) {
	t.Parallel()
	ctx := awsCtx(t, 30*time.Second)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders", "orders-dlt"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	seeds := cluster.ListenAddrs()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	keys := [][]byte{[]byte("k0"), nil, []byte("k2")}
	for i, k := range keys {
		r := &kgo.Record{Topic: "orders", Key: k, Value: []byte(fmt.Sprintf(`{"n":%d}`, i))}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	arn := "arn:aws:kafka:us-east-1:123456789012:cluster/local/1"
	src, err := source.KafkaCluster(seeds, []string{"orders"}, invocation.KafkaEnvelope{EventSourceARN: arn})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	m := &localtest.Mapping{EventSource: events.SourceKafka, Mode: localtest.KafkaProvisioned, StartingPosition: "TRIM_HORIZON",
		Topic: "orders", BatchSize: aws.Int(10), MaximumRetryAttempts: aws.Int(1),
		DestinationConfig: &localtest.DestinationConfig{OnFailure: &localtest.OnFailure{Destination: "kafka://orders-dlt"}}}
	h := bytesFunc(func(context.Context, []byte) ([]byte, error) { return nil, errors.New("boom") })
	rep, err := localtest.Run(ctx, localtest.Options{Mapping: m, Kafka: src, Invoker: localtest.InProcess(h)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.OnFailure != 3 || len(rep.OnFailureRecords) != 1 {
		t.Fatalf("totals %+v, %d on-failure records", rep.Totals, len(rep.OnFailureRecords))
	}
	report := rep.OnFailureRecords[0]

	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("orders-dlt"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []*kgo.Record
	for len(got) < 3 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v (have %d messages)", err, len(got))
		}
		got = append(got, fs.Records()...)
	}
	for i, r := range got {
		if string(r.Key) != string(keys[i]) || (r.Key == nil) != (keys[i] == nil) || len(r.Headers) != 0 {
			t.Errorf("message %d: key %q headers %v, want key %q and no headers", i, r.Key, r.Headers, keys[i])
		}
		var msg struct {
			RequestContext  json.RawMessage `json:"requestContext"`
			ResponseContext json.RawMessage `json:"responseContext"`
			Version         string          `json:"version"`
			KafkaBatchInfo  struct {
				BatchSize        int    `json:"batchSize"`
				EventSourceARN   string `json:"eventSourceArn"`
				BootstrapServers string `json:"bootstrapServers"`
				PayloadSize      int    `json:"payloadSize"`
				RecordInfo       struct {
					Offset    string `json:"offset"`
					Timestamp string `json:"timestamp"`
				} `json:"recordInfo"`
			} `json:"KafkaBatchInfo"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(r.Value, &msg); err != nil {
			t.Fatalf("message %d: %v: %s", i, err, r.Value)
		}
		b := msg.KafkaBatchInfo
		if b.BatchSize != 1 || b.EventSourceARN != arn || b.BootstrapServers != strings.Join(seeds, ",") ||
			b.RecordInfo.Offset != fmt.Sprint(i) || b.PayloadSize != len(msg.Payload) || msg.Version != "1.0" {
			t.Errorf("message %d: KafkaBatchInfo %+v", i, b)
		}
		if want, _ := json.Marshal(report.RequestContext); string(msg.RequestContext) != string(want) {
			t.Errorf("message %d: requestContext %s, want the report's %s", i, msg.RequestContext, want)
		}
		var ev struct {
			EventSource string `json:"eventSource"`
			Records     map[string][]struct {
				Offset int64  `json:"offset"`
				Key    string `json:"key"`
				Value  string `json:"value"`
			} `json:"records"`
		}
		if err := json.Unmarshal(msg.Payload, &ev); err != nil {
			t.Fatalf("message %d payload: %v", i, err)
		}
		p := ev.Records["orders-0"]
		if ev.EventSource != "aws:kafka" || len(ev.Records) != 1 || len(p) != 1 || p[0].Offset != int64(i) ||
			p[0].Value != base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf(`{"n":%d}`, i))) {
			t.Errorf("message %d payload %s, want the one record's event", i, msg.Payload)
		}
		if !strings.HasPrefix(string(r.Value), `{"requestContext":`) || !strings.HasSuffix(strings.TrimSuffix(string(r.Value), "}"), string(msg.Payload)) {
			t.Errorf("message %d: fields out of the documented order: %s", i, r.Value)
		}
	}
}
