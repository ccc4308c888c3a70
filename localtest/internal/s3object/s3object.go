// Package s3object writes on-failure records as the objects Lambda puts
// into an S3 bucket destination. localtest (DirDestination, files under a
// directory) and localtest/destination (S3, a bucket) share it.
package s3object

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"

	sevents "github.com/sluicehq/sluice/events"
)

// Writer writes each on-failure record as one object: the record with
// `payload`, the batch's whole invocation event as a JSON string, under the
// key Key gives it.
type Writer struct {
	// Put stores one object.
	Put func(ctx context.Context, key string, body []byte) error
	// Where is the bucket or directory, for errors.
	Where string
	// UUID is the mapping's UUID, in the keys.
	UUID string
	// NewID makes the key's last part; nil is RandomUUID.
	NewID func() string
}

// Send writes rec as it is (with whatever Payload it has), under the shard
// its batch info names.
func (w *Writer) Send(ctx context.Context, rec sevents.OnFailureRecord) error {
	return w.write(ctx, rec, RecordShard(rec))
}

// SendBatch writes rec with event, the failed batch's invocation payload, as
// its payload, under shard ("" is the shard rec names).
func (w *Writer) SendBatch(ctx context.Context, rec sevents.OnFailureRecord, shard string, event []byte) error {
	rec.Payload = string(event)
	if shard == "" {
		shard = RecordShard(rec)
	}
	return w.write(ctx, rec, shard)
}

func (w *Writer) write(ctx context.Context, rec sevents.OnFailureRecord, shard string) error {
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, rec.Timestamp)
	if err != nil {
		t = time.Now()
	}
	newID := w.NewID
	if newID == nil {
		newID = RandomUUID
	}
	key := Key(w.UUID, shard, t, newID())
	if err := w.Put(ctx, key, body); err != nil {
		return fmt.Errorf("on-failure destination %s: %w", w.Where, err)
	}
	return nil
}

// Key is the key Lambda gives an on-failure object:
// aws/lambda/<mapping UUID>/<shard id>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<id>,
// the date and time of t in UTC.
func Key(mappingUUID, shard string, t time.Time, id string) string {
	t = t.UTC()
	return fmt.Sprintf("aws/lambda/%s/%s/%s/%s-%s", mappingUUID, shard, t.Format("2006/01/02"), t.Format("2006-01-02T15.04.05"), id)
}

// RecordShard is the shard (or Kafka topic-partition) an on-failure record
// names; for a Kafka record with several partitions, the first.
func RecordShard(rec sevents.OnFailureRecord) string {
	switch {
	case rec.KinesisBatchInfo != nil:
		return rec.KinesisBatchInfo.ShardID
	case rec.DDBStreamInfo != nil:
		return rec.DDBStreamInfo.ShardID
	case rec.KafkaBatchInfo != nil:
		first := ""
		for p := range rec.KafkaBatchInfo.RecordsInfo {
			if first == "" || p < first {
				first = p
			}
		}
		return first
	}
	return "unknown"
}

// RandomUUID is a random (version 4) UUID.
func RandomUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
