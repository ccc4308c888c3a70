package dynamodbstore

import (
	"context"

	"github.com/sluicehq/sluice/internal/ddbtable"
)

// TableClient is the part of *dynamodb.Client CreateTable uses.
type TableClient = ddbtable.Client

// CreateTable creates table with the layout the package documents (on-demand
// billing, the key schema of opts, TTL on "expiration"), waits until it is
// active, and turns TTL on. On an existing table it checks the key schema
// and turns TTL on if it is off, so running it again succeeds.
func CreateTable(ctx context.Context, client TableClient, table string, opts ...Option) error {
	l, err := newLayout(opts)
	if err != nil {
		return err
	}
	keys := []string{l.pk}
	if l.sk != "" {
		keys = append(keys, l.sk)
	}
	return ddbtable.Create(ctx, client, table, ddbtable.Spec{
		Pkg: "dynamodbstore", Keys: keys, TTL: AttrExpiration,
		Remedy: "use another table or matching key options",
	})
}
