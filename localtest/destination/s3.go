package destination

import (
	"bytes"
	"context"

	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/internal/remote"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// s3PutObjectAPI is the S3 call S3 makes.
type s3PutObjectAPI interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// S3 returns a destination that puts objects into bucket through
// the S3 API of cfg, addressed path-style (http://host/bucket/key), which
// local S3 servers need. cfg's endpoint comes from its BaseEndpoint or, with
// config.LoadDefaultConfig, from AWS_ENDPOINT_URL_S3. mappingUUID names the
// mapping in the object keys; "" is localtest.DefaultMappingUUID.
func S3(cfg aws.Config, bucket, mappingUUID string) *localtest.S3ObjectDestination {
	api := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	return s3Destination(api, bucket, mappingUUID)
}

func s3Destination(api s3PutObjectAPI, bucket, mappingUUID string) *localtest.S3ObjectDestination {
	return localtest.NewS3ObjectDestination("s3://"+bucket, mappingUUID,
		func(ctx context.Context, key string, body []byte) error {
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
		})
}
