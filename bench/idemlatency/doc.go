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
//   - BenchmarkLatencySQS10 and BenchmarkLatencySQS100 /<store>/first:
//     SQS standard, 10 (SQS's default batch size) and 100 new messages,
//     handler defaults (8 at once).
//   - .../replay: the same batch delivered again, as SQS redelivers it
//     (ApproximateReceiveCount 2), every key completed.
//   - BenchmarkLatencyKinesis40 and BenchmarkLatencyKinesis200
//     /<store>/first: Kinesis, 40 and 200 new records of one shard, in
//     order, on a fresh store (the lane's first batch); /next: the next 40
//     or 200 records of the lane, after the first ran (what a shard pays
//     batch after batch); /replay: that batch again.
//   - BenchmarkUnits (DynamoDB only, no delay): write requests, write and
//     read units per record for every source and mode (units_test.go).
//
// Metrics: ns/op is the batch's wall time; RTTs is wall / RTT (round trips
// on the critical path); requests/record and writes/record count the
// store's requests (a Redis pipeline is one request); on DynamoDB
// WCU/record and RCU/record are the write and read units the requests are
// billed, by AWS's rules for items under 1 KB (see counter).
//
// Environment: SLUICE_BENCH_DYNAMODB (a DynamoDB Local endpoint,
// http://127.0.0.1:PORT; default one of internal/testsupport/servers), SLUICE_BENCH_REDIS
// (a Redis address, 127.0.0.1:PORT; default one of internal/testsupport/servers),
// SLUICE_BENCH_RTT, SLUICE_BENCH_SQS and SLUICE_BENCH_KINESIS (bench/gen's
// sqs-1k.json and kinesis-10k.json, of which the first records are taken;
// default events of the same shape). Each benchmark starts its own proxies.
// scripts/bench-peers.sh runs them with IDEM_RTT set, beside Powertools
// (TypeScript) through a proxy of the same round trip. TestLongKeys checks
// keys longer than DynamoDB's key limit through a handler on both stores.
package idemlatency
