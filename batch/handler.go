package batch

import "context"

// A Handler processes one record of type R (a typed record such as
// handlers.KinesisRecord[Order]).
//
// Handle may be called concurrently for records that the source's policy
// allows to run concurrently (different SQS messages, different Kafka
// partitions); records that share an ordering key are never handled
// concurrently, and are handled in order. A nil error means the record is done
// and will not be reported as failed. A non-nil error fails the record; wrap
// it with Permanent or Transient to choose how it is retried. A panic fails
// the record with a *PanicError and does not stop the batch beyond what the
// policy says. Handle must honour ctx: its deadline is the Lambda deadline
// minus the configured margin.
type Handler[R any] interface {
	Handle(ctx context.Context, r R) error
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc[R any] func(ctx context.Context, r R) error

// Handle calls f(ctx, r).
func (f HandlerFunc[R]) Handle(ctx context.Context, r R) error { return f(ctx, r) }

// Middleware wraps a Handler with behaviour before and after it, as Retry
// does. Package handlers takes a plain function: to add a middleware of
// your own, wrap your function and pass the wrapped handler's Handle, e.g.
// handlers.NewSQS(mw(batch.HandlerFunc[R](fn)).Handle).
type Middleware[R any] func(Handler[R]) Handler[R]
