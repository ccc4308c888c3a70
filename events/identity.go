package events

import "strconv"

// ItemID names item i (from 0) of the record whose id is record, when the
// record carries several things the function handles one by one: the S3
// records of an S3 event notification (one SQS message, or SNS
// notification, holding several objects' events). It is record, "#" and
// i, e.g. "059f36b4-87a3-44ab-83d2-661975830a7d#1". The record stays the
// unit Lambda knows (reported, retried, dead-lettered whole); an item is
// how a function names the effect of one of its parts, and how the local
// runner matches such effects (docs/localtest.md, "Effects").
//
// A record's own id is the one Sluice uses everywhere: the sequence number
// (Kinesis, DynamoDB Streams), "<sequenceNumber>:<subSequenceNumber>" for a
// user record of a KPL aggregate (kpl.SubSequenceKey), the message id
// (SQS), "<topic>-<partition>@<offset>" (Kafka).
func ItemID(record string, i int) string { return record + "#" + strconv.Itoa(i) }
