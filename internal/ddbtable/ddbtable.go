// Package ddbtable creates the DynamoDB tables of Sluice's stores (the
// idempotency table, the attempts table) the same way: on-demand billing,
// the given keys, TTL on one attribute; idempotent, so running it against an
// existing table checks it instead.
package ddbtable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Client is the part of *dynamodb.Client Create uses.
type Client interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// Spec is a table's layout. Keys are string attributes, the hash key first.
type Spec struct {
	Pkg    string   // the calling package, which prefixes errors
	Keys   []string // hash key, then optional range key
	TTL    string   // the TTL attribute
	Remedy string   // what to do when the table exists with other keys
}

// Create creates table per spec, waits until it is active, and turns TTL
// on. On an existing table it checks the key schema and turns TTL on if it
// is off.
func Create(ctx context.Context, client Client, table string, spec Spec) error {
	var attrs []types.AttributeDefinition
	var schema []types.KeySchemaElement
	for i, k := range spec.Keys {
		kt := types.KeyTypeHash
		if i > 0 {
			kt = types.KeyTypeRange
		}
		attrs = append(attrs, types.AttributeDefinition{AttributeName: aws.String(k), AttributeType: types.ScalarAttributeTypeS})
		schema = append(schema, types.KeySchemaElement{AttributeName: aws.String(k), KeyType: kt})
	}
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &table,
		AttributeDefinitions: attrs,
		KeySchema:            schema,
		BillingMode:          types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("%s: creating table %s: %w", spec.Pkg, table, err)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, 2*time.Second
	})
	desc, err := w.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: &table}, 5*time.Minute)
	if err != nil {
		return fmt.Errorf("%s: waiting for table %s to be active: %w", spec.Pkg, table, err)
	}
	if got := desc.Table.KeySchema; !sameSchema(got, schema) {
		return fmt.Errorf("%s: table %s exists with key schema %s, want %s; %s",
			spec.Pkg, table, schemaString(got), schemaString(schema), spec.Remedy)
	}
	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &table})
	if err != nil {
		return fmt.Errorf("%s: reading the TTL setting of table %s: %w", spec.Pkg, table, err)
	}
	if d := ttl.TimeToLiveDescription; d != nil && (d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		if a := aws.ToString(d.AttributeName); a != spec.TTL {
			return fmt.Errorf("%s: table %s has TTL on attribute %q, want %q; change it in the table settings", spec.Pkg, table, a, spec.TTL)
		}
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               &table,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(spec.TTL), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("%s: turning on TTL (attribute %s) of table %s: %w", spec.Pkg, spec.TTL, table, err)
	}
	return nil
}

func sameSchema(got, want []types.KeySchemaElement) bool {
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		same = aws.ToString(got[i].AttributeName) == aws.ToString(want[i].AttributeName) && got[i].KeyType == want[i].KeyType
	}
	return same
}

func schemaString(s []types.KeySchemaElement) string {
	out := ""
	for i, e := range s {
		if i > 0 {
			out += ", "
		}
		out += aws.ToString(e.AttributeName) + " " + string(e.KeyType)
	}
	return "[" + out + "]"
}
