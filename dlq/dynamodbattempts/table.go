package dynamodbattempts

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

// CreateTable creates table with the layout the package documents
// (on-demand billing, partition key "id" of type S, TTL on "expiration"),
// waits until it is active, and turns TTL on. On an existing table it
// checks the key schema and turns TTL on if it is off, so running it again
// succeeds.
func CreateTable(ctx context.Context, client TableClient, table string) error {
	schema := []types.KeySchemaElement{{AttributeName: aws.String(AttrID), KeyType: types.KeyTypeHash}}
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &table,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(AttrID), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            schema,
		BillingMode:          types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamodbattempts: creating table %s: %w", table, err)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, 2*time.Second
	})
	desc, err := w.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: &table}, 5*time.Minute)
	if err != nil {
		return fmt.Errorf("dynamodbattempts: waiting for table %s to be active: %w", table, err)
	}
	if got := desc.Table.KeySchema; len(got) != 1 || aws.ToString(got[0].AttributeName) != AttrID || got[0].KeyType != types.KeyTypeHash {
		return fmt.Errorf("dynamodbattempts: table %s exists with another key schema; the attempts table has only the partition key %q (S): use another table", table, AttrID)
	}
	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &table})
	if err != nil {
		return fmt.Errorf("dynamodbattempts: reading the TTL setting of table %s: %w", table, err)
	}
	if d := ttl.TimeToLiveDescription; d != nil && (d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		if a := aws.ToString(d.AttributeName); a != AttrExpiration {
			return fmt.Errorf("dynamodbattempts: table %s has TTL on attribute %q, want %q; change it in the table settings", table, a, AttrExpiration)
		}
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               &table,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(AttrExpiration), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("dynamodbattempts: turning on TTL (attribute %s) of table %s: %w", AttrExpiration, table, err)
	}
	return nil
}
