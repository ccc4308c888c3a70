// Package glueregistry is a kafkacodec.Registry for AWS Glue Schema
// Registry: it reads a schema version by its UUID with GetSchemaVersion and
// keeps it for the life of the container. It is the only part of Sluice's
// Kafka decoding that links an AWS SDK service client.
//
// The function's role needs glue:GetSchemaVersion on the registry and its
// schemas.
package glueregistry
