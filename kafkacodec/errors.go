package kafkacodec

import "fmt"

// DecodeError is a key or value that did not decode. It is permanent: the
// same bytes will never decode with the same schema.
type DecodeError struct {
	Format   string // "avro", "protobuf", "json"
	Wire     Wire   // the framing found, WireAuto when the header was malformed
	SchemaID string // the writer's schema id, if the framing names one
	Err      error
}

func (e *DecodeError) Error() string {
	switch {
	case e.SchemaID != "":
		return fmt.Sprintf("%s (%v schema id %s): %v", e.Format, e.Wire, e.SchemaID, e.Err)
	case e.Wire == WireAuto:
		return fmt.Sprintf("%s: %v", e.Format, e.Err)
	}
	return fmt.Sprintf("%s (%v): %v", e.Format, e.Wire, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Permanent marks the error for batch.Classify.
func (e *DecodeError) Permanent() bool { return true }

// RegistryError is a schema the registry did not return.
type RegistryError struct {
	Registry string // "confluent", "glue", or another registry's name
	ID       string // the schema id asked for
	// NotFound is true when the registry answered that it has no such
	// schema: the record can never decode. Any other failure (the registry
	// unreachable, throttling, an error status) is transient.
	NotFound bool
	Err      error
}

func (e *RegistryError) Error() string {
	if e.NotFound {
		return fmt.Sprintf("%s schema registry has no schema %s: %v", e.Registry, e.ID, e.Err)
	}
	return fmt.Sprintf("%s schema registry: fetch schema %s: %v (the record fails and is delivered again)", e.Registry, e.ID, e.Err)
}

func (e *RegistryError) Unwrap() error { return e.Err }

// Transient is true unless the schema does not exist: a registry that is
// down must not send records to a dead-letter queue.
func (e *RegistryError) Transient() bool { return !e.NotFound }

// Permanent is true when the schema does not exist.
func (e *RegistryError) Permanent() bool { return e.NotFound }
