package kafkacodec

import (
	"context"
	"sync"
)

// Schema is a writer's schema as a registry stores it.
type Schema struct {
	ID string
	// Format is "AVRO", "PROTOBUF" or "JSON".
	Format string
	// Text is the schema definition: Avro JSON, a .proto file, a JSON
	// Schema document.
	Text string
}

// A Registry returns schemas by id: a Confluent decimal id or a Glue schema
// version UUID. Implementations must be safe for concurrent use; Schema
// returns a *RegistryError when it cannot answer.
type Registry interface {
	Schema(ctx context.Context, id string) (Schema, error)
}

// RegistryFunc adapts a function to a Registry.
type RegistryFunc func(ctx context.Context, id string) (Schema, error)

// Schema calls f(ctx, id).
func (f RegistryFunc) Schema(ctx context.Context, id string) (Schema, error) { return f(ctx, id) }

// Cache is a Registry that asks the registry it wraps once per schema id
// for the life of the container: schemas are immutable under their id.
// Concurrent requests for an id not yet cached share one fetch; a failed
// fetch is not cached, so the next record tries again.
type Cache struct {
	next Registry

	mu      sync.Mutex
	schemas map[string]Schema
	calls   map[string]*fetch
}

type fetch struct {
	done   chan struct{}
	schema Schema
	err    error
}

// NewCache wraps next with a cache.
func NewCache(next Registry) *Cache {
	return &Cache{next: next, schemas: map[string]Schema{}, calls: map[string]*fetch{}}
}

var _ Registry = (*Cache)(nil)

// Schema returns the cached schema, or fetches it. A caller whose context
// ends while another caller's fetch runs returns the context's error.
func (c *Cache) Schema(ctx context.Context, id string) (Schema, error) {
	c.mu.Lock()
	if s, ok := c.schemas[id]; ok {
		c.mu.Unlock()
		return s, nil
	}
	f, running := c.calls[id]
	if !running {
		f = &fetch{done: make(chan struct{})}
		c.calls[id] = f
	}
	c.mu.Unlock()
	if running {
		select {
		case <-f.done:
			return f.schema, f.err
		case <-ctx.Done():
			return Schema{}, &RegistryError{Registry: "cache", ID: id, Err: ctx.Err()}
		}
	}
	f.schema, f.err = c.next.Schema(ctx, id)
	c.mu.Lock()
	if f.err == nil {
		c.schemas[id] = f.schema
	}
	delete(c.calls, id)
	c.mu.Unlock()
	close(f.done)
	return f.schema, f.err
}
