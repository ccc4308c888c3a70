package localtest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	sevents "github.com/sluicehq/sluice/events"
)

// S3ObjectDestination writes each on-failure record as one object, as
// Lambda writes to an S3 bucket destination: the record with `payload`, the
// batch's whole invocation event as a JSON string, under the key
// aws/lambda/<mapping UUID>/<shard id>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<random UUID>
// (the date and time are the record's timestamp, UTC). For Kafka the shard
// id is the topic-partition.
//
// Where the objects go is up to the function that puts them: DirDestination
// writes files, destination.S3 puts them into a bucket.
type S3ObjectDestination struct {
	put   func(ctx context.Context, key string, body []byte) error
	where string // the bucket or directory, for errors
	uuid  string
	newID func() string
}

var _ PayloadDestination = (*S3ObjectDestination)(nil)

// NewS3ObjectDestination returns a destination that hands each object to
// put, under its key; where names the bucket or directory in errors.
// mappingUUID names the mapping in the object keys; "" is
// DefaultMappingUUID.
func NewS3ObjectDestination(where, mappingUUID string, put func(ctx context.Context, key string, body []byte) error) *S3ObjectDestination {
	return &S3ObjectDestination{where: where, uuid: or(mappingUUID, DefaultMappingUUID), newID: randomUUID, put: put}
}

// DirDestination returns a destination that writes the objects
// destination.S3 would put as files under dir, the key's slashes making
// directories.
func DirDestination(dir, mappingUUID string) *S3ObjectDestination {
	return &S3ObjectDestination{
		where: dir,
		uuid:  or(mappingUUID, DefaultMappingUUID),
		newID: randomUUID,
		put: func(_ context.Context, key string, body []byte) error {
			path := filepath.Join(dir, filepath.FromSlash(key))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			return os.WriteFile(path, body, 0o644)
		},
	}
}

// Send writes rec as it is (with whatever Payload it has), under the shard
// its batch info names.
func (d *S3ObjectDestination) Send(ctx context.Context, rec sevents.OnFailureRecord) error {
	return d.write(ctx, rec, recordShard(rec))
}

// SendBatch writes rec with the batch's event as its payload.
func (d *S3ObjectDestination) SendBatch(ctx context.Context, rec sevents.OnFailureRecord, batch FailedBatch) error {
	rec.Payload = string(batch.Event)
	shard := batch.Shard
	if shard == "" {
		shard = recordShard(rec)
	}
	return d.write(ctx, rec, shard)
}

func (d *S3ObjectDestination) write(ctx context.Context, rec sevents.OnFailureRecord, shard string) error {
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, rec.Timestamp)
	if err != nil {
		t = time.Now()
	}
	key := s3ObjectKey(d.uuid, shard, t, d.newID())
	if err := d.put(ctx, key, body); err != nil {
		return fmt.Errorf("on-failure destination %s: %w", d.where, err)
	}
	return nil
}

// s3ObjectKey is the key Lambda gives an on-failure object.
func s3ObjectKey(mappingUUID, shard string, t time.Time, id string) string {
	t = t.UTC()
	return fmt.Sprintf("aws/lambda/%s/%s/%s/%s-%s", mappingUUID, shard, t.Format("2006/01/02"), t.Format("2006-01-02T15.04.05"), id)
}

// recordShard is the shard (or Kafka topic-partition) an on-failure record
// names; for a Kafka record with several partitions, the first.
func recordShard(rec sevents.OnFailureRecord) string {
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

// randomUUID is a random (version 4) UUID.
func randomUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
