package events

// KafkaSchemaMetadata is what Lambda adds to a Kafka record's key
// (keySchemaMetadata) or value (valueSchemaMetadata) when the event source
// mapping validates that part against a schema registry (SchemaRegistryConfig).
// The key or value itself then arrives without its wire header: as JSON when
// the mapping's EventRecordFormat is JSON, or in its source encoding (Avro,
// Protobuf, JSON Schema) when it is SOURCE. aws-lambda-go's KafkaRecord does
// not carry these fields.
type KafkaSchemaMetadata struct {
	// DataFormat is the registry's format for the schema: "AVRO",
	// "PROTOBUF" or "JSON".
	DataFormat string `json:"dataFormat"`
	// SchemaID names the writer's schema: a decimal id in a Confluent
	// registry, a schema version UUID in AWS Glue Schema Registry.
	SchemaID string `json:"schemaId"`
}
