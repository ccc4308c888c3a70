// Package kafkacodec decodes Kafka record keys and values for
// handlers.NewKafka: the wire formats schema-aware producers write, the
// schema registries that name their schemas, and a JSON codec. The Avro and
// Protobuf codecs live in the avro and protobuf subpackages and the AWS Glue
// Schema Registry client in glueregistry, so a function links only the
// libraries of the formats it uses; a handler that decodes JSON links none.
//
// # Wire formats
//
// A serialized key or value arrives in one of three framings:
//
//   - plain: the encoded bytes alone;
//   - Confluent: magic byte 0, a 4-byte big-endian schema id, the encoded
//     bytes (Protobuf puts message-index varints between the two);
//   - AWS Glue Schema Registry: version byte 3, a compression byte (0 none,
//     5 zlib), the 16-byte schema version UUID, the encoded bytes (Protobuf
//     puts one message-index varint before them).
//
// WireAuto, every codec's default, detects the framing: a record that
// carries Lambda's schema metadata (the event source mapping validated it
// and took the header off) first, then a Confluent or Glue header by its
// first byte, and anything else as plain. JSON text never starts with 0 or 3,
// so for JSON detection is exact; an Avro or Protobuf payload written without
// a header may, so a topic with plain binary values should say WirePlain.
//
// # Registries
//
// A Registry returns a schema by id (a Confluent decimal id or a Glue schema
// version UUID). NewConfluentRegistry talks to a Confluent-compatible REST
// registry and glueregistry.New to AWS Glue; both fetch each schema once per
// container, however many records or goroutines ask for it at once (Cache).
// A registry that cannot be reached fails the record with a transient error,
// so Lambda delivers it again; it is asked once per delivery (the handler's
// in-process retries wrap the user's function, not decoding). A schema id
// the registry does not know fails the record for good.
//
// # Limits
//
// The Avro and Protobuf codecs check each value before their libraries
// decode it, so that one record's bytes cannot exhaust the function's memory
// or time: what it claims must fit in its bytes and in the codec's Limits
// (WithLimits), whose defaults accept every value a Lambda event can carry.
// A value beyond them fails with a *LimitError naming the limit.
//
// # Errors
//
// A value that does not decode fails with a *DecodeError naming the format,
// the framing and the schema id; handlers.NewKafka adds the record's topic,
// partition and offset and fails only that record.
package kafkacodec
