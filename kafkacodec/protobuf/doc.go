// Package protobuf decodes Protobuf keys and values for handlers.NewKafka
// into generated message types (google.golang.org/protobuf).
//
// The record type names the message: a handler for KafkaRecord[*pb.Order]
// decodes each value into a new *pb.Order. No schema is fetched: the
// generated type is the reader's schema, and Protobuf's own rules let it
// read messages written by older or newer versions of the .proto file.
//
// Schema-registry serializers put message indexes before the encoded
// message, naming the message type within its .proto file: Confluent a
// list of zigzag varints after its header, Glue one unsigned varint. The
// codec skips them; they stay in the value when the event source mapping
// validated the record and took the header off (EventRecordFormat SOURCE),
// and the codec tells the registry by the form of the schema id in Lambda's
// schema metadata.
package protobuf
