package destination

import (
	"bytes"
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/localtest/internal/remote"
	"github.com/sluicehq/sluice/localtest/internal/s3object"
	"github.com/sluicehq/sluice/localtest/onfailure"
)

// s3PutObjectAPI is the S3 call S3Bucket makes.
type s3PutObjectAPI interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// S3Bucket writes each on-failure record as one object, as Lambda writes to
// an S3 bucket destination: the record with `payload`, the batch's whole
// invocation event as a JSON string, under the key
// aws/lambda/<mapping UUID>/<shard id>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<random UUID>
// (the date and time are the record's timestamp, UTC). For Kafka the shard
// id is the topic-partition. localtest.DirDestination writes the same
// objects as files.
type S3Bucket struct{ w s3object.Writer }

var _ onfailure.PayloadDestination = (*S3Bucket)(nil)

// S3 returns a destination that puts objects into bucket through the S3
// API of cfg, addressed path-style (http://host/bucket/key), which local S3
// servers need. cfg's endpoint comes from its BaseEndpoint or, with
// config.LoadDefaultConfig, from AWS_ENDPOINT_URL_S3. mappingUUID names the
// mapping in the object keys; "" is onfailure.DefaultMappingUUID.
func S3(cfg aws.Config, bucket, mappingUUID string) *S3Bucket {
	api := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	return s3Destination(api, bucket, mappingUUID)
}

func s3Destination(api s3PutObjectAPI, bucket, mappingUUID string) *S3Bucket {
	if mappingUUID == "" {
		mappingUUID = onfailure.DefaultMappingUUID
	}
	return &S3Bucket{w: s3object.Writer{
		Where: "s3://" + bucket,
		UUID:  mappingUUID,
		Put: func(ctx context.Context, key string, body []byte) error {
			_, err := api.PutObject(ctx, &s3.PutObjectInput{
				Bucket:      &bucket,
				Key:         &key,
				Body:        bytes.NewReader(body),
				ContentType: aws.String("application/json"),
			})
			if err != nil {
				return remote.Err(ctx, "S3 bucket "+bucket+": PutObject "+key, err)
			}
			return nil
		},
	}}
}

// Send writes rec as it is (with whatever Payload it has), under the shard
// its batch info names.
func (d *S3Bucket) Send(ctx context.Context, rec sevents.OnFailureRecord) error {
	return d.w.Send(ctx, rec)
}

// SendBatch writes rec with the batch's event as its payload.
func (d *S3Bucket) SendBatch(ctx context.Context, rec sevents.OnFailureRecord, batch onfailure.FailedBatch) error {
	return d.w.SendBatch(ctx, rec, batch.Shard, batch.Event)
}
