package dynamodbattempts

import (
	"context"

	"github.com/sluicehq/sluice/internal/ddbtable"
)

// TableClient is the part of *dynamodb.Client CreateTable uses.
type TableClient = ddbtable.Client

// CreateTable creates table with the layout the package documents
// (on-demand billing, partition key "id" of type S, TTL on "expiration"),
// waits until it is active, and turns TTL on. On an existing table it
// checks the key schema and turns TTL on if it is off, so running it again
// succeeds.
func CreateTable(ctx context.Context, client TableClient, table string) error {
	return ddbtable.Create(ctx, client, table, ddbtable.Spec{
		Pkg: "dynamodbattempts", Keys: []string{AttrID}, TTL: AttrExpiration,
		Remedy: "the attempts table has only the partition key \"" + AttrID + "\" (S): use another table",
	})
}
