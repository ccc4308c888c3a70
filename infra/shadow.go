package infra

import (
	"fmt"
	"maps"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// EnvShadow is "1" on the function of a ShadowReplay: handlers.Shadow(ctx)
// is then true for every record, so the function writes its effects to a
// shadow sink, and its idempotency keys carry the prefix shadow# (package
// handlers, EnvShadow and ShadowKeyPrefix).
const EnvShadow = "SLUICE_SHADOW"

// ShadowReplay replays a stream's or topic's retained history through
// Lambda itself: a second event source mapping on the same Kinesis stream,
// DynamoDB stream or Kafka topic, starting at From, into a shadow copy of
// the function (the same code and settings, SLUICE_SHADOW=1, a role,
// dead-letter queue and on-failure queue of its own). The shadow writes
// to the shadow sink the function picks when handlers.Shadow(ctx) is true
// (name it in Environment), and claims idempotency keys under shadow#, so
// it neither repeats production's effects nor is blocked by production's
// claims. What `sluice replay` does on one machine, for a replay of days of
// a 100-shard stream.
//
// The mapping is deployed disabled unless Enabled: deploy, check the shadow
// function and its sink, then enable it (Enabled true and deploy again, or
// aws lambda update-event-source-mapping --uuid UUID --enabled). Watch its
// backlog age on the consumer's dashboard (the "shadow" line: it falls to
// seconds once the replay has caught up). Once caught up it keeps
// consuming new records into the shadow sink like a second consumer, so
// tear it down when done: remove ShadowReplay and deploy (the mapping,
// function, role and queues go; the sink is yours). docs/deploy.md
// has the whole procedure.
type ShadowReplay struct {
	// From is where the replay starts, in Unix seconds (StartingPosition
	// AT_TIMESTAMP; Kinesis and Kafka). Unset, it starts at TRIM_HORIZON,
	// the oldest record retained (the only choice for DynamoDB Streams,
	// which keep 24 hours).
	From *float64
	// Enabled makes the replay mapping poll: default false.
	Enabled *bool
	// Environment is added to the shadow function's variables, over the
	// production function's own (FunctionOptions.Environment): name the
	// shadow sink here. It may not set the SLUICE_* variables the construct
	// sets.
	Environment *map[string]*string
	// FunctionName of the shadow function: default the production
	// FunctionName with "-shadow", or a name CloudFormation makes up.
	FunctionName *string
	// BatchSize and ParallelizationFactor (streams) of the replay mapping:
	// default the consumer's. Larger batches and more parallel batches per
	// shard catch up sooner, and read more of each shard's throughput.
	BatchSize             *float64
	ParallelizationFactor *float64
	// ConsumerGroupId of a Kafka replay: default the consumer's group with
	// "-shadow" (never the production group: the two would split the
	// partitions between them). A group that already has committed offsets
	// starts from them, not From: to replay from an offset, commit it for
	// the group before the first enable (kafka-consumer-groups.sh --group
	// GROUP --topic TOPIC --reset-offsets --to-offset N --execute).
	ConsumerGroupId *string
}

// ShadowConsumer is what a ShadowReplay deploys, beside its consumer.
type ShadowConsumer struct {
	constructs.Construct
	Function awslambda.Function
	Role     awsiam.Role
	LogGroup awslogs.LogGroup
	// Mapping is the replay's event source mapping (Enabled false until
	// enabled).
	Mapping awslambda.CfnEventSourceMapping
	// DeadLetters is the shadow's own quarantine queue (SLUICE_DLQ_URL):
	// what the replay quarantines stays apart from production's.
	DeadLetters awssqs.Queue
	// OnFailure is the replay mapping's on-failure queue (streams and Kafka
	// in provisioned mode), nil without one.
	OnFailure awssqs.Queue
}

// shadowProblems checks a ShadowReplay against its consumer.
func shadowProblems(r *ShadowReplay, source string, queueMode bool) []string {
	if r == nil {
		return nil
	}
	var p []string
	if r.From != nil && source == sourceDynamoDB {
		p = append(p, "ShadowReplay.From: DynamoDB Streams have no AT_TIMESTAMP; leave From unset to replay from TRIM_HORIZON (24 hours)")
	}
	if r.From != nil && *r.From <= 0 {
		p = append(p, fmt.Sprintf("ShadowReplay.From %v: a Unix time in seconds", *r.From))
	}
	if queueMode {
		p = append(p, "ShadowReplay: a Kafka share group (ConsumptionMode Queue) has no starting position to replay from")
	}
	if r.ConsumerGroupId != nil && source != sourceKafka {
		p = append(p, "ShadowReplay.ConsumerGroupId is for Kafka")
	}
	if r.ParallelizationFactor != nil && source == sourceKafka {
		p = append(p, "ShadowReplay.ParallelizationFactor is for streams")
	}
	var batch int
	if r.BatchSize != nil {
		batch = whole("ShadowReplay.BatchSize", r.BatchSize, 1, &p)
		if batch < 1 || batch > 10000 {
			p = append(p, fmt.Sprintf("ShadowReplay.BatchSize %d is outside 1..10000", batch))
		}
	}
	if r.ParallelizationFactor != nil {
		if n := whole("ShadowReplay.ParallelizationFactor", r.ParallelizationFactor, 1, &p); n < 1 || n > 10 {
			p = append(p, fmt.Sprintf("ShadowReplay.ParallelizationFactor %d is outside 1..10", n))
		}
	}
	if r.Environment != nil {
		for _, k := range append(reservedEnv(), EnvShadow) {
			if _, ok := (*r.Environment)[k]; ok {
				p = append(p, fmt.Sprintf("ShadowReplay.Environment sets %s, which the construct sets", k))
			}
		}
	}
	return p
}

// shadow deploys r beside the consumer. mp is the production mapping's
// props as the caller adapted them to the shadow (a Kafka consumer group,
// the stream instead of a fan-out consumer); grant gives the shadow's role
// what reading the source needs.
func (c *Consumer) shadow(r *ShadowReplay, mp awslambda.CfnEventSourceMappingProps, attempts *AttemptsTable, grant func(awsiam.Role)) *ShadowConsumer {
	s := &ShadowConsumer{Construct: constructs.NewConstruct(c.Construct, jsii.String("Shadow"))}
	s.DeadLetters = newSafeQueue(s.Construct, "DeadLetters", &awssqs.QueueProps{Fifo: c.DeadLetters.Queue.Fifo()})
	suppress(s.DeadLetters, "AwsSolutions-SQS3",
		"This queue is the shadow replay's dead-letter queue itself: the quarantine middleware sends to it directly, so no redrive policy names it.")

	o := *c.fnOpts
	if r.FunctionName != nil {
		o.FunctionName = r.FunctionName
	} else if o.FunctionName != nil {
		o.FunctionName = jsii.String(*o.FunctionName + "-shadow")
	}
	vars := map[string]*string{}
	if o.Environment != nil {
		maps.Copy(vars, *o.Environment)
	}
	if r.Environment != nil {
		maps.Copy(vars, *r.Environment)
	}
	o.Environment = &vars
	env := maps.Clone(c.env)
	env[EnvShadow] = "1"
	env[EnvDLQURL] = *s.DeadLetters.QueueUrl()
	if r.ParallelizationFactor != nil {
		// The replay's mapping reads this many batches of a shard at
		// once, not production's: its handler must be told its own.
		parallelizationEnv(env, int(*r.ParallelizationFactor), c.IdempotencyTable != nil)
	}
	f := newFunction(s.Construct, &o, env)
	s.Function, s.Role, s.LogGroup = f.fn, f.role, f.logGroup
	s.DeadLetters.GrantSendMessages(f.role)
	if c.IdempotencyTable != nil {
		c.IdempotencyTable.Table.Grant(f.role, itemActions()...)
	}
	if attempts != nil {
		attempts.Table.Grant(f.role, itemActions()...)
	}
	grant(f.role)

	if r.From != nil {
		mp.StartingPosition, mp.StartingPositionTimestamp = jsii.String("AT_TIMESTAMP"), r.From
	} else {
		mp.StartingPosition, mp.StartingPositionTimestamp = jsii.String("TRIM_HORIZON"), nil
	}
	mp.Enabled = jsii.Bool(boolOr(r.Enabled, false))
	if r.BatchSize != nil {
		mp.BatchSize = r.BatchSize
	}
	if r.ParallelizationFactor != nil {
		mp.ParallelizationFactor = r.ParallelizationFactor
	}
	if mp.DestinationConfig != nil {
		s.OnFailure = newSafeQueue(s.Construct, "OnFailure", &awssqs.QueueProps{})
		suppress(s.OnFailure, "AwsSolutions-SQS3",
			"This queue is the shadow replay mapping's on-failure destination, which Lambda writes to directly; "+
				"the rule only recognises dead-letter queues named in a redrive policy.")
		s.OnFailure.GrantSendMessages(f.role)
		mp.DestinationConfig = &awslambda.CfnEventSourceMapping_DestinationConfigProperty{
			OnFailure: &awslambda.CfnEventSourceMapping_OnFailureProperty{Destination: s.OnFailure.QueueArn()},
		}
	}
	mp.FunctionName = s.Function.FunctionName()
	s.Mapping = awslambda.NewCfnEventSourceMapping(s.Construct, jsii.String("Mapping"), &mp)
	s.Mapping.Node().AddDependency(s.Role)
	return s
}
