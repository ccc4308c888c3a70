// Package avro decodes Avro keys and values for handlers.NewKafka with
// github.com/hamba/avro/v2, into Go structs tagged `avro:"field"`.
//
// The schema comes from the codec (WithSchema: the reader's schema, and the
// writer's when no registry is set) or from a registry by the id in the
// record's wire header or in the schema metadata Lambda adds (WithRegistry).
// With both, records written with an older or newer writer schema are
// resolved into the reader's schema by Avro's schema resolution rules:
// fields the reader lacks are skipped, fields the writer lacks take their
// defaults. Parsed and resolved schemas are kept per schema id for the life
// of the codec.
//
// A value must be exactly one value of its writer's schema: before the
// library decodes it, the codec walks the writer's schema over its bytes,
// and a value that ends early (ErrTruncated), has bytes left over
// (ErrTrailingBytes), claims more items or bytes than it holds, or goes
// beyond the codec's kafkacodec.Limits fails as a *kafkacodec.DecodeError,
// before anything is allocated for it.
//
// Schema references (a Confluent schema that names types registered under
// other subjects) are not followed: register self-contained schemas, or
// give the full schema with WithSchema.
package avro
