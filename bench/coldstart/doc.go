// Package coldstart guards what a Sluice handler costs a Lambda cold start:
// TestInitCost builds the smallest bootstrap of each source (cmd/*) and
// fails when one links a DynamoDB schema package without reading DynamoDB
// Streams, or when a package's initialisation, as GODEBUG=inittrace=1
// reports it, takes more than 0.5 ms; BenchmarkColdStart times process
// start to the first Runtime API /next request against a bare aws-lambda-go
// bootstrap (cmd/bare), the two interleaved, and reports the stripped
// binary sizes.
package coldstart
