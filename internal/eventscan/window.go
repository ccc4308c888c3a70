package eventscan

import "time"

// WindowEvent is the tumbling window fields of a Kinesis or DynamoDB
// Streams event (a mapping with TumblingWindowInSeconds); Records only
// counts the records.
type WindowEvent struct {
	Window *struct {
		Start time.Time `json:"start"`
		End   time.Time `json:"end"`
	} `json:"window"`
	State                   map[string]string `json:"state"`
	ShardID                 string            `json:"shardId"`
	EventSourceARN          string            `json:"eventSourceARN"`
	IsFinalInvokeForWindow  bool              `json:"isFinalInvokeForWindow"`
	IsWindowTerminatedEarly bool              `json:"isWindowTerminatedEarly"`
	Records                 []struct{}        `json:"Records"`
}
