// Package onfailure is the contract between the local runner (localtest)
// and the on-failure destinations it sends to (localtest/destination, the
// file destinations of localtest, a Kafka source's own topics): a
// Destination receives each on-failure record; a PayloadDestination also
// receives the batch the record gives up on (FailedBatch), for
// destinations that carry the records themselves (S3, a Kafka topic).
//
// It is a leaf, apart from the event types, so that the rooms beside the
// runner (localtest/source, localtest/destination) and what imports them
// (the operations tools in dlq) do not link the runner.
package onfailure

import (
	"context"

	sevents "github.com/sluicehq/sluice/events"
)

// A Destination receives on-failure records.
type Destination interface {
	Send(ctx context.Context, rec sevents.OnFailureRecord) error
}

// DefaultMappingUUID is the UUID of a mapping that sets none (localtest.Mapping.UUID).
// S3 on-failure objects are stored under it. It is fixed, so that runs are
// repeatable and their objects easy to find.
const DefaultMappingUUID = "5e1ce000-0000-4000-8000-000000000001"

// FailedBatch is the batch an on-failure record gives up on, as Lambda holds
// it when it writes to a destination that carries the records themselves
// (S3, a Kafka topic).
type FailedBatch struct {
	// MappingUUID is the event source mapping's UUID (localtest.Mapping.UUID or
	// DefaultMappingUUID).
	MappingUUID string
	// Shard is the shard id, or for Kafka the topic-partition "<topic>-<n>".
	Shard string
	// Event is the batch's invocation payload: the event the function was
	// (or, for records past their maximum age, would have been) invoked with.
	Event []byte
}

// A PayloadDestination receives each on-failure record together with the
// batch it names. The runner calls SendBatch instead of Send on a
// destination that implements it.
type PayloadDestination interface {
	Destination
	SendBatch(ctx context.Context, rec sevents.OnFailureRecord, batch FailedBatch) error
}
