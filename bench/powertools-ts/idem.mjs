// Idempotent SQS batch processing with Powertools for AWS Lambda
// (TypeScript) against DynamoDB Local, on the sqs-1k.json that bench/gen
// writes: the same work as Sluice's BenchmarkSQS1kIdempotent.
//
//   SLUICE_BENCH_DYNAMODB=http://127.0.0.1:PORT node idem.mjs DIR
//   env: REPEATS (timed repeats, default 5), WARMUP (default 1),
//        VARIANTS (default parallel,sequential,sdk-floor),
//        SOURCE (sqs, the default, on DIR/sqs-1k.json; or kinesis, on
//        DIR/kinesis-10k.json, key eventID, the data base64-decoded),
//        BATCH (the first BATCH records only; default all),
//        BENCH (the bench= name printed; default sqs-1k-idem),
//        SLUICE_BENCH_DYNAMODB_ADMIN (where tables are created and deleted,
//        e.g. DynamoDB Local itself when SLUICE_BENCH_DYNAMODB is a latency
//        proxy in front of it; default SLUICE_BENCH_DYNAMODB),
//        RTT_MS (the proxy's round trip: adds rtts=wall/RTT to each line)
//
// Wiring, as the Powertools documentation shows for batches: the record
// handler wrapped by makeIdempotent with a DynamoDBPersistenceLayer and
// IdempotencyConfig({ eventKeyJmesPath: 'messageId' }); per invocation
// config.registerLambdaContext(context), then processPartialResponse with a
// BatchProcessor(EventType.SQS).
//
// Variants:
//   parallel    processPartialResponse's default (processInParallel: true,
//               every record at once; the SDK's HTTP agent bounds the
//               sockets in flight).
//   sequential  processInParallel: false.
//   sdk-floor   no Powertools: one bare conditional PutItem per record
//               (attribute_not_exists), all at once, a refusal meaning "done
//               before". No conditional-write scheme can send less, so its
//               wall time is this machine's DynamoDB Local floor.
//
// Each repeat makes a fresh table, runs the batch with every key new
// (phase=first), then the same batch again, every key completed
// (phase=replay). A client middleware counts HTTP attempts per command and
// asks for ReturnConsumedCapacity=TOTAL to add up write and read units; a
// refused conditional write returns no capacity and is counted as the one
// write unit AWS bills for it (every item here is under 1 KB).
//
// Prints one line per variant and phase:
//   peer=<powertools-ts|sdk-floor> bench=sqs-1k-idem variant=<v> phase=<first|replay> wall_ms_median=<x> requests_per_record=<y> ...
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  PutItemCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';

const [dir] = process.argv.slice(2);
const endpoint = process.env.SLUICE_BENCH_DYNAMODB;
if (!dir || !endpoint) {
  console.error('usage: SLUICE_BENCH_DYNAMODB=http://127.0.0.1:PORT node idem.mjs DIR   (DIR holds sqs-1k.json of go run ./bench/gen)');
  process.exit(2);
}
const REPEATS = Number(process.env.REPEATS ?? 5);
const WARMUP = Number(process.env.WARMUP ?? 1);
const VARIANTS = (process.env.VARIANTS ?? 'parallel,sequential,sdk-floor').split(',');
const SOURCE = process.env.SOURCE ?? 'sqs';
if (SOURCE !== 'sqs' && SOURCE !== 'kinesis') {
  console.error(`SOURCE=${SOURCE}: want sqs or kinesis`);
  process.exit(2);
}
const BENCH = process.env.BENCH ?? 'sqs-1k-idem';
const RTT_MS = Number(process.env.RTT_MS ?? 0);

const event = JSON.parse(readFileSync(join(dir, SOURCE === 'sqs' ? 'sqs-1k.json' : 'kinesis-10k.json'), 'utf8'));
if (process.env.BATCH) event.Records = event.Records.slice(0, Number(process.env.BATCH));
const N = event.Records.length;
// The record's key (what eventKeyJmesPath names) and its order's JSON.
const recordKey = SOURCE === 'sqs' ? 'messageId' : 'eventID';
const keyOf = (record) => record[recordKey];
const body = SOURCE === 'sqs' ? (record) => record.body : (record) => Buffer.from(record.kinesis.data, 'base64').toString('utf8');

const credentials = { accessKeyId: 'AKIDSLUICELOCAL', secretAccessKey: 'sluice-local-secret' };
const clientConfig = { endpoint, region: 'us-east-1', credentials };
const adminConfig = { endpoint: process.env.SLUICE_BENCH_DYNAMODB_ADMIN || endpoint, region: 'us-east-1', credentials };

// The metered client the handlers use; table setup goes through another.
const meter = { requests: {}, wcu: 0, rcu: 0 };
const resetMeter = () => Object.assign(meter, { requests: {}, wcu: 0, rcu: 0 });
const db = new DynamoDBClient(clientConfig);
db.middlewareStack.add(
  (next, ctx) => async (args) => {
    args.input.ReturnConsumedCapacity = 'TOTAL';
    try {
      const res = await next(args);
      const cc = res.output.ConsumedCapacity;
      for (const c of Array.isArray(cc) ? cc : cc ? [cc] : []) {
        if (ctx.commandName === 'BatchGetItemCommand' || ctx.commandName === 'GetItemCommand') meter.rcu += c.CapacityUnits ?? 0;
        else meter.wcu += c.CapacityUnits ?? 0;
      }
      return res;
    } catch (e) {
      if (e instanceof ConditionalCheckFailedException) meter.wcu += 1;
      throw e;
    }
  },
  { step: 'initialize', name: 'sluiceBenchCapacity' },
);
db.middlewareStack.add(
  (next, ctx) => async (args) => {
    const op = ctx.commandName.replace(/Command$/, '');
    meter.requests[op] = (meter.requests[op] ?? 0) + 1;
    return next(args);
  },
  { step: 'deserialize', name: 'sluiceBenchRequests' },
);
const admin = new DynamoDBClient(adminConfig);

function lambdaContext() {
  const deadline = Date.now() + 900_000;
  return {
    functionName: 'bench',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:bench',
    memoryLimitInMB: '1024',
    awsRequestId: '00000000-0000-4000-8000-000000000000',
    logGroupName: '/aws/lambda/bench',
    logStreamName: 'bench',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => deadline - Date.now(),
    done() {},
    fail() {},
    succeed() {},
  };
}

// The work of Sluice's benchmark: decode the order, add up its amount.
let ran = 0;
let sum = 0;
const recordHandler = async (record) => {
  ran++;
  sum += JSON.parse(body(record)).amount;
};

async function createTable(name) {
  await admin.send(
    new CreateTableCommand({
      TableName: name,
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  await waitUntilTableExists({ client: admin, maxWaitTime: 60 }, { TableName: name });
}

// A handler as a Lambda module builds it, once per table.
function powertools(tableName, processInParallel) {
  const persistenceStore = new DynamoDBPersistenceLayer({ tableName, awsSdkV3Client: db });
  const config = new IdempotencyConfig({ eventKeyJmesPath: recordKey });
  const idempotent = makeIdempotent(recordHandler, { persistenceStore, config });
  const processor = new BatchProcessor(SOURCE === 'sqs' ? EventType.SQS : EventType.KinesisDataStreams);
  return async (ev, context) => {
    config.registerLambdaContext(context);
    return processPartialResponse(ev, idempotent, processor, { context, processInParallel });
  };
}

function sdkFloor(tableName) {
  return async (ev) => {
    const expiration = String(Math.floor(Date.now() / 1000) + 3600);
    await Promise.all(
      ev.Records.map(async (record) => {
        try {
          await db.send(
            new PutItemCommand({
              TableName: tableName,
              Item: { id: { S: keyOf(record) }, expiration: { N: expiration } },
              ConditionExpression: 'attribute_not_exists(id)',
            }),
          );
        } catch (e) {
          if (e instanceof ConditionalCheckFailedException) return; // done before
          throw e;
        }
        await recordHandler(record);
      }),
    );
    return { batchItemFailures: [] };
  };
}

async function measure(handler) {
  resetMeter();
  ran = 0;
  sum = 0;
  const t0 = process.hrtime.bigint();
  const res = await handler(event, lambdaContext());
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const requests = Object.values(meter.requests).reduce((a, b) => a + b, 0);
  const writes = ['PutItem', 'UpdateItem', 'DeleteItem'].reduce((a, op) => a + (meter.requests[op] ?? 0), 0);
  return { ms, requests, writes, wcu: meter.wcu, rcu: meter.rcu, byOp: { ...meter.requests }, ran, failed: res.batchItemFailures.length };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

for (const variant of VARIANTS) {
  const got = { first: [], replay: [] };
  for (let r = 0; r < WARMUP + REPEATS; r++) {
    const table = `bench-idem-ts-${variant}-${process.pid}-${r}`;
    await createTable(table);
    const handler = variant === 'sdk-floor' ? sdkFloor(table) : powertools(table, variant === 'parallel');
    const first = await measure(handler);
    const replay = await measure(handler);
    await admin.send(new DeleteTableCommand({ TableName: table }));
    // A variant that skipped work, or did it twice, measures nothing.
    if (first.ran !== N || first.failed !== 0) throw new Error(`${variant} first: ran ${first.ran} of ${N}, ${first.failed} failed`);
    if (replay.ran !== 0 || replay.failed !== 0) throw new Error(`${variant} replay: ran ${replay.ran}, ${replay.failed} failed`);
    if (r >= WARMUP) {
      got.first.push(first);
      got.replay.push(replay);
    }
  }
  for (const phase of ['first', 'replay']) {
    const xs = got[phase];
    const per = (k) => (median(xs.map((x) => x[k])) / N).toFixed(3);
    const ms = xs.map((x) => x.ms);
    const ops = Object.entries(xs[0].byOp)
      .sort()
      .map(([k, v]) => `${k}:${v}`)
      .join(',');
    console.log(
      `peer=${variant === 'sdk-floor' ? 'sdk-floor' : 'powertools-ts'} bench=${BENCH} variant=${variant} phase=${phase} ` +
        `wall_ms_median=${median(ms).toFixed(1)} wall_ms_min=${Math.min(...ms).toFixed(1)} wall_ms_max=${Math.max(...ms).toFixed(1)} ` +
        `requests_per_record=${per('requests')} writes_per_record=${per('writes')} wcu_per_record=${per('wcu')} ` +
        `rcu_per_record=${per('rcu')} requests_by_op=${ops} records=${N} repeats=${xs.length} node=${process.version}` +
        (RTT_MS > 0 ? ` rtt_ms=${RTT_MS} rtts=${(median(ms) / RTT_MS).toFixed(2)}` : ''),
    );
  }
}
db.destroy();
admin.destroy();
