package source_test

import (
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/source"
)

// The sources are what the runner takes. The assertions live in a test:
// the package does not import the runner, so that the tools that read
// streams with it (internal/fetch, internal/replay) do not link the emulator.
var (
	_ localtest.StreamSource = (*source.KinesisStreamSource)(nil)
	_ localtest.StreamSource = (*source.DynamoDBStreamSource)(nil)
	_ localtest.Queue        = (*source.SQSQueueSource)(nil)
	_ localtest.Quarantine   = (*source.SQSQuarantineQueue)(nil)
	_ localtest.KafkaSource  = (*source.KafkaClusterSource)(nil)
	_ localtest.TopicOpener  = (*source.KafkaClusterSource)(nil)
)
