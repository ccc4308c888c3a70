// Package events holds the event and response shapes that Lambda exchanges with
// a stream or queue consumer, beyond what github.com/aws/aws-lambda-go/events
// already offers.
//
// Sluice reuses aws-lambda-go's types (events.KinesisEvent, events.SQSEvent,
// events.DynamoDBEvent, events.KafkaEvent and their responses) and adds only
// what that package lacks:
//
//   - KafkaEventResponse, the partial batch response for Amazon MSK and
//     self-managed Kafka, whose item identifier is a {partition, offset} object
//     rather than a string;
//   - OnFailureRecord, the metadata record Lambda sends to an on-failure
//     destination when a stream or Kafka batch exhausts its retries;
//   - UnmarshalImage and MarshalImage, which convert DynamoDB stream images to
//     and from Go structs with the same `dynamodbav` struct tags and rules as
//     aws-sdk-go-v2's attributevalue package, so one struct serves both the
//     table and its stream (compared with attributevalue in tests, without
//     linking it: its DynamoDB schema packages cost every cold start
//     milliseconds of initialisation);
//   - builders (KinesisBuilder, DynamoDBBuilder, SQSBuilder, KafkaBuilder) that
//     produce events in exactly the JSON shapes Lambda delivers, for tests,
//     examples and the local runner, KinesisBuilder.AddAggregated a record
//     aggregated as the Kinesis Producer Library writes it (package
//     events/kpl reads and writes that format).
//
// The package imports no AWS SDK package at all, so a Lambda binary that
// uses it links none.
package events
