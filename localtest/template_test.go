package localtest_test

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/localtest"
)

// testdata/cdk/sluice.template.json is synthesized by infra's tests from
// Sluice's own constructs (infra: go test -run TestTemplateGolden -update).
func readTemplate(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/cdk/sluice.template.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMappingFromTemplateKinesis(t *testing.T) {
	data := readTemplate(t)
	for _, name := range []string{"sluice-orders", "OrdersFunction520DBA95", "OrdersMappingD4FD638A"} {
		t.Run(name, func(t *testing.T) {
			tm, err := localtest.MappingFromTemplate(data, name)
			if err != nil {
				t.Fatal(err)
			}
			m := tm.Mapping
			if err := m.Validate(); err != nil {
				t.Fatalf("the mapping does not validate: %v", err)
			}
			i := func(v int) *int { return &v }
			b := true
			want := &localtest.Mapping{EventSource: "kinesis", FunctionName: "sluice-orders", StartingPosition: "TRIM_HORIZON",
				BatchSize: i(4), MaximumBatchingWindowInSeconds: i(0), ParallelizationFactor: i(1), BisectBatchOnFunctionError: &b,
				MaximumRetryAttempts: i(5), MaximumRecordAgeInSeconds: i(21600), FunctionResponseTypes: []string{"ReportBatchItemFailures"},
				DestinationConfig: &localtest.DestinationConfig{OnFailure: &localtest.OnFailure{Destination: "file://OrdersOnFailure3C8D9E2D.onfailure.jsonl"}},
				Shards:            i(2)}
			if !strings.HasPrefix(m.DestinationConfig.OnFailure.Destination, "file://OrdersOnFailure") {
				t.Fatalf("on-failure destination %q", m.DestinationConfig.OnFailure.Destination)
			}
			want.DestinationConfig.OnFailure.Destination = m.DestinationConfig.OnFailure.Destination
			if !strings.HasPrefix(m.StreamName, "Stream") {
				t.Fatalf("stream name %q", m.StreamName)
			}
			want.StreamName = m.StreamName
			if !reflect.DeepEqual(m, want) {
				t.Errorf("mapping\n%+v\nwant\n%+v", *m, *want)
			}
			if tm.FunctionTimeout != 30*time.Second || tm.FunctionLogicalID != "OrdersFunction520DBA95" || tm.LogicalID != "OrdersMappingD4FD638A" {
				t.Errorf("timeout %v, function %s, mapping %s", tm.FunctionTimeout, tm.FunctionLogicalID, tm.LogicalID)
			}
			if want := map[string]string{"SLUICE_REPORT_BATCH_ITEM_FAILURES": "true", "SLUICE_MAX_ATTEMPTS": "3", "SLUICE_PARALLELIZATION_FACTOR": "1"}; !reflect.DeepEqual(tm.Environment, want) {
				t.Errorf("environment %v, want %v", tm.Environment, want)
			}
			for _, k := range []string{"SLUICE_DLQ_URL", "SLUICE_IDEMPOTENCY_TABLE", "SLUICE_ATTEMPTS_TABLE"} {
				if !strings.Contains(tm.Unresolved[k], "which CloudFormation names at deploy") {
					t.Errorf("Unresolved[%s] = %q", k, tm.Unresolved[k])
				}
			}
			if len(tm.Notes) != 1 || !strings.Contains(tm.Notes[0], "on-failure records") {
				t.Errorf("notes %q", tm.Notes)
			}
		})
	}
}

func TestMappingFromTemplateFIFO(t *testing.T) {
	tm, err := localtest.MappingFromTemplate(readTemplate(t), "LedgerFunction155C71ED")
	if err != nil {
		t.Fatal(err)
	}
	m := tm.Mapping
	if err := m.Validate(); err != nil {
		t.Fatalf("the mapping does not validate: %v", err)
	}
	if m.EventSource != "sqs-fifo" || *m.BatchSize != 10 || m.MaximumBatchingWindowInSeconds != nil || *m.VisibilityTimeout != 180 ||
		m.RedrivePolicy == nil || m.RedrivePolicy.MaxReceiveCount != 5 || !m.ReportsBatchItemFailures() || m.FunctionName != "LedgerFunction155C71ED" ||
		m.DestinationConfig != nil {
		t.Errorf("mapping %+v", *m)
	}
}

func TestMappingFromTemplateErrors(t *testing.T) {
	data := string(readTemplate(t))
	cases := []struct {
		name, template, mapping string
		want                    []string
	}{
		{"unknown name", data, "nope", []string{`no event source mapping is "nope"`, "OrdersMappingD4FD638A (function OrdersFunction520DBA95, named sluice-orders)",
			"LedgerMappingE6813A6C (function LedgerFunction155C71ED)"}},
		{"no mapping", `{"Resources":{}}`, "x", []string{"no AWS::Lambda::EventSourceMapping"}},
		{"token batch size", strings.Replace(data, `"BatchSize": 4,`, `"BatchSize": {"Ref": "Size"},`, 1), "sluice-orders",
			[]string{`resource OrdersMappingD4FD638A, BatchSize: Ref Size: the template has no parameter or resource Size`}},
		{"parameter without default", strings.Replace(strings.Replace(data, `"BatchSize": 4,`, `"BatchSize": {"Ref": "Size"},`, 1),
			`"Parameters": {`, `"Parameters": {"Size": {"Type": "Number"},`, 1), "sluice-orders",
			[]string{`BatchSize: the parameter Size has no Default: pass --parameter-overrides Size=VALUE`}},
		{"imported source", strings.Replace(data, `"EventSourceArn": {
     "Fn::GetAtt": [
      "Stream`, `"EventSourceArn": {"Fn::ImportValue": "orders-arn"}, "X": {
     "Fn::GetAtt": [
      "Stream`, 1), "sluice-orders", []string{"resource OrdersMappingD4FD638A, EventSourceArn: Fn::ImportValue \"orders-arn\": the value another stack exports is known only once both are deployed",
			"make it a parameter and pass --parameter-overrides NAME=VALUE"}},
		{"kafka share group", `{"Parameters": {"G": {"Type": "String", "Default": "g"}}, "Resources": {"M": {"Type": "AWS::Lambda::EventSourceMapping", "Properties": {"FunctionName": "f",
			"Topics": ["jobs"], "SelfManagedEventSource": {"Endpoints": {"KafkaBootstrapServers": ["b:9092"]}},
			"SelfManagedKafkaEventSourceConfig": {"ConsumerGroupId": {"Ref": "G"}, "ConsumptionMode": "Queue"}}}}}`, "M",
			[]string{"ConsumptionMode: Queue (a Kafka share group) is not emulated"}},
		{"unknown property", strings.Replace(data, `"BatchSize": 4,`, `"BatchSize": 4, "DocumentDBEventSourceConfig": {},`, 1), "sluice-orders",
			[]string{"DocumentDBEventSourceConfig: sluice run does not know this property"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := localtest.MappingFromTemplate([]byte(c.template), c.mapping)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

// A replay mapping starting at a time (a Kafka topic here, as the infra
// constructs' ShadowReplay writes it) is read with its timestamp, and a
// timestamp CloudFormation computes is refused.
func TestMappingFromTemplateAtTimestamp(t *testing.T) {
	const tmpl = `{"Resources": {"M": {"Type": "AWS::Lambda::EventSourceMapping", "Properties": {"FunctionName": "orders-shadow",
		"Topics": ["orders"], "EventSourceArn": "arn:aws:kafka:eu-west-1:123456789012:cluster/shop/0123-abcd-1",
		"StartingPosition": "AT_TIMESTAMP", "StartingPositionTimestamp": 1700000000, "Enabled": false,
		"ProvisionedPollerConfig": {"MinimumPollers": 1}}}}}`
	tm, err := localtest.MappingFromTemplate([]byte(tmpl), "orders-shadow")
	if err != nil {
		t.Fatal(err)
	}
	if ts := tm.Mapping.StartingPositionTimestamp; ts == nil || *ts != 1700000000 || tm.Mapping.StartingPosition != "AT_TIMESTAMP" {
		t.Fatalf("starting position %q at %v", tm.Mapping.StartingPosition, ts)
	}
	if err := tm.Mapping.Validate(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(tm.Notes, "\n"), "deployed disabled (Enabled false)") {
		t.Errorf("notes %q: a disabled mapping runs, and says so", tm.Notes)
	}
	withParam := `{"Parameters": {"From": {"Type": "Number"}}, ` + strings.TrimPrefix(strings.Replace(tmpl, "1700000000", `{"Ref": "From"}`, 1), "{")
	_, err = localtest.MappingFromTemplate([]byte(withParam), "M")
	if err == nil || !strings.Contains(err.Error(), "From") || !strings.Contains(err.Error(), "parameter-overrides") {
		t.Fatalf("error %v: a timestamp only a deploy knows is refused, naming the parameter", err)
	}
}
