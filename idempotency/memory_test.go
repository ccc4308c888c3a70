package idempotency_test

import (
	"testing"

	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/idempotency/storetest"
)

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(*testing.T) idempotency.Store { return idempotency.NewMemoryStore() })
}
