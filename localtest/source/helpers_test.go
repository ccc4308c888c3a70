package source_test

import "context"

// bytesFunc is an in-process handler over raw payloads.
type bytesFunc func(ctx context.Context, payload []byte) ([]byte, error)

func (f bytesFunc) Invoke(ctx context.Context, p []byte) ([]byte, error) { return f(ctx, p) }
