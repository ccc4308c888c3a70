// Package invocation is the vocabulary shared by everything that invokes
// a Lambda function the way an event source mapping does: the local
// runner (localtest) and its invokers (localtest/invoke), and the
// operations tools (internal/redrive, internal/fetch, internal/replay, the sluice
// command). It holds three things and no machinery:
//
//   - invocations: an Invoker makes one call of the function (Invocation)
//     and says how it ended (Response); a Killer can kill the function's
//     process inside one (Kill);
//   - events: ParseEvent and ParseEvents read Lambda events of Kinesis,
//     DynamoDB Streams, SQS, Kafka (and Firehose) into an Event, naming its
//     records by the identifiers a partial batch response uses
//     (Event.Items); StreamRecord and KafkaEnvelope are what a stream or
//     Kafka event is built from;
//   - answers: Event.Verdict reads a Response as Lambda reads it: a
//     success, a partial batch response (OutcomePartial with the records
//     reported), or a failure of the whole batch (OutcomeBatchFailure for
//     a response Lambda cannot read, OutcomeFunctionError for a function
//     error), with the reason; a Firehose transformation's records
//     answered ProcessingFailed are OutcomeProcessingFailed, which
//     Firehose does not retry. AnswerVerdict reads the answer to a
//     payload that is no event (sluice invoke sends any file).
//
// It imports only the event types (package events and aws-lambda-go's) and
// the partial batch response reader it shares with the runner
// (internal/batchresponse), so a tool that replays records links neither
// the emulator nor an AWS SDK client through it. The rules it applies are those of
// docs/semantics.md.
package invocation
