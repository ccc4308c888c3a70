package infra

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Consumer is what every consumer construct exposes.
type Consumer struct {
	constructs.Construct
	Function awslambda.Function
	// Role is the function's own role.
	Role     awsiam.Role
	LogGroup awslogs.LogGroup
	// Mapping is the event source mapping (its CloudFormation resource, as
	// `sluice run --template` reads it).
	Mapping awslambda.CfnEventSourceMapping
	// DeadLetters is the quarantine queue (SLUICE_DLQ_URL).
	DeadLetters *DeadLetterQueue
	// IdempotencyTable is the table given in the props, or nil.
	IdempotencyTable *IdempotencyTable
	// Alarms by name: Errors, Throttles, and as the source has them
	// IteratorAge (streams), OffsetLag (Kafka), BacklogAge (SQS),
	// DroppedEvents and OnFailureEvents (the mapping's metrics),
	// OnFailureOldestMessage, RedriveOldestMessage.
	Alarms map[string]awscloudwatch.Alarm
	// Dashboard is the consumer's CloudWatch dashboard; nil when the
	// Dashboard prop is false. Its lines are also on the stack's
	// StackDashboard.
	Dashboard awscloudwatch.Dashboard

	source string            // sourceKinesis, ...
	fnOpts *FunctionOptions  // as given
	env    map[string]string // the variables the construct set
	alarms *alarms
}

// commonProps are the props every consumer shares.
type commonProps struct {
	fn          *FunctionOptions
	deadLetters *DeadLetterQueue
	idempotency *IdempotencyTable
	attempts    *AttemptsTable // streams, Kafka and SQS FIFO
	maxAttempts int
	report      bool
	alarms      *AlarmOptions
	fifo        bool    // the quarantine queue must be FIFO
	key         *string // IdempotencyKey
	prefix      *string // IdempotencyKeyPrefix
	pf          int     // a stream's ParallelizationFactor
	kafkaFormat string  // SchemaRegistry.EventRecordFormat
}

// keyProblems checks the IdempotencyKey prop: a name, and a table for it.
func keyProblems(key *string, table *IdempotencyTable) []string {
	switch {
	case key == nil:
		return nil
	case *key == "":
		return []string{"IdempotencyKey is empty: name the key the function registers (fromenv.IdempotencyKey), or leave it unset for the record's id"}
	case table == nil:
		return []string{fmt.Sprintf("IdempotencyKey %q needs IdempotencyTable: the key means nothing without a table to claim it in", *key)}
	}
	return nil
}

// prefixProblems checks the IdempotencyKeyPrefix prop: not empty, and a
// table for it.
func prefixProblems(prefix *string, table *IdempotencyTable) []string {
	switch {
	case prefix == nil:
		return nil
	case *prefix == "":
		return []string{"IdempotencyKeyPrefix is empty: give a prefix (the function's current name keeps the keys the table holds), or leave it unset"}
	case table == nil:
		return []string{fmt.Sprintf("IdempotencyKeyPrefix %q needs IdempotencyTable: it prefixes the keys claimed in that table", *prefix)}
	}
	return nil
}

// parallelizationEnv declares a stream mapping's ParallelizationFactor
// pf to the handler (EnvParallelizationFactor) when the function has an
// idempotency table, 1 included: a Kinesis handler told 1 keeps one
// checkpoint per shard, told more (or not told) one per shard and
// partition key. Without a table, or for a source with no factor (pf 0),
// it removes the variable.
func parallelizationEnv(env map[string]string, pf int, idempotency bool) {
	delete(env, EnvParallelizationFactor)
	if pf >= 1 && idempotency {
		env[EnvParallelizationFactor] = strconv.Itoa(pf)
	}
}

// build makes the function with the variables and grants the handler
// needs, the dead-letter queue if none was given, and the function alarms.
func (c *Consumer) build(p commonProps) *alarms {
	if p.deadLetters == nil {
		// A FIFO source quarantines into a FIFO queue, so the order within
		// a message group survives into the redrive.
		var fifo *bool
		if p.fifo {
			fifo = jsii.Bool(true)
		}
		p.deadLetters = NewDeadLetterQueue(c.Construct, jsii.String("DeadLetters"), &DeadLetterQueueProps{Alarms: p.alarms, Fifo: fifo})
	}
	c.DeadLetters = p.deadLetters
	c.IdempotencyTable = p.idempotency
	env := map[string]string{
		EnvReportBatchItemFailures: strconv.FormatBool(p.report),
		EnvDLQURL:                  *p.deadLetters.Queue.QueueUrl(),
		EnvMaxAttempts:             strconv.Itoa(p.maxAttempts),
	}
	if p.idempotency != nil {
		env[EnvIdempotencyTable] = *p.idempotency.Table.TableName()
	}
	if p.attempts != nil {
		env[EnvAttemptsTable] = *p.attempts.Table.TableName()
	}
	if p.key != nil {
		env[EnvIdempotencyKey] = *p.key
	}
	if p.prefix != nil {
		env[EnvIdempotencyKeyPrefix] = *p.prefix
	} else if p.idempotency != nil {
		awscdk.Annotations_Of(c.Construct).AddWarningV2(jsii.String("sluice:IdempotencyKeyPrefix"), jsii.String(
			"idempotency keys start with the function's name, so renaming the function (or a replacement that renames it) "+
				"runs every record still in the idempotency table's retention again: set IdempotencyKeyPrefix "+
				"(to the function's current name to keep the keys the table holds)"), nil)
	}
	parallelizationEnv(env, p.pf, p.idempotency != nil)
	if p.kafkaFormat != "" {
		env[EnvKafkaEventRecordFormat] = p.kafkaFormat
	}
	c.fnOpts, c.env = p.fn, env
	f := newFunction(c.Construct, p.fn, env)
	c.Function, c.Role, c.LogGroup = f.fn, f.role, f.logGroup
	p.deadLetters.Queue.GrantSendMessages(f.role)
	if p.idempotency != nil {
		p.idempotency.Table.Grant(f.role, itemActions()...)
	}
	if p.attempts != nil {
		p.attempts.Table.Grant(f.role, itemActions()...)
	}
	a := newAlarms(c.Construct, p.alarms)
	a.function(f.fn)
	c.Alarms, c.alarms = a.all, a
	return a
}

// onFailureQueue makes the queue a stream or Kafka mapping sends its
// on-failure records to (metadata naming the failed batch, which
// `sluice fetch-failed` reads back from the stream), unless one is given.
func (c *Consumer) onFailureQueue(given awssqs.IQueue, a *alarms) awssqs.IQueue {
	q := given
	if q == nil {
		own := newSafeQueue(c.Construct, "OnFailure", &awssqs.QueueProps{})
		suppress(own, "AwsSolutions-SQS3",
			"This queue is the event source mapping's on-failure destination, which Lambda writes to directly; "+
				"the rule only recognises dead-letter queues named in a redrive policy.")
		a.deadLetterAge("OnFailureOldestMessage", own, "the on-failure queue")
		q = own
	}
	q.GrantSendMessages(c.Role)
	return q
}

// mapping makes the event source mapping once the role's grants exist:
// CreateEventSourceMapping checks the role's permissions.
func (c *Consumer) mapping(props *awslambda.CfnEventSourceMappingProps) {
	props.FunctionName = c.Function.FunctionName()
	c.Mapping = awslambda.NewCfnEventSourceMapping(c.Construct, jsii.String("Mapping"), props)
	c.Mapping.Node().AddDependency(c.Role)
}

// itemActions are the item reads and writes the idempotency and attempts
// stores make: no scans, queries, streams or table changes.
func itemActions() []*string {
	return *jsii.Strings("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem",
		"dynamodb:DeleteItem", "dynamodb:BatchWriteItem")
}

func responseTypes(report bool) *[]*string {
	if !report {
		return nil
	}
	return jsii.Strings("ReportBatchItemFailures")
}
