// Package largemessage resolves the messages the Amazon SQS Extended Client
// Library offloaded to S3: a message over the client's threshold (256 KiB by
// default in both reference clients, though SQS itself now takes 1 MiB) is
// stored as an S3 object, and the queue carries a pointer to it,
//
//	["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"...","s3Key":"..."}]
//
// or, from the Java client's version 1 and from the Python client with
// use_legacy_attribute, the same with the class name
// "com.amazon.sqs.javamessaging.MessageS3Pointer"; the message attribute
// ExtendedPayloadSize, or SQSLargePayloadSize (the Java client's default,
// and the Python client's with use_legacy_attribute), holds the payload's
// size. Every combination of the two is read, as both reference clients
// read them.
//
// SQS wraps an SQS handler's function: a message with either attribute is
// read from S3 through the client the function supplies (an *s3.Client of
// aws-sdk-go-v2, or anything with its GetObject method) and decoded into
// the function's type; any other message is decoded from its body, so one
// function serves a queue of small and large messages.
//
// It is a package of its own so that package handlers links no S3 client.
//
// The objects stay in the bucket: unlike the Java client's receive path,
// nothing here deletes them (Lambda deletes the message, and a retry must
// still find its payload). Expire them with a lifecycle rule longer than the
// queue's retention period.
package largemessage
