package events

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// KafkaEventResponse is the partial batch response for Amazon MSK and
// self-managed Kafka event source mappings (provisioned mode with
// ReportBatchItemFailures). aws-lambda-go has no such type.
//
//	{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":100}}]}
type KafkaEventResponse struct {
	BatchItemFailures []KafkaBatchItemFailure `json:"batchItemFailures"`
}

// KafkaBatchItemFailure names one failed Kafka record.
type KafkaBatchItemFailure struct {
	ItemIdentifier KafkaItemIdentifier `json:"itemIdentifier"`
}

// KafkaItemIdentifier identifies a Kafka record by its topic-partition key (the
// key of the event's records map, "<topic>-<partition>") and its offset.
type KafkaItemIdentifier struct {
	Partition string `json:"partition"`
	Offset    int64  `json:"offset"`
}

// KafkaPartitionKey returns the key Lambda uses for a topic-partition in
// KafkaEvent.Records and in KafkaItemIdentifier.Partition: "<topic>-<partition>".
func KafkaPartitionKey(topic string, partition int64) string {
	return topic + "-" + strconv.FormatInt(partition, 10)
}

// ErrBadKafkaPartitionKey is returned by ParseKafkaPartitionKey for a key that
// is not "<topic>-<non-negative partition number>".
var ErrBadKafkaPartitionKey = errors.New("events: Kafka partition key is not <topic>-<partition>")

// ParseKafkaPartitionKey splits "<topic>-<partition>" at its last dash. Topic
// names may themselves contain dashes; partition numbers never do.
func ParseKafkaPartitionKey(key string) (topic string, partition int64, err error) {
	i := strings.LastIndexByte(key, '-')
	if i <= 0 || i == len(key)-1 {
		return "", 0, fmt.Errorf("%w: %q", ErrBadKafkaPartitionKey, key)
	}
	digits := key[i+1:]
	if len(digits) > 1 && digits[0] == '0' {
		return "", 0, fmt.Errorf("%w: %q", ErrBadKafkaPartitionKey, key)
	}
	for j := 0; j < len(digits); j++ {
		if digits[j] < '0' || digits[j] > '9' {
			return "", 0, fmt.Errorf("%w: %q", ErrBadKafkaPartitionKey, key)
		}
	}
	p, err := strconv.ParseInt(digits, 10, 32)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %q", ErrBadKafkaPartitionKey, key)
	}
	return key[:i], p, nil
}
