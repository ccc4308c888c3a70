// Package idemlatency measures what idempotency costs at production
// latency: a batch through package handlers with WithIdempotency, on the
// DynamoDB store (DynamoDB Local) and on the Redis store (redis-server),
// each behind a latencyproxy that adds a fixed round trip (SLUICE_BENCH_RTT,
// default 50ms) to every request and its answer. At such a round trip the
// wall time is set by how many round trips lie on the critical path, not by
// the servers or the CPU; the benchmarks report that count (wall / RTT).
//
//	go test -run '^$' -bench Latency -benchtime 3x ./bench/idemlatency
//
// Benchmarks (each with /dynamodb and /redis, b.ReportAllocs):
//
//   - BenchmarkLatencySQS100/<store>/first: SQS standard, 100 new messages,
//     handler defaults (8 at once).
//   - BenchmarkLatencySQS100/<store>/replay: the same batch again, every
//     key completed.
//   - BenchmarkLatencyKinesis40/<store>/{first,replay}: Kinesis, 40
//     records of one shard, in order, new and then again.
//
// Metrics: ns/op is the batch's wall time; RTTs is wall / RTT (round trips
// on the critical path); requests/record and writes/record count the
// store's requests (a Redis pipeline is one request).
//
// Environment: SLUICE_BENCH_DYNAMODB (a DynamoDB Local endpoint,
// http://127.0.0.1:PORT; default one of internal/testsupport/servers), SLUICE_BENCH_REDIS
// (a Redis address, 127.0.0.1:PORT; default one of internal/testsupport/servers),
// SLUICE_BENCH_RTT, SLUICE_BENCH_SQS and SLUICE_BENCH_KINESIS (bench/gen's
// sqs-1k.json and kinesis-10k.json, of which the first 100 and 40 records
// are taken; default events of the same shape). Each benchmark starts its
// own proxies. scripts/bench-peers.sh runs them with IDEM_RTT set, beside
// Powertools (TypeScript) through a proxy of the same round trip.
package idemlatency
