// Command app is a CDK app that deploys the example handler
// (examples/conformance) once per source: a Kinesis orders stream with
// idempotency, a DynamoDB table's stream, an SQS standard queue and an SQS
// FIFO queue (stack SluiceExample), and an Amazon MSK topic (stack
// SluiceExampleKafka, for a cluster of yours: -c kafkaClusterArn=ARN). It
// builds the arm64 bootstrap itself, applies the cdk-nag AwsSolutions
// checks, and exits 1 when a check reports an error, so both `make synth`
// and `cdk deploy` stop there.
//
// It shows what an operator gets: a dashboard per consumer and one per
// stack (the handler's own metrics on, in namespace SluiceExample), every
// mapping metric, an S3 on-failure destination for the orders stream, and
// shadow replays of the orders stream and the payments topic, deployed
// disabled: enable one with -c replay=true (or aws lambda
// update-event-source-mapping --enabled), watch its line on the dashboard,
// and tear it down by deploying without it.
//
//	make synth                    templates in cdk.out/, no AWS credentials needed
//	cd infra/examples/app && cdk deploy SluiceExample
//	cdk deploy SluiceExampleKafka -c kafkaClusterArn=arn:aws:kafka:...
//
// The templates are what `sluice run --template cdk.out/SluiceExample.template.json
// --mapping sluice-example-orders` runs locally (one mapping per function
// name: sluice-example-orders, -orders-shadow, -changes, -jobs, -ledger,
// -payments, -payments-shadow).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskinesis"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/sluicehq/sluice/infra"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(1)
	}
}

func run() error {
	defer jsii.Close()
	bootstrap, err := os.MkdirTemp("", "sluice-bootstrap-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bootstrap)
	if err := buildBootstrap(bootstrap); err != nil {
		return err
	}

	// The output directory is read here, not left to the jsii runtime,
	// which saw the environment when it started.
	var props *awscdk.AppProps
	if dir := os.Getenv("CDK_OUTDIR"); dir != "" {
		props = &awscdk.AppProps{Outdir: jsii.String(dir)}
	}
	app := awscdk.NewApp(props)
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	stack := awscdk.NewStack(app, jsii.String("SluiceExample"), &awscdk.StackProps{
		Description: jsii.String("Sluice example: consumers of a Kinesis stream (with idempotency), a DynamoDB table's stream, an SQS queue and an SQS FIFO queue"),
	})
	function := func(name, source string) infra.FunctionOptions {
		return infra.FunctionOptions{
			BootstrapDir: jsii.String(bootstrap),
			FunctionName: jsii.String("sluice-example-" + name),
			Environment:  &map[string]*string{"SLUICE_SOURCE": jsii.String(source)},
			// The handler's own metrics, which the dashboards draw.
			MetricsNamespace: jsii.String("SluiceExample"),
		}
	}
	// The shadow replays poll once enabled: -c replay=true.
	replay := app.Node().TryGetContext(jsii.String("replay")) == "true"
	// Where the replays start: 2026-12-01T00:00:00Z.
	const from = 1796083200

	orders := awskinesis.NewStream(stack, jsii.String("OrdersStream"), &awskinesis.StreamProps{
		Encryption: awskinesis.StreamEncryption_MANAGED, ShardCount: jsii.Number(2),
	})
	infra.NewStreamConsumer(stack, jsii.String("Orders"), &infra.StreamConsumerProps{
		Stream:           orders,
		IdempotencyTable: infra.NewIdempotencyTable(stack, jsii.String("Idempotency"), nil),
		Function:         function("orders", "kinesis"),
		// Failed batches whole, in a bucket of the construct's own.
		OnFailureToS3: jsii.Bool(true),
		// History replayed through Lambda into sluice-example-orders-shadow
		// (SLUICE_SHADOW=1: the conformance function marks its effects
		// "shadow"; a real function names its shadow sink here).
		ShadowReplay: &infra.ShadowReplay{
			From:        jsii.Number(from),
			Enabled:     jsii.Bool(replay),
			BatchSize:   jsii.Number(1000),
			Environment: &map[string]*string{"ORDERS_SINK": jsii.String("orders-shadow")},
		},
	})
	accounts := awsdynamodb.NewTable(stack, jsii.String("Accounts"), &awsdynamodb.TableProps{
		PartitionKey:  &awsdynamodb.Attribute{Name: jsii.String("pk"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:   awsdynamodb.BillingMode_PAY_PER_REQUEST,
		Stream:        awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
		Encryption:    awsdynamodb.TableEncryption_AWS_MANAGED,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
	})
	infra.NewStreamConsumer(stack, jsii.String("Changes"), &infra.StreamConsumerProps{
		Table:    accounts,
		Function: function("changes", "dynamodb"),
	})
	infra.NewQueueConsumer(stack, jsii.String("Jobs"), &infra.QueueConsumerProps{
		Function: function("jobs", "sqs"),
	})
	infra.NewQueueConsumer(stack, jsii.String("Ledger"), &infra.QueueConsumerProps{
		Fifo:     jsii.Bool(true),
		Function: function("ledger", "sqs-fifo"),
	})

	// Kafka needs a cluster: an MSK cluster of yours, read with IAM
	// authentication. Without -c kafkaClusterArn=... the stack synthesizes
	// against a placeholder ARN, for make synth and sluice run only.
	clusterArn := "arn:aws:kafka:us-east-1:111111111111:cluster/example/00000000-0000-0000-0000-000000000000-1"
	if v, ok := app.Node().TryGetContext(jsii.String("kafkaClusterArn")).(string); ok && v != "" {
		clusterArn = v
	}
	kafka := awscdk.NewStack(app, jsii.String("SluiceExampleKafka"), &awscdk.StackProps{
		Description: jsii.String("Sluice example: a consumer of an Amazon MSK topic, in provisioned mode"),
	})
	infra.NewKafkaConsumer(kafka, jsii.String("Payments"), &infra.KafkaConsumerProps{
		ClusterArn:      jsii.String(clusterArn),
		Topic:           jsii.String("payments"),
		ConsumerGroupId: jsii.String("sluice-example-payments"),
		Function:        function("payments", "kafka"),
		// A replay of the topic with a consumer group of its own,
		// sluice-example-payments-shadow.
		ShadowReplay: &infra.ShadowReplay{From: jsii.Number(from), Enabled: jsii.Bool(replay)},
	})

	asm := app.Synth(nil)
	return nagErrors(asm)
}

// nagErrors fails when the synthesized metadata (manifest.json) holds an
// error annotation, as cdk-nag's unsuppressed findings are: an in-process
// synth does not fail on them by itself.
func nagErrors(asm cxapi.CloudAssembly) error {
	raw, err := os.ReadFile(filepath.Join(*asm.Directory(), "manifest.json"))
	if err != nil {
		return err
	}
	var manifest struct {
		Artifacts map[string]struct {
			Metadata map[string][]struct {
				Type string `json:"type"`
				Data any    `json:"data"`
			} `json:"metadata"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(raw, &manifest); err != nil {
		return fmt.Errorf("manifest.json: %w", err)
	}
	n := 0
	for name, a := range manifest.Artifacts {
		for path, entries := range a.Metadata {
			for _, e := range entries {
				if e.Type == "aws:cdk:error" {
					n++
					fmt.Fprintf(os.Stderr, "%s %s: %v\n", name, path, e.Data)
				}
			}
		}
	}
	if n > 0 {
		return fmt.Errorf("%d error annotations (cdk-nag) in the synthesized stacks", n)
	}
	return nil
}

// buildBootstrap compiles examples/conformance for Lambda (linux/arm64)
// into dir/bootstrap, from the Sluice module this app sits in.
func buildBootstrap(dir string) error {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "examples", "conformance")); err != nil {
		return fmt.Errorf("run the app from infra/examples/app (as cdk.json and make synth do): %w", err)
	}
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-tags", "lambda.norpc", "-ldflags", "-s -w",
		"-o", filepath.Join(dir, "bootstrap"), "./examples/conformance")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building examples/conformance for linux/arm64: %w", err)
	}
	return nil
}
