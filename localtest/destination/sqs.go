package destination

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/localtest/internal/remote"
	"github.com/sluicehq/sluice/localtest/onfailure"
)

// sqsAPI is the SQS call SQSQueue makes.
type sqsAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// SQSQueue sends on-failure records to an SQS queue, one message
// per record with the record's JSON as the body, as Lambda does.
type SQSQueue struct {
	api sqsAPI
	url string
}

var _ onfailure.Destination = (*SQSQueue)(nil)

// SQS returns a Destination that sends to the queue at queueURL,
// using the endpoint and region of cfg. On a FIFO queue (URL ending in
// ".fifo"; Lambda itself accepts only standard queues) every record goes to
// message group "sluice-on-failure" with the SHA-256 of the body as its
// deduplication id.
func SQS(cfg aws.Config, queueURL string) *SQSQueue {
	return &SQSQueue{api: sqs.NewFromConfig(cfg), url: queueURL}
}

// Send sends rec as one message.
func (d *SQSQueue) Send(ctx context.Context, rec sevents.OnFailureRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("localtest: encode on-failure record: %w", err)
	}
	in := &sqs.SendMessageInput{QueueUrl: &d.url, MessageBody: aws.String(string(b))}
	if strings.HasSuffix(d.url, ".fifo") {
		sum := sha256.Sum256(b)
		in.MessageGroupId = aws.String("sluice-on-failure")
		in.MessageDeduplicationId = aws.String(hex.EncodeToString(sum[:]))
	}
	if _, err := d.api.SendMessage(ctx, in); err != nil {
		return remote.Err(ctx, "localtest: SQS on-failure destination "+d.url+": SendMessage", err)
	}
	return nil
}
