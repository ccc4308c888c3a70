package events

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzParseKafkaPartitionKey: a key parses back to itself, and a parsed key
// always names a non-negative 32-bit partition.
func FuzzParseKafkaPartitionKey(f *testing.F) {
	for _, s := range []string{"orders-0", "a-b-c-12", "-1", "x-", "x--1", "t-2147483648", "t-007"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		topic, p, err := ParseKafkaPartitionKey(key)
		if err != nil {
			return
		}
		if p < 0 || p > 1<<31-1 || topic == "" {
			t.Fatalf("%q parsed to %q, %d", key, topic, p)
		}
		if back := KafkaPartitionKey(topic, p); back != key {
			t.Fatalf("%q -> %q, %d -> %q", key, topic, p, back)
		}
	})
}

// FuzzKafkaResponse: the Kafka partial batch response round-trips through
// JSON for any identifier.
func FuzzKafkaResponse(f *testing.F) {
	f.Add("orders-0", int64(100))
	f.Add("", int64(-1))
	f.Fuzz(func(t *testing.T, partition string, offset int64) {
		in := KafkaEventResponse{BatchItemFailures: []KafkaBatchItemFailure{{ItemIdentifier: KafkaItemIdentifier{partition, offset}}}}
		raw, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var out KafkaEventResponse
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		got := out.BatchItemFailures[0].ItemIdentifier
		if got.Offset != offset || (got.Partition != partition && utf8.ValidString(partition)) {
			t.Fatalf("%+v -> %s -> %+v", in, raw, out)
		}
	})
}
