package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableClient is the part of *dynamodb.Client CreateTable uses.
type TableClient interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// CreateTable creates table with the layout the package documents (on-demand
// billing, the key schema of opts, TTL on "expiration"), waits until it is
// active, and turns TTL on. On an existing table it checks the key schema
// and turns TTL on if it is off, so running it again succeeds.
func CreateTable(ctx context.Context, client TableClient, table string, opts ...Option) error {
	l, err := newLayout(opts)
	if err != nil {
		return err
	}
	attrs := []types.AttributeDefinition{{AttributeName: &l.pk, AttributeType: types.ScalarAttributeTypeS}}
	schema := []types.KeySchemaElement{{AttributeName: &l.pk, KeyType: types.KeyTypeHash}}
	if l.sk != "" {
		attrs = append(attrs, types.AttributeDefinition{AttributeName: &l.sk, AttributeType: types.ScalarAttributeTypeS})
		schema = append(schema, types.KeySchemaElement{AttributeName: &l.sk, KeyType: types.KeyTypeRange})
	}
	_, err = client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &table,
		AttributeDefinitions: attrs,
		KeySchema:            schema,
		BillingMode:          types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamodbstore: creating table %s: %w", table, err)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, 2*time.Second
	})
	desc, err := w.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: &table}, 5*time.Minute)
	if err != nil {
		return fmt.Errorf("dynamodbstore: waiting for table %s to be active: %w", table, err)
	}
	if err := checkSchema(table, desc.Table.KeySchema, schema); err != nil {
		return err
	}
	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &table})
	if err != nil {
		return fmt.Errorf("dynamodbstore: reading the TTL setting of table %s: %w", table, err)
	}
	if d := ttl.TimeToLiveDescription; d != nil && (d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		if a := aws.ToString(d.AttributeName); a != AttrExpiration {
			return fmt.Errorf("dynamodbstore: table %s has TTL on attribute %q, want %q; change it in the table settings", table, a, AttrExpiration)
		}
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               &table,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(AttrExpiration), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("dynamodbstore: turning on TTL (attribute %s) of table %s: %w", AttrExpiration, table, err)
	}
	return nil
}

func checkSchema(table string, got, want []types.KeySchemaElement) error {
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		same = aws.ToString(got[i].AttributeName) == aws.ToString(want[i].AttributeName) && got[i].KeyType == want[i].KeyType
	}
	if !same {
		return fmt.Errorf("dynamodbstore: table %s exists with key schema %s, want %s; use another table or matching key options",
			table, schemaString(got), schemaString(want))
	}
	return nil
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
