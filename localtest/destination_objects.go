package localtest

import (
	"context"
	"os"
	"path/filepath"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/localtest/internal/s3object"
	"github.com/sluicehq/sluice/localtest/onfailure"
)

// S3ObjectDestination writes each on-failure record as one file, the object
// Lambda writes to an S3 bucket destination: the record with `payload`, the
// batch's whole invocation event as a JSON string, under the key
// aws/lambda/<mapping UUID>/<shard id>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<random UUID>
// (the date and time are the record's timestamp, UTC). For Kafka the shard
// id is the topic-partition. destination.S3 puts the same objects into a
// bucket.
type S3ObjectDestination struct{ w s3object.Writer }

var _ onfailure.PayloadDestination = (*S3ObjectDestination)(nil)

// DirDestination returns a destination that writes the objects
// destination.S3 would put as files under dir, the key's slashes making
// directories. mappingUUID names the mapping in the keys; "" is
// DefaultMappingUUID.
func DirDestination(dir, mappingUUID string) *S3ObjectDestination {
	return &S3ObjectDestination{w: s3object.Writer{
		Where: dir,
		UUID:  or(mappingUUID, onfailure.DefaultMappingUUID),
		Put: func(_ context.Context, key string, body []byte) error {
			path := filepath.Join(dir, filepath.FromSlash(key))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			return os.WriteFile(path, body, 0o644)
		},
	}}
}

// Send writes rec as it is (with whatever Payload it has), under the shard
// its batch info names.
func (d *S3ObjectDestination) Send(ctx context.Context, rec sevents.OnFailureRecord) error {
	return d.w.Send(ctx, rec)
}

// SendBatch writes rec with the batch's event as its payload.
func (d *S3ObjectDestination) SendBatch(ctx context.Context, rec sevents.OnFailureRecord, batch onfailure.FailedBatch) error {
	return d.w.SendBatch(ctx, rec, batch.Shard, batch.Event)
}
