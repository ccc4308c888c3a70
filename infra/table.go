package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// TableProps configure an IdempotencyTable or an AttemptsTable.
type TableProps struct {
	// TableName: default a name CloudFormation makes up.
	TableName *string
	// RemovalPolicy: default RETAIN for the idempotency table (its records
	// are what keeps effects from running twice), DESTROY for the attempts
	// table (counters that expire within hours).
	RemovalPolicy awscdk.RemovalPolicy
}

// IdempotencyTable is the DynamoDB table idempotency/dynamodbstore uses:
// partition key "id" (string), TTL on "expiration" (epoch seconds),
// on-demand billing, encryption at rest with the AWS managed key
// (aws/dynamodb, stated in the template), and point-in-time recovery. Pass it to a consumer's
// IdempotencyTable prop: the function gets SLUICE_IDEMPOTENCY_TABLE and
// read/write access to its items.
type IdempotencyTable struct {
	constructs.Construct
	Table awsdynamodb.Table
}

// NewIdempotencyTable makes the table.
func NewIdempotencyTable(scope constructs.Construct, id *string, props *TableProps) *IdempotencyTable {
	t := &IdempotencyTable{Construct: constructs.NewConstruct(scope, id)}
	t.Table = newTable(t.Construct, props, awscdk.RemovalPolicy_RETAIN)
	return t
}

// AttemptsTable counts the attempts of stream and Kafka records across
// invocations, bisection and crashes: partition key "id" (string), TTL on
// "expiration" (epoch seconds), on-demand billing, encryption at rest and
// point-in-time recovery. Stream and Kafka consumers make one unless given
// one; the function gets SLUICE_ATTEMPTS_TABLE.
type AttemptsTable struct {
	constructs.Construct
	Table awsdynamodb.Table
}

// NewAttemptsTable makes the table.
func NewAttemptsTable(scope constructs.Construct, id *string, props *TableProps) *AttemptsTable {
	t := &AttemptsTable{Construct: constructs.NewConstruct(scope, id)}
	t.Table = newTable(t.Construct, props, awscdk.RemovalPolicy_DESTROY)
	return t
}

func newTable(scope constructs.Construct, props *TableProps, removal awscdk.RemovalPolicy) awsdynamodb.Table {
	if props == nil {
		props = &TableProps{}
	}
	if props.RemovalPolicy != "" {
		removal = props.RemovalPolicy
	}
	return awsdynamodb.NewTable(scope, jsii.String("Table"), &awsdynamodb.TableProps{
		TableName:           props.TableName,
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String(TablePartitionKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String(TableTTLAttribute),
		Encryption:          awsdynamodb.TableEncryption_AWS_MANAGED,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		RemovalPolicy: removal,
	})
}
