package infra_test

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskinesis"
	"github.com/aws/jsii-runtime-go"

	"github.com/sluicehq/sluice/infra"
)

// A function consuming an SQS queue, as a CDK app declares it: the
// construct makes three queues (the source, its redrive queue and the
// quarantine queue the handler's dead letters go to), the function with its
// role and log group, alarms, the event source mapping with partial batch
// responses on, and two dashboards: the consumer's, and the stack's that
// sums its consumers. The template is synthesized without AWS credentials.
// (testdata/fn holds a stand-in arm64 bootstrap; a real app builds its
// handler there, GOOS=linux GOARCH=arm64.)
func ExampleNewQueueConsumer() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Payments"), nil)
	infra.NewQueueConsumer(stack, jsii.String("Payments"), &infra.QueueConsumerProps{
		Function: infra.FunctionOptions{BootstrapDir: jsii.String("testdata/fn"), FunctionName: jsii.String("payments")},
	})

	tmpl := assertions.Template_FromStack(stack, nil)
	for _, m := range *tmpl.FindResources(jsii.String("AWS::Lambda::EventSourceMapping"), nil) {
		props := (*m)["Properties"].(map[string]any)
		fmt.Println("mapping:", props["BatchSize"], props["FunctionResponseTypes"])
	}
	var types []string
	counts := map[string]int{}
	for _, r := range (*tmpl.ToJSON())["Resources"].(map[string]any) {
		counts[r.(map[string]any)["Type"].(string)]++
	}
	for t := range counts {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		fmt.Println(t, counts[t])
	}
	// Output:
	// mapping: 10 [ReportBatchItemFailures]
	// AWS::CloudWatch::Alarm 5
	// AWS::CloudWatch::Dashboard 2
	// AWS::IAM::Policy 1
	// AWS::IAM::Role 1
	// AWS::Lambda::EventSourceMapping 1
	// AWS::Lambda::Function 1
	// AWS::Logs::LogGroup 1
	// AWS::SQS::Queue 3
	// AWS::SQS::QueuePolicy 3
}

// A Kinesis consumer an operator can work with: its failed batches go whole
// to an S3 bucket of its own (sluice fetch-failed --from-bucket reads them
// back), and a shadow replay, deployed disabled, reads the stream again
// from a time into a copy of the function with SLUICE_SHADOW=1.
func ExampleShadowReplay() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Orders"), nil)
	infra.NewStreamConsumer(stack, jsii.String("Orders"), &infra.StreamConsumerProps{
		Stream:        awskinesis.NewStream(stack, jsii.String("Stream"), &awskinesis.StreamProps{Encryption: awskinesis.StreamEncryption_MANAGED}),
		Function:      infra.FunctionOptions{BootstrapDir: jsii.String("testdata/fn"), FunctionName: jsii.String("orders")},
		OnFailureToS3: jsii.Bool(true),
		ShadowReplay: &infra.ShadowReplay{From: jsii.Number(1796083200), // 2026-12-01T00:00:00Z
			Environment: &map[string]*string{"ORDERS_TABLE": jsii.String("orders-shadow")}},
	})

	tmpl := assertions.Template_FromStack(stack, nil)
	var lines []string
	for _, m := range *tmpl.FindResources(jsii.String("AWS::Lambda::EventSourceMapping"), nil) {
		p := (*m)["Properties"].(map[string]any)
		dest := p["DestinationConfig"].(map[string]any)["OnFailure"].(map[string]any)["Destination"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
		lines = append(lines, fmt.Sprintf("mapping %v from %v %v, enabled %v, on-failure to %s", p["FunctionName"].(map[string]any)["Ref"].(string)[:12],
			p["StartingPosition"], p["StartingPositionTimestamp"], p["Enabled"], dest[:len(dest)-8]))
	}
	for _, f := range *tmpl.FindResources(jsii.String("AWS::Lambda::Function"), nil) {
		p := (*f)["Properties"].(map[string]any)
		env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		lines = append(lines, fmt.Sprintf("function %v: SLUICE_SHADOW=%v ORDERS_TABLE=%v", p["FunctionName"], env["SLUICE_SHADOW"], env["ORDERS_TABLE"]))
	}
	sort.Strings(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// function orders-shadow: SLUICE_SHADOW=1 ORDERS_TABLE=orders-shadow
	// function orders: SLUICE_SHADOW=<nil> ORDERS_TABLE=<nil>
	// mapping OrdersFuncti from TRIM_HORIZON <nil>, enabled <nil>, on-failure to OrdersOnFailureBucket
	// mapping OrdersShadow from AT_TIMESTAMP 1.7960832e+09, enabled false, on-failure to OrdersShadowOnFailure
}
