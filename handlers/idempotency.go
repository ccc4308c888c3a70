package handlers

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/engine"
)

// EnvFunctionName names the environment variable whose value (the Lambda
// function's name) prefixes every idempotency key, so functions sharing a
// table never share keys.
const EnvFunctionName = "AWS_LAMBDA_FUNCTION_NAME"

// ErrNoIdempotencyKey reports a record whose idempotency key is empty. The
// record fails (it is never run without a claim) unless the handler has
// WithIdempotencyOptionalKey.
var ErrNoIdempotencyKey = errors.New("sluice: record has no idempotency key")

// WithIdempotency runs each record's function at most once per key, with
// idempotency.Do on store (opts configure it: TTL, lease, clock, store
// retries). The key is the function name (AWS_LAMBDA_FUNCTION_NAME, omitted
// when unset), "#", and the record's stable id: the event id (Kinesis,
// DynamoDB Streams), the message id (SQS), or "<topic>-<partition>-<offset>"
// (Kafka); WithIdempotencyKey takes it from the record instead. Per record:
//
//   - its effect already completed: the function does not run, the record
//     succeeds and is counted as a duplicate (RecordOutcome.Duplicate,
//     BatchReport.Duplicates, "duplicates" in the batch log line);
//   - claimed by a live invocation elsewhere: the record fails with
//     idempotency.ErrInProgress and is reported, so Lambda retries it later;
//   - the function fails: its claim is released, so a retry runs it at once;
//   - the store fails (after its own retries): the record fails;
//   - the function ran past its lease and another invocation took the key:
//     the record fails with idempotency.ErrLeaseLost (its effect did run;
//     fencing kept the new owner's record intact).
//
// In-process retries (WithRetry) run inside one claim.
func WithIdempotency(store idempotency.Store, opts ...idempotency.Option) Option {
	return func(c *config) {
		if store == nil {
			c.errs = append(c.errs, errors.New("WithIdempotency: store is nil"))
		}
		c.idemStore = store
		c.idemOpts = opts
	}
}

// WithIdempotencyKey takes each record's idempotency key from the record
// (a business key, e.g. an order id) instead of its stable id; key takes the
// handler's record type, e.g. func(r handlers.SQSRecord[Order]) string, and
// a handler of another record type fails to build. The function name still
// prefixes the key. An empty key fails the record (ErrNoIdempotencyKey)
// unless WithIdempotencyOptionalKey is set. It needs WithIdempotency.
func WithIdempotencyKey[R any](key func(R) string) Option {
	return func(c *config) {
		if key == nil {
			c.errs = append(c.errs, errors.New("WithIdempotencyKey: key function is nil"))
			return
		}
		c.idemKey = key
	}
}

// WithIdempotencyOptionalKey runs a record whose idempotency key is empty
// without idempotency, instead of failing it.
func WithIdempotencyOptionalKey() Option {
	return func(c *config) { c.idemOptional = true }
}

// idempotent wraps next (the retry chain) with idempotency.Do. defaultKey is
// the source's stable record id.
func idempotent[R any](c *config, defaultKey func(R) string, next batch.Handler[R]) (batch.Handler[R], error) {
	key := defaultKey
	if c.idemKey != nil {
		k, ok := c.idemKey.(func(R) string)
		if !ok {
			var r R
			return nil, fmt.Errorf("WithIdempotencyKey: the key function is a %T, but this handler's records are %T: "+
				"pass a func(%T) string", c.idemKey, r, r)
		}
		key = k
	}
	store, opts, optional := c.idemStore, c.idemOpts, c.idemOptional
	prefix := ""
	if name, _ := c.lookupEnv(EnvFunctionName); name != "" {
		prefix = name + "#"
	}
	return batch.HandlerFunc[R](func(ctx context.Context, r R) error {
		k := key(r)
		if k == "" {
			if optional {
				return next.Handle(ctx, r)
			}
			return batch.Permanent(fmt.Errorf("%w: the key function returned \"\"; give every record a key, "+
				"or build the handler with handlers.WithIdempotencyOptionalKey() to run such records without idempotency",
				ErrNoIdempotencyKey))
		}
		ran := false
		_, err := idempotency.Do(ctx, store, prefix+k, func(ctx context.Context) ([]byte, error) {
			ran = true
			return nil, next.Handle(ctx, r)
		}, opts...)
		if err == nil && !ran {
			engine.NoteDuplicate(ctx)
		}
		return err
	}), nil
}

// The default idempotency keys: each source's stable record id.

func (r KinesisRecord[T]) idempotencyKey() string  { return r.Raw.EventID }
func (r DynamoDBRecord[T]) idempotencyKey() string { return r.Raw.EventID }
func (r SQSRecord[T]) idempotencyKey() string      { return r.Raw.MessageId }
func (r KafkaRecord[T]) idempotencyKey() string {
	return r.Raw.Topic + "-" + strconv.FormatInt(r.Raw.Partition, 10) + "-" + strconv.FormatInt(r.Raw.Offset, 10)
}
