package infra_test

import (
	"fmt"
	"sort"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
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
