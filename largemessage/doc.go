// Package largemessage resolves the messages the Amazon SQS Extended Client
// Library offloaded to S3: a message too large for SQS is stored as an S3
// object, and the queue carries a pointer to it,
//
//	["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"...","s3Key":"..."}]
//
// with the message attribute ExtendedPayloadSize (SQSLargePayloadSize in
// older clients) holding the payload's size. SQS wraps an SQS handler's
// function: a message with the attribute is read from S3 through the
// client the function supplies (an *s3.Client of aws-sdk-go-v2, or anything
// with its GetObject method) and decoded into the function's type; any
// other message is decoded from its body, so one function serves a queue
// of small and large messages.
//
// It is a package of its own so that package handlers links no S3 client.
//
// The objects stay in the bucket: unlike the Java client's receive path,
// nothing here deletes them (Lambda deletes the message, and a retry must
// still find its payload). Expire them with a lifecycle rule longer than the
// queue's retention period.
package largemessage
