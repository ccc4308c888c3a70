package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// DefaultOnFailureRetention is how long the on-failure bucket a consumer
// makes keeps an object, in days: as long as the dead-letter queues keep
// theirs.
const DefaultOnFailureRetention = DefaultDeadLetterRetention

// OnFailureKeyPrefix is where Lambda writes the objects of an S3 on-failure
// destination: aws/lambda/<mapping UUID>/<shard or topic-partition>/
// YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<UUID> (Lambda guide,
// kinesis-on-failure-destination). The role may write there only, and
// `sluice fetch-failed --from-bucket` reads there by default.
const OnFailureKeyPrefix = "aws/lambda/"

// onFailureProps are the on-failure props stream and Kafka consumers
// share.
type onFailureProps struct {
	queue     awssqs.IQueue
	bucket    awss3.IBucket
	toS3      bool
	retention int // days, for a bucket of its own
}

// onFailureProblems checks that the props name one destination.
func onFailureProblems(queue awssqs.IQueue, bucket awss3.IBucket, toS3 *bool, retention awscdk.Duration, p *[]string) onFailureProps {
	o := onFailureProps{queue: queue, bucket: bucket, toS3: boolOr(toS3, false), retention: DefaultOnFailureRetention}
	if retention != nil {
		d := seconds("OnFailureRetention", retention, DefaultOnFailureRetention*86400, p)
		if d%86400 != 0 || d <= 0 {
			*p = append(*p, "OnFailureRetention: S3 expires objects after whole days; give a whole number of days")
		}
		o.retention = d / 86400
		if !o.toS3 {
			*p = append(*p, "OnFailureRetention applies to the bucket the construct makes: set OnFailureToS3 true, or give the lifecycle to your OnFailureBucket")
		}
	}
	n := 0
	for _, set := range []bool{queue != nil, bucket != nil, o.toS3} {
		if set {
			n++
		}
	}
	if n > 1 {
		*p = append(*p, "OnFailure, OnFailureBucket and OnFailureToS3 name the on-failure destination: set one")
	}
	return o
}

// onFailureDestination is a mapping's on-failure destination: a queue or
// a bucket.
type onFailureDestination struct {
	queue  awssqs.IQueue
	bucket awss3.IBucket
}

func (d onFailureDestination) arn() *string {
	if d.bucket != nil {
		return d.bucket.BucketArn()
	}
	return d.queue.QueueArn()
}

// onFailure makes or takes the mapping's on-failure destination and lets
// the role write to it: a queue of its own unless the props say otherwise.
func (c *Consumer) onFailure(o onFailureProps, a *alarms) onFailureDestination {
	switch {
	case o.bucket != nil:
		c.grantOnFailureBucket(o.bucket)
		return onFailureDestination{bucket: o.bucket}
	case o.toS3:
		b := newOnFailureBucket(c.Construct, "OnFailureBucket", o.retention)
		c.grantOnFailureBucket(b)
		return onFailureDestination{bucket: b}
	}
	return onFailureDestination{queue: c.onFailureQueue(o.queue, a)}
}

// newOnFailureBucket makes a bucket for on-failure objects: encrypted
// (SSE-S3, stated in the template), TLS only, every public access
// blocked, ACLs off (the bucket owner owns every object), objects expire
// after retention days, and kept when the stack is deleted (it holds the
// only copy of batches past the stream's retention).
func newOnFailureBucket(scope constructs.Construct, id string, retention int) awss3.Bucket {
	b := awss3.NewBucket(scope, jsii.String(id), &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                                  jsii.String("ExpireOnFailureRecords"),
			Expiration:                          awscdk.Duration_Days(jsii.Number(retention)),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
		}},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	suppress(b, "AwsSolutions-S1",
		"Only Lambda's event source mapping writes here and only an operator's sluice fetch-failed reads and deletes: "+
			"the requests are in CloudTrail (S3 data events, if the account records them), and a server access log bucket per consumer would need its own.")
	return b
}

// grantOnFailureBucket lets the role write on-failure objects, as the
// Lambda guide asks: s3:PutObject under aws/lambda/ and s3:ListBucket,
// and the bucket's KMS key for the writes.
func (c *Consumer) grantOnFailureBucket(b awss3.IBucket) {
	objects := *b.ArnForObjects(jsii.String(OnFailureKeyPrefix + "*"))
	c.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:PutObject"),
		Resources: jsii.Strings(objects),
	}))
	c.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:ListBucket"),
		Resources: jsii.Strings(*b.BucketArn()),
	}))
	if k := b.EncryptionKey(); k != nil {
		k.Grant(c.Role, jsii.String("kms:GenerateDataKey"))
	}
	suppress(c.Role, "AwsSolutions-IAM5",
		"Lambda names each on-failure object when it writes it (aws/lambda/<mapping UUID>/<shard>/<date>/<time>-<UUID>): "+
			"the grant covers that prefix of the one bucket and nothing else.",
		`/^Resource::.*\/aws\/lambda\/\*$/g`)
}
