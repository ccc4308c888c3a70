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
//   - in progress in a live invocation elsewhere: fn does not run; Do
//     returns ErrInProgress. The record must be retried later; it is never
//     run concurrently and never silently skipped.
//
// After fn succeeds its result is stored with an expiry (WithTTL, default
// 1 h; the DynamoDB table's TTL attribute); after that the key is claimable
// again. When fn fails or panics its claim is released, so a retry runs at
// once. The in-progress lease ends at ctx's deadline (Lambda's), or after a
// fixed WithLease. With WithPayload a hash of the request is stored; the same
// key with another payload fails with ErrPayloadMismatch, never skipped.
//
// # Fencing
//
// What the Powertools stores lack: each claim carries a random owner token,
// and completing or releasing is conditional on it. A claimant that ran past
// its lease and was overtaken by a new claimant cannot overwrite or delete
// the new owner's record: its Complete fails with ErrLeaseLost, and Do
// reports that error with fn's result. (Its effect did run; fencing keeps
// the record consistent, and a lease as long as the Lambda deadline makes
// the case rare.)
//
// # Store failures
//
// fn never runs without a claim. A retryable store failure (throttling, a
// timeout: a *StoreError whose Transient is true) is retried with backoff,
// never waiting past ctx's deadline; a store that keeps failing fails the
// call, and the record is retried by Lambda.
//
// # Batches, caches and results
//
// Lookup reads which of a batch's keys already completed in as few requests
// as the store allows (a store that implements Getter; DynamoDB's
// BatchGetItem, 100 keys a request) into a Cache; Do with WithCache then
// answers those keys without a store request. A Cache kept for the life of
// a process also lets a warm Lambda container skip keys it completed. A
// function stores a result with SetResult (or by returning it from fn); a
// duplicate gets it back.
//
// # Stores
//
// Store is three conditional writes: Claim, Complete and Release (and,
// optionally, Getter's batch read). This
// package has an in-memory store; package dynamodbstore keeps records in
// DynamoDB (and documents the table layout). Every store passes the suite in
// package storetest. Time is passed to the store in each call (from
// WithClock), so stores read no clock of their own.
package idempotency
