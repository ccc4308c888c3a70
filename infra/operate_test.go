package infra

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/sluicehq/sluice/localtest"
)

// dashboardBody rebuilds a dashboard's JSON body from its Fn::Join, each
// token replaced by a string naming it ("REF:Logical", "ATT:Logical.Attr",
// "PSEUDO:AWS::Region"), and decodes it.
func dashboardBody(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	var b strings.Builder
	var part func(v any)
	part = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x)
		case map[string]any:
			switch {
			case x["Ref"] != nil:
				ref := x["Ref"].(string)
				if strings.HasPrefix(ref, "AWS::") {
					b.WriteString("PSEUDO:" + ref)
				} else {
					b.WriteString("REF:" + ref)
				}
			case x["Fn::GetAtt"] != nil:
				a := x["Fn::GetAtt"].([]any)
				b.WriteString(fmt.Sprintf("ATT:%s.%s", a[0], a[1]))
			case x["Fn::Join"] != nil:
				j := x["Fn::Join"].([]any)
				for i, p := range j[1].([]any) {
					if i > 0 {
						b.WriteString(j[0].(string))
					}
					part(p)
				}
			default:
				t.Fatalf("dashboard body holds %v", x)
			}
		}
	}
	part(r["Properties"].(map[string]any)["DashboardBody"])
	var body map[string]any
	if err := json.Unmarshal([]byte(b.String()), &body); err != nil {
		t.Fatalf("dashboard body: %v\n%s", err, b.String())
	}
	return body
}

// dashboards returns the stack's dashboards by logical ID.
func dashboards(t *testing.T, stack string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for id, r := range resources(t, stack, "AWS::CloudWatch::Dashboard") {
		out[id] = dashboardBody(t, r)
	}
	return out
}

// dashboardOf is the one dashboard whose logical ID starts with prefix.
func dashboardOf(t *testing.T, stack, prefix string) []map[string]any {
	t.Helper()
	var found []map[string]any
	for id, body := range dashboards(t, stack) {
		if strings.HasPrefix(id, prefix) {
			for _, w := range body["widgets"].([]any) {
				found = append(found, w.(map[string]any))
			}
			return found
		}
	}
	t.Fatalf("%s: no dashboard %s*", stack, prefix)
	return nil
}

// widget is the dashboard widget whose title starts with title.
func widget(t *testing.T, ws []map[string]any, title string) map[string]any {
	t.Helper()
	for _, w := range ws {
		p, _ := w["properties"].(map[string]any)
		if s, _ := p["title"].(string); strings.HasPrefix(s, title) {
			return p
		}
		if s, _ := p["markdown"].(string); strings.Contains(s, title) {
			return p
		}
	}
	var titles []string
	for _, w := range ws {
		p, _ := w["properties"].(map[string]any)
		titles = append(titles, fmt.Sprint(p["title"]))
	}
	t.Fatalf("no widget %q among %q", title, titles)
	return nil
}

// lines are a graph widget's metric lines, each as one string
// "Namespace Name Dim Value ... {options}".
func lines(p map[string]any) []string {
	var out []string
	for _, m := range p["metrics"].([]any) {
		b, _ := json.Marshal(m)
		out = append(out, string(b))
	}
	return out
}

func hasLine(t *testing.T, p map[string]any, want ...string) {
	t.Helper()
	ls := lines(p)
	for _, l := range ls {
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(l, w)
		}
		if ok {
			return
		}
	}
	t.Errorf("%v: no line with %q among\n  %s", p["title"], want, strings.Join(ls, "\n  "))
}

func annotation(p map[string]any) []float64 {
	a, _ := p["annotations"].(map[string]any)
	var vs []float64
	for _, h := range a["horizontal"].([]any) {
		vs = append(vs, h.(map[string]any)["value"].(float64))
	}
	return vs
}

// TestDashboards: each consumer gets its own dashboard with the backlog
// and its alarm threshold, the mapping's events, the function, the
// handler's metrics and the dead letters; the stack gets one summing
// them; Dashboard false leaves a consumer out of both.
func TestDashboards(t *testing.T) {
	const s = "Operate"
	// Orders, Changes, Payments, Jobs; Quiet has none; and the stack's.
	count(t, s, "AWS::CloudWatch::Dashboard", 4+1)
	for id := range dashboards(t, s) {
		if strings.HasPrefix(id, "Quiet") {
			t.Errorf("Quiet has Dashboard false but got %s", id)
		}
	}

	orders := dashboardOf(t, s, "OrdersDashboard")
	backlog := widget(t, orders, "Streams: IteratorAge")
	hasLine(t, backlog, `"AWS/Lambda","IteratorAge","FunctionName","REF:OrdersFunction`, `"stat":"Maximum"`)
	hasLine(t, backlog, `"IteratorAge","FunctionName","REF:OrdersShadowFunction`, `"label":"shadow replay"`)
	if a := annotation(backlog); !slices.Equal(a, []float64{300000}) {
		t.Errorf("backlog thresholds %v, want the IteratorAge alarm's 300000 ms", a)
	}
	// Errors, throttles, iterator age, dropped, on-failure; the dead-letter
	// queue's age.
	if w := widget(t, orders, "Alarms"); len(w["alarms"].([]any)) != 6 {
		t.Errorf("alarm status widget: %v", w["alarms"])
	}
	events := widget(t, orders, "Mapping: events")
	for _, m := range []string{"PolledEventCount", "FilteredOutEventCount", "FailedInvokeEventCount", "DroppedEventCount", "OnFailureDestinationDeliveredEventCount"} {
		hasLine(t, events, `"AWS/Lambda","`+m+`","EventSourceMappingUUID","REF:OrdersMapping`)
	}
	hasLine(t, events, `"PolledEventCount","EventSourceMappingUUID","REF:OrdersShadowMapping`)
	if strings.Contains(strings.Join(lines(events), ""), "DeletedEventCount") {
		t.Error("a stream mapping deletes nothing: no DeletedEventCount line")
	}
	fn := widget(t, orders, "Function: errors and throttles")
	hasLine(t, fn, `"Errors","FunctionName","REF:OrdersFunction`)
	hasLine(t, fn, `"Throttles","FunctionName","REF:OrdersFunction`)
	hasLine(t, fn, `"Errors","FunctionName","REF:OrdersShadowFunction`)
	if a := annotation(widget(t, orders, "Function: duration")); !slices.Equal(a, []float64{30000}) {
		t.Errorf("duration annotation %v, want the 30 s timeout", a)
	}
	hasLine(t, widget(t, orders, "Function: concurrency"), `"ConcurrentExecutions","FunctionName","REF:OrdersFunction`)
	// The handler's own metrics, under its namespace and default dimensions.
	handler := widget(t, orders, "Handler: records")
	for _, m := range []string{MetricRecordsFailed, MetricInProcessRetries, MetricRecordsDuplicate, MetricRecordsQuarantined} {
		hasLine(t, handler, `"Shop","`+m+`","FunctionName","REF:OrdersFunction`, `"Source","kinesis"`)
	}
	times := widget(t, orders, "Handler: batch duration")
	hasLine(t, times, `"Shop","BatchDuration"`, `"stat":"p99"`)
	hasLine(t, times, `"Shop","OldestRecordAge"`, `"stat":"Maximum"`)
	dead := widget(t, orders, "Dead letters: age")
	hasLine(t, dead, `"AWS/SQS","ApproximateAgeOfOldestMessage","QueueName","ATT:OrdersDeadLettersQueue`)
	hasLine(t, dead, `"ApproximateAgeOfOldestMessage","QueueName","ATT:OrdersShadowDeadLetters`)
	hasLine(t, widget(t, orders, "Dead letters: messages"), `"ApproximateNumberOfMessagesVisible","QueueName","ATT:OrdersDeadLettersQueue`)
	if a := annotation(dead); !slices.Equal(a, []float64{3600}) {
		t.Errorf("dead-letter age thresholds %v, want 3600", a)
	}
	widget(t, orders, "sluice fetch-failed --from-bucket") // the on-failure bucket's note

	// A queue: its backlog is the queue's oldest message, 900 s; SQS
	// mappings delete, they do not drop; no handler metrics without a
	// namespace, and the dashboard says how to turn them on.
	jobs := dashboardOf(t, s, "JobsDashboard")
	qb := widget(t, jobs, "Queues: age of the oldest message")
	hasLine(t, qb, `"AWS/SQS","ApproximateAgeOfOldestMessage","QueueName","ATT:JobsQueue`)
	if a := annotation(qb); !slices.Equal(a, []float64{900}) {
		t.Errorf("queue backlog thresholds %v", a)
	}
	hasLine(t, widget(t, jobs, "Mapping: events"), `"DeletedEventCount"`)
	if strings.Contains(strings.Join(lines(widget(t, jobs, "Mapping: events")), ""), "DroppedEventCount") {
		t.Error("SQS mappings publish no DroppedEventCount")
	}
	widget(t, jobs, "Handler metrics\nOff: set FunctionOptions.MetricsNamespace")
	hasLine(t, widget(t, jobs, "Dead letters: age"), `"ApproximateAgeOfOldestMessage","QueueName","ATT:JobsRedrive`)

	// Kafka: OffsetLag, production's and the shadow's.
	pay := dashboardOf(t, s, "PaymentsDashboard")
	lag := widget(t, pay, "Kafka: OffsetLag")
	hasLine(t, lag, `"OffsetLag","FunctionName","REF:PaymentsFunction`)
	hasLine(t, lag, `"OffsetLag","FunctionName","REF:PaymentsShadowFunction`)
	if a := annotation(lag); !slices.Equal(a, []float64{10000}) {
		t.Errorf("offset lag thresholds %v", a)
	}

	// The stack's: a backlog line per consumer, in seconds (a stream's
	// IteratorAge divided by 1000) or, for Kafka, records on the right
	// axis; and sums.
	st := dashboardOf(t, s, "SluiceDashboard")
	sb := widget(t, st, "Backlog")
	hasLine(t, sb, `"expression":"age1/1000"`, `"label":"Orders"`)
	hasLine(t, sb, `"AWS/Lambda","IteratorAge","FunctionName","REF:OrdersFunction`, `"id":"age1"`, `"visible":false`)
	hasLine(t, sb, `"expression":"age2/1000"`, `"label":"Orders shadow replay"`)
	hasLine(t, sb, `"IteratorAge","FunctionName","REF:OrdersShadowFunction`, `"id":"age2"`)
	hasLine(t, sb, `"IteratorAge","FunctionName","REF:ChangesFunction`)
	hasLine(t, sb, `"OffsetLag","FunctionName","REF:PaymentsFunction`, `"label":"Payments"`, `"yAxis":"right"`)
	hasLine(t, sb, `"ApproximateAgeOfOldestMessage","QueueName","ATT:JobsQueue`, `"label":"Jobs"`)
	for _, title := range []string{"Function errors", "Function throttles", "Records dropped", "Handler: records failed", "Handler: records quarantined"} {
		hasLine(t, widget(t, st, title), `"expression":"SUM(METRICS())"`, `"label":"all consumers"`)
	}
	errs := widget(t, st, "Function errors")
	for _, c := range []string{"Orders", "Changes", "Payments", "Jobs"} {
		hasLine(t, errs, `"Errors"`, `"label":"`+c+`"`)
	}
	hasLine(t, widget(t, st, "Records dropped"), `"DroppedEventCount"`, `"label":"Payments dropped"`)
	hasLine(t, widget(t, st, "Handler: records failed"), `"Shop","RecordsFailed"`, `"label":"Orders"`)
	hasLine(t, widget(t, st, "Dead letters: age"), `"label":"Jobs redrive queue"`)
	all, _ := json.Marshal(st)
	if strings.Contains(string(all), "Quiet") {
		t.Error("the stack's dashboard draws Quiet, whose Dashboard is false")
	}
	n := 0
	for _, w := range st {
		if w["type"] == "alarm" {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d alarm status widgets on the stack's dashboard, want one per consumer drawn (4)", n)
	}
	// Laid out in rows, none overlapping.
	for _, board := range dashboards(t, s) {
		cells := map[[2]int]bool{}
		for _, w := range board["widgets"].([]any) {
			m := w.(map[string]any)
			x, y, wd, h := int(m["x"].(float64)), int(m["y"].(float64)), int(m["width"].(float64)), int(m["height"].(float64))
			if x+wd > 24 {
				t.Errorf("widget %v overflows the grid", m["properties"])
			}
			for i := x; i < x+wd; i++ {
				for j := y; j < y+h; j++ {
					if cells[[2]int{i, j}] {
						t.Fatalf("widgets overlap at %d,%d: %v", i, j, m["properties"])
					}
					cells[[2]int{i, j}] = true
				}
			}
		}
	}
}

// TestMappingMetricGroups: every MetricsConfig group AWS offers for the
// source, and none where the mapping would be rejected (Kafka on demand).
func TestMappingMetricGroups(t *testing.T) {
	for _, s := range []string{"Operate", "Kafka", "KinesisDefaults", "QueueDefaults", "DynamoDB"} {
		for id, m := range resources(t, s, "AWS::Lambda::EventSourceMapping") {
			p := m["Properties"].(map[string]any)
			b, _ := json.Marshal(p["MetricsConfig"])
			_, kafka := p["Topics"]
			_, provisioned := p["ProvisionedPollerConfig"]
			switch got := string(b); {
			case got == "null":
				// MappingMetrics false, or Kafka on demand: checked below.
			case kafka && !provisioned:
				t.Errorf("%s %s: a Kafka mapping on demand with MetricsConfig %s", s, id, got)
			case kafka && got != `{"Metrics":["EventCount","ErrorCount","KafkaMetrics"]}`:
				t.Errorf("%s %s: Kafka MetricsConfig %s", s, id, got)
			case !kafka && got != `{"Metrics":["EventCount"]}`:
				t.Errorf("%s %s: MetricsConfig %s", s, id, got)
			}
		}
	}
	has(t, "Kafka", "AWS::Lambda::EventSourceMapping", map[string]any{"Topics": []any{"audit"}, "MetricsConfig": absent()})
	has(t, "Operate", "AWS::Lambda::EventSourceMapping", map[string]any{"Topics": []any{"payments"},
		"MetricsConfig": map[string]any{"Metrics": []any{"EventCount", "ErrorCount", "KafkaMetrics"}}})
}

// TestOnFailureBucket: a bucket the construct makes, safely, or one the
// user gives; the role may write on-failure objects there and nothing
// more.
func TestOnFailureBucket(t *testing.T) {
	const s = "Operate"
	buckets := resources(t, s, "AWS::S3::Bucket")
	if len(buckets) != 1 {
		t.Fatalf("%d buckets, want Orders' own", len(buckets))
	}
	for id, b := range buckets {
		if !strings.HasPrefix(id, "OrdersOnFailureBucket") || b["DeletionPolicy"] != "Retain" {
			t.Errorf("bucket %s: %v", id, b)
		}
	}
	has(t, s, "AWS::S3::Bucket", map[string]any{
		"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{
			map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}}}},
		"PublicAccessBlockConfiguration": map[string]any{"BlockPublicAcls": true, "BlockPublicPolicy": true,
			"IgnorePublicAcls": true, "RestrictPublicBuckets": true},
		"OwnershipControls": map[string]any{"Rules": []any{map[string]any{"ObjectOwnership": "BucketOwnerEnforced"}}},
		"LifecycleConfiguration": map[string]any{"Rules": []any{like(map[string]any{"ExpirationInDays": 30, "Status": "Enabled",
			"AbortIncompleteMultipartUpload": map[string]any{"DaysAfterInitiation": 1}})}},
	})
	has(t, s, "AWS::S3::BucketPolicy", map[string]any{"PolicyDocument": like(map[string]any{"Statement": arrayWith(
		like(map[string]any{"Effect": "Deny", "Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}}}))})})
	bucket := map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^OrdersOnFailureBucket")), "Arn"}}
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{"FunctionName": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^OrdersFunction"))},
		"DestinationConfig": map[string]any{"OnFailure": map[string]any{"Destination": bucket}}})
	has(t, s, "AWS::IAM::Policy", map[string]any{"PolicyDocument": like(map[string]any{"Statement": arrayWith(
		like(map[string]any{"Action": "s3:PutObject", "Resource": map[string]any{"Fn::Join": []any{"", []any{bucket, "/aws/lambda/*"}}}}),
		like(map[string]any{"Action": "s3:ListBucket", "Resource": bucket}),
	)})})
	// No on-failure queue for Orders or Payments: their records go to S3.
	for id := range resources(t, s, "AWS::SQS::Queue") {
		if strings.HasPrefix(id, "OrdersOnFailure") || strings.HasPrefix(id, "PaymentsOnFailure") {
			t.Errorf("queue %s: the on-failure records go to a bucket", id)
		}
	}
	// The user's bucket, on a Kafka consumer.
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{"Topics": []any{"payments"},
		"AmazonManagedKafkaEventSourceConfig": map[string]any{"ConsumerGroupId": "payments"},
		"DestinationConfig":                   map[string]any{"OnFailure": map[string]any{"Destination": "arn:aws:s3:::shop-failed-batches"}}})
	has(t, s, "AWS::IAM::Policy", map[string]any{"PolicyDocument": like(map[string]any{"Statement": arrayWith(
		like(map[string]any{"Action": "s3:PutObject", "Resource": "arn:aws:s3:::shop-failed-batches/aws/lambda/*"}),
		like(map[string]any{"Action": "s3:ListBucket", "Resource": "arn:aws:s3:::shop-failed-batches"}),
	)})})
	// No alarm on an on-failure queue that is not there; the mapping's
	// on-failure count still alarms.
	hasNot(t, s, "AWS::CloudWatch::Alarm", map[string]any{"AlarmDescription": assertions.Match_StringLikeRegexp(jsii.String("^Operate/Orders: the on-failure queue"))})
	has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "OnFailureDestinationDeliveredEventCount",
		"Dimensions": []any{map[string]any{"Name": "EventSourceMappingUUID", "Value": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^OrdersMapping"))}}}})
}

// TestShadowReplay: a second mapping on the same stream or topic, from a
// time, into a copy of the function marked SLUICE_SHADOW=1 with its own
// sink, role and queues; disabled unless asked.
func TestShadowReplay(t *testing.T) {
	const s = "Operate"
	shadowFn := map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^OrdersShadowFunction"))}
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{
		"FunctionName":     shadowFn,
		"EventSourceArn":   map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^Stream")), "Arn"}},
		"StartingPosition": "AT_TIMESTAMP", "StartingPositionTimestamp": 1700000000, "Enabled": false, "BatchSize": 1000, "ParallelizationFactor": 3,
		"BisectBatchOnFunctionError": true, "MaximumRetryAttempts": 5, "FunctionResponseTypes": []any{"ReportBatchItemFailures"},
		"DestinationConfig": map[string]any{"OnFailure": map[string]any{"Destination": map[string]any{
			"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^OrdersShadowOnFailure")), "Arn"}}}},
		"MetricsConfig": map[string]any{"Metrics": []any{"EventCount"}},
	})
	// Production's mapping is untouched: TRIM_HORIZON, enabled.
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{"FunctionName": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^OrdersFunction"))},
		"StartingPosition": "TRIM_HORIZON", "Enabled": absent(), "StartingPositionTimestamp": absent(), "BatchSize": 100})
	has(t, s, "AWS::Lambda::Function", map[string]any{"FunctionName": "orders-shadow", "Environment": map[string]any{"Variables": map[string]any{
		"SLUICE_SHADOW": "1", "SINK_TABLE": "orders-shadow", "SLUICE_METRICS_NAMESPACE": "Shop", "SLUICE_MAX_ATTEMPTS": "3",
		"SLUICE_REPORT_BATCH_ITEM_FAILURES": "true",
		// The replay reads three batches of a shard at once: its handler
		// keeps a checkpoint per shard and partition key.
		"SLUICE_PARALLELIZATION_FACTOR": "3",
		"SLUICE_DLQ_URL":                map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^OrdersShadowDeadLetters"))},
		"SLUICE_IDEMPOTENCY_TABLE":      map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^IdempotencyTable"))},
		"SLUICE_ATTEMPTS_TABLE":         map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^OrdersAttemptsTable"))},
	}}})
	has(t, s, "AWS::Lambda::Function", map[string]any{"FunctionName": "orders", "Environment": map[string]any{"Variables": like(map[string]any{
		"SLUICE_SHADOW": absent(), "SINK_TABLE": "orders", "SLUICE_PARALLELIZATION_FACTOR": "1", // its mapping's factor, declared
		"SLUICE_DLQ_URL": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^OrdersDeadLettersQueue"))}})}})
	// Its own role reads the stream and the tables and sends to its own
	// queues.
	has(t, s, "AWS::IAM::Policy", map[string]any{
		"Roles": []any{map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^OrdersShadowRole"))}},
		"PolicyDocument": like(map[string]any{"Statement": arrayWith(
			like(map[string]any{"Action": arrayWith("sqs:SendMessage"), "Resource": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^OrdersShadowDeadLetters")), "Arn"}}}),
			like(map[string]any{"Action": arrayWith("dynamodb:PutItem"), "Resource": arrayWith(map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^IdempotencyTable")), "Arn"}})}),
			like(map[string]any{"Action": arrayWith("kinesis:GetRecords")}),
		)})})
	// A replay is far behind by design: no alarm on the shadow.
	hasNot(t, s, "AWS::CloudWatch::Alarm", map[string]any{"Dimensions": arrayWith(map[string]any{"Name": "FunctionName", "Value": shadowFn})})

	// DynamoDB Streams: from the trim horizon, enabled here.
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{
		"FunctionName":     map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^ChangesShadowFunction"))},
		"EventSourceArn":   map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^Source")), "StreamArn"}},
		"StartingPosition": "TRIM_HORIZON", "StartingPositionTimestamp": absent(), "Enabled": true})

	// Kafka: a consumer group of its own, which the role may use.
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{
		"FunctionName": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^PaymentsShadowFunction"))},
		"Topics":       []any{"payments"}, "StartingPosition": "AT_TIMESTAMP", "StartingPositionTimestamp": 1700000000, "Enabled": false,
		"AmazonManagedKafkaEventSourceConfig": map[string]any{"ConsumerGroupId": "payments-shadow"},
		"ProvisionedPollerConfig":             map[string]any{"MinimumPollers": 1},
	})
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{
		"FunctionName":     map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^PaymentsFunction"))},
		"StartingPosition": "AT_TIMESTAMP", "StartingPositionTimestamp": 1690000000,
		"AmazonManagedKafkaEventSourceConfig": map[string]any{"ConsumerGroupId": "payments"}})
	has(t, s, "AWS::IAM::Policy", map[string]any{
		"Roles": []any{map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^PaymentsShadowRole"))}},
		"PolicyDocument": like(map[string]any{"Statement": arrayWith(
			like(map[string]any{"Action": []any{"kafka-cluster:DescribeGroup", "kafka-cluster:AlterGroup"},
				"Resource": "arn:aws:kafka:eu-west-1:123456789012:group/shop/0123-abcd-1/payments-shadow"}))})})
	hasNot(t, s, "AWS::IAM::Policy", map[string]any{
		"Roles": []any{map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^PaymentsShadowRole"))}},
		"PolicyDocument": like(map[string]any{"Statement": arrayWith(
			like(map[string]any{"Resource": "arn:aws:kafka:eu-west-1:123456789012:group/shop/0123-abcd-1/payments"}))})})
}

// TestEveryMappingRunsLocally: every event source mapping the constructs
// synthesize is one `sluice run --template` reads and validates as AWS
// would, shadow replays and S3 destinations included. The one exception is
// a Kafka share group, which the runner refuses by design (it emulates
// consumer groups).
func TestEveryMappingRunsLocally(t *testing.T) {
	f := stacks(t)
	n := 0
	for name, tmpl := range f.tmpl {
		b, err := json.Marshal(tmpl.ToJSON())
		if err != nil {
			t.Fatal(err)
		}
		for id := range resources(t, name, "AWS::Lambda::EventSourceMapping") {
			n++
			tm, err := localtest.MappingFromTemplate(b, id)
			if err == nil {
				err = tm.Mapping.Validate()
			}
			share := name == "Kafka" && strings.HasPrefix(id, "SharesMapping")
			switch {
			case share && (err == nil || !strings.Contains(err.Error(), "share group")):
				t.Errorf("%s %s: %v, want the share-group refusal", name, id, err)
			case !share && err != nil:
				t.Errorf("%s %s: %v", name, id, err)
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d mappings read", n)
	}
}
