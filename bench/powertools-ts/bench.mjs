// Per-record cost of Powertools for AWS Lambda (TypeScript) batch processing,
// on the event files bench/gen writes, doing the work Sluice's benchmarks do:
// decode each record's order JSON and add up its amount.
//
//   node bench.mjs kinesis DIR     DIR/kinesis-10k.json
//   node bench.mjs sqs DIR         DIR/sqs-1k.json
//   env: ITER (timed iterations, default 20), WARMUP (default 5)
//
// Prints one line per variant:
//   peer=<powertools-ts|node-handloop> bench=<kinesis-10k|sqs-1k> variant=<v> ns_per_record_median=<x> ...
//
// Variants:
//   parallel            BatchProcessor + processPartialResponse with the
//                       defaults (processInParallel: true, so Promise.all over
//                       the records); the event is already parsed.
//   sequential          the same with processInParallel: false.
//   parallel-frombytes  parallel, plus JSON.parse of the whole event text
//                       inside the timer, as the runtime pays before the
//                       handler runs. Sluice's benchmarks start from bytes too,
//                       so this is the variant the ratios use.
//   node-handloop-frombytes  no Powertools: JSON.parse of the event and a for
//                       loop over the same per-record work, to separate Node's
//                       own cost from the library's.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';

const [source, dir] = process.argv.slice(2);
const sources = {
  kinesis: {
    bench: 'kinesis-10k',
    file: 'kinesis-10k.json',
    type: EventType.KinesisDataStreams,
    // Kinesis data arrives base64-encoded.
    amount: (r) => JSON.parse(Buffer.from(r.kinesis.data, 'base64').toString('utf8')).amount,
  },
  sqs: {
    bench: 'sqs-1k',
    file: 'sqs-1k.json',
    type: EventType.SQS,
    amount: (r) => JSON.parse(r.body).amount,
  },
};
const src = sources[source];
if (!src || !dir) {
  console.error('usage: node bench.mjs kinesis|sqs DIR   (DIR holds the files of go run ./bench/gen)');
  process.exit(2);
}
const ITER = Number(process.env.ITER ?? 20);
const WARMUP = Number(process.env.WARMUP ?? 5);

const rawText = readFileSync(join(dir, src.file), 'utf8');
const event = JSON.parse(rawText);
const N = event.Records.length;

// Enough of a Lambda context for Powertools, which only passes it through.
const context = {
  functionName: 'bench',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:bench',
  memoryLimitInMB: '1024',
  awsRequestId: '00000000-0000-4000-8000-000000000000',
  logGroupName: '/aws/lambda/bench',
  logStreamName: 'bench',
  callbackWaitsForEmptyEventLoop: true,
  getRemainingTimeInMillis: () => 900_000,
  done() {},
  fail() {},
  succeed() {},
};

let sum = 0;
const work = (record) => {
  sum += src.amount(record);
};
const recordHandler = async (record) => work(record); // the handler shape of the Powertools docs

// One processor per variant at module scope, reused across invocations as the docs show.
const parallel = new BatchProcessor(src.type);
const sequential = new BatchProcessor(src.type);

const variants = {
  parallel: ['powertools-ts', () => processPartialResponse(event, recordHandler, parallel, { context })],
  sequential: [
    'powertools-ts',
    () => processPartialResponse(event, recordHandler, sequential, { context, processInParallel: false }),
  ],
  'parallel-frombytes': [
    'powertools-ts',
    () => processPartialResponse(JSON.parse(rawText), recordHandler, parallel, { context }),
  ],
  'node-handloop-frombytes': [
    'node-handloop',
    () => {
      const ev = JSON.parse(rawText);
      for (const r of ev.Records) work(r);
      return { batchItemFailures: [] };
    },
  ],
};

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

let expected = null;
for (const [name, [peer, run]] of Object.entries(variants)) {
  const samples = [];
  for (let i = 0; i < WARMUP + ITER; i++) {
    sum = 0;
    const t0 = process.hrtime.bigint();
    const res = await run();
    const dt = Number(process.hrtime.bigint() - t0);
    // Guard against a variant that silently does nothing.
    if (res.batchItemFailures.length !== 0) throw new Error(`${name}: ${res.batchItemFailures.length} records failed`);
    if (expected === null) expected = sum;
    if (Math.abs(sum - expected) > 1e-6) throw new Error(`${name}: sum ${sum}, want ${expected}`);
    if (i >= WARMUP) samples.push(dt / N);
  }
  const f = (x) => x.toFixed(1);
  console.log(
    `peer=${peer} bench=${src.bench} variant=${name} ns_per_record_median=${f(median(samples))} ` +
      `ns_per_record_min=${f(Math.min(...samples))} ns_per_record_max=${f(Math.max(...samples))} ` +
      `records=${N} iterations=${ITER} warmup=${WARMUP} node=${process.version}`,
  );
}
