// Package idempotency runs a record's effect at most once per key, across
// retries, redeliveries, bisection and redrives, which every event source
// makes happen (all of them are at-least-once).
//
// # Semantics
//
// The model is the one AWS Lambda Powertools users know. Do(ctx, store, key,
// fn) first claims key with one conditional write: it succeeds when no
// record exists, the record expired, or the record is in progress and its
// lease ran out. When the write is refused the store returns the existing
// record in the same call (DynamoDB's ReturnValuesOnConditionCheckFailure),
// so a duplicate costs no extra read:
//
//   - completed: fn does not run; Do returns the stored result. The record
//     counts as succeeded.
//   - in progress under another claim: Do waits (WithWait: two leases by
//     default, never past ctx's deadline) for that claim to complete (then
//     the call is a duplicate, as above) or to lapse or be released (then
//     Do claims the key and runs fn). Only when the wait runs out does it
//     return ErrInProgress (an *InProgressError): the record must be
//     retried later; it is never run concurrently and never silently
//     skipped.
//
// After fn succeeds its result is stored with an expiry (WithTTL, default
// 1 h; the DynamoDB table's TTL attribute); after that the key is claimable
// again. When fn fails or panics its claim is released, so a retry runs at
// once. With WithPayload a hash of the request is stored; the same key with
// another payload fails with ErrPayloadMismatch, never skipped.
//
// # Leases
//
// A claim holds its key for a short lease (DefaultLease, 5 s; never past
// ctx's deadline, which is Lambda's). While fn runs, Do renews it every
// third of the lease (Store.Extend, one conditional write), as KCL renews
// shard leases; a record that finishes within a third of the lease costs
// no renewal, so a healthy record costs two writes: the claim and the
// complete. When the owner dies (a crash, a timeout, an out-of-memory
// kill) its renewals stop and its claim lapses within one lease: a retry
// that finds it waits at most that long, then runs the record. A retry
// cannot tell a crash before fn's effect from one after it, so a crash
// between the effect and the complete runs the effect again (at least
// once; never skipped). WithLease sets a fixed lease instead, never
// renewed.
//
// Waiting looks at the key again with a claim attempt after 50 ms, 100
// ms, 200 ms, ... then every second, and right after the other claim's
// lease ends. Two records of one process with the same key (a business
// key shared by two records of a batch) wait the same way; with WithCache
// the second finds the first's completion in the cache.
//
// # Fencing
//
// What the Powertools stores lack: each claim carries a random owner token,
// and completing, renewing or releasing is conditional on it. A claimant
// that stalled past its lease (its renewals failed) and was overtaken by a
// new claimant cannot overwrite, extend or delete the new owner's record:
// its next renewal fails with ErrLeaseLost and cancels fn's context (with
// that cause), and its Complete fails with ErrLeaseLost, which Do reports
// with fn's result. (Its effect may have run; fencing keeps the record
// consistent.)
//
// # Store failures
//
// fn never runs without a claim. A retryable store failure (throttling, a
// timeout: a *StoreError whose Transient is true) is retried with backoff,
// never waiting past ctx's deadline; a store that keeps failing fails the
// call, and the record is retried by Lambda.
//
// # Batches, lanes, caches and results
//
// ClaimBatch claims a batch's keys at once, before the records run, at
// most WithInFlight requests in flight; each record then runs with
// Batch.DoLane, under its claim, and Batch.Finish waits for the completes
// (package handlers' WithIdempotency does this for every batch). A refused
// claim answers a duplicate, so a new record costs a claim and a complete
// and no read; the keys of records that were probably completed (an SQS
// message delivered again) are read first, in as few requests as the
// store allows (a Getter; DynamoDB's BatchGetItem, 100 keys a request),
// beside the other claims.
//
// Records of an ordered lane (a Kinesis shard, a Kafka partition, an SQS
// FIFO message group) keyed by their own ids keep a checkpoint instead,
// on a store that is a LaneStore: one item per lane holding the lane's
// position (Position: the highest record it completed), the records at or
// below it that it moved past without completing them (a quarantined
// record, the records Lambda skipped), those above it that completed while
// an earlier one had not, and a lease fenced by an owner token, as the
// Kinesis Client Library's lease table holds a shard's checkpoint and its
// worker's lease. A batch claims each of its lanes once (the checkpoint
// comes back in the same answer; a batch of records all at or below it is
// refused and needs nothing more), a record the checkpoint covers is a
// duplicate, and the checkpoint is written once per group of completed
// records (DefaultOrderedDepth), the last write releasing the lease; a
// checkpoint write of an owner whose lease another took is refused
// (ErrLeaseLost). What a crash leaves to run again is the records since
// the last written checkpoint: at most depth+1 of a lane, in order.
//
// Do with WithCache answers the keys in its cache without a store
// request; a Cache kept for the life of a process also lets a warm Lambda
// container skip keys it completed. A function stores a result with
// SetResult (or by returning it from fn); a duplicate gets it back (a
// lane's checkpoint stores none: handlers claims per record when a result
// is asked for).
//
// # Stores
//
// Store is four conditional writes: Claim, Complete, Extend and Release
// (and, optionally, Getter's batch read, GroupCompleter's all-or-nothing
// complete of several keys, and LaneStore's lane claim and checkpoint
// write). This package has an in-memory store; package dynamodbstore
// keeps records in DynamoDB (and documents the table layout), package
// redisstore in Redis or Valkey. Every store passes the suite in package
// storetest. Time is passed to the store in each call (from WithClock), so
// stores read no clock of their own. A key longer than a store's limit is
// kept by a digest (StoredKey), so no key is refused.
package idempotency
