package invocation

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

// checkImage refuses a DynamoDB image (field Keys, NewImage or OldImage)
// DynamoDB could not have written: a number (N, NS) that is not one.
func checkImage(field string, img map[string]events.DynamoDBAttributeValue) error {
	for _, k := range slices.Sorted(maps.Keys(img)) {
		if err := checkValue(field+"."+k, img[k]); err != nil {
			return err
		}
	}
	return nil
}

func checkValue(path string, v events.DynamoDBAttributeValue) error {
	switch v.DataType() {
	case events.DataTypeString, events.DataTypeBoolean, events.DataTypeNull, events.DataTypeBinary,
		events.DataTypeStringSet, events.DataTypeBinarySet:
		return nil
	case events.DataTypeNumber:
		if !isJSONNumber(v.Number()) {
			return fmt.Errorf("dynamodb.%s: N %q is not a number", path, v.Number())
		}
		return nil
	case events.DataTypeNumberSet:
		for _, n := range v.NumberSet() {
			if err := checkValue(path, events.NewNumberAttribute(n)); err != nil {
				return err
			}
		}
		return nil
	case events.DataTypeList:
		for i, el := range v.List() {
			if err := checkValue(fmt.Sprintf("%s[%d]", path, i), el); err != nil {
				return err
			}
		}
		return nil
	case events.DataTypeMap:
		m := v.Map()
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := checkValue(path+"."+k, m[k]); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("dynamodb.%s: unknown attribute value type %d", path, v.DataType())
}

// isJSONNumber reports whether s is a JSON number, as DynamoDB writes N.
func isJSONNumber(s string) bool {
	return s != "" && strings.TrimSpace(s) == s && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Valid([]byte(s))
}

// addKafka reads an MSK or self-managed Kafka event. Partitions are taken
// in the order of their topic and number; records in each keep the event's
// order.
func (e *Event) addKafka(env map[string]json.RawMessage, recordsMap json.RawMessage) error {
	var src string
	if v, ok := env["eventSource"]; ok {
		if err := json.Unmarshal(v, &src); err != nil {
			return fmt.Errorf("eventSource: %w", err)
		}
	}
	if src != "" && src != "aws:kafka" && src != "SelfManagedKafka" {
		return fmt.Errorf("eventSource %q with a records map: a Kafka event's eventSource is aws:kafka (Amazon MSK) or SelfManagedKafka", src)
	}
	e.Source = sevents.SourceKafka
	var parts map[string][]events.KafkaRecord
	if err := json.Unmarshal(recordsMap, &parts); err != nil {
		return fmt.Errorf("records: %w", err)
	}
	var raws map[string][]json.RawMessage
	if err := json.Unmarshal(recordsMap, &raws); err != nil {
		return fmt.Errorf("records: %w", err)
	}
	for _, p := range kafkaPartitions(slices.Collect(maps.Keys(parts))) {
		for j, r := range parts[p.key] {
			where := fmt.Sprintf("records[%q][%d]", p.key, j)
			partition := r.Partition
			if p.n >= 0 {
				partition = p.n
			}
			if partition < 0 || partition > 1<<31-1 {
				return fmt.Errorf("%s: partition %d is out of range", where, partition)
			}
			for _, f := range []struct{ name, b64 string }{{"key", r.Key}, {"value", r.Value}} {
				if f.b64 == "" {
					continue
				}
				if _, err := base64.StdEncoding.DecodeString(f.b64); err != nil {
					return fmt.Errorf("%s.%s is not base64: %w", where, f.name, err)
				}
			}
			e.Records = append(e.Records, Record{ID: kafkaItem(p.key, r.Offset), JSON: raws[p.key][j], Partition: p.key, Offset: r.Offset})
		}
	}
	return nil
}

// kafkaPartition is one key of a Kafka event's records map.
type kafkaPartition struct {
	key   string // "<topic>-<n>" as the event holds it
	topic string // "" when Key is not "<topic>-<n>"
	n     int64  // the partition number, or -1 when Key is not "<topic>-<n>"
}

// kafkaPartitions sorts the keys of a Kafka event's records map by topic
// and partition number (keys that are not "<topic>-<n>" first, by key), as
// Event.Records lists the records.
func kafkaPartitions(keys []string) []kafkaPartition {
	ps := make([]kafkaPartition, 0, len(keys))
	for _, k := range keys {
		p := kafkaPartition{key: k, n: -1}
		if t, n, err := sevents.ParseKafkaPartitionKey(k); err == nil {
			p.topic, p.n = t, n
		}
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b kafkaPartition) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		if a.n != b.n {
			if a.n < b.n {
				return -1
			}
			return 1
		}
		return strings.Compare(a.key, b.key)
	})
	return ps
}
