package sam

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTranslateEvent: each event type becomes the mapping pull.py's
// to_cloudformation writes: the source renamed to EventSourceArn, the
// Kafka servers and consumer group moved where Lambda takes them, the
// destination's Type removed.
func TestTranslateEvent(t *testing.T) {
	cases := []struct {
		name, event, want string
	}{
		{"kinesis", `{"Type":"Kinesis","Properties":{"Stream":{"Fn::GetAtt":["S","Arn"]},"StartingPosition":"LATEST","BatchSize":10,
			"BisectBatchOnFunctionError":true,"MaximumRetryAttempts":3,"ParallelizationFactor":2,"TumblingWindowInSeconds":30,
			"StartingPositionTimestamp":1700000000,"Enabled":false,"KmsKeyArn":"k","MetricsConfig":{"Metrics":["EventCount"]},
			"DestinationConfig":{"OnFailure":{"Type":"SQS","Destination":{"Fn::GetAtt":["Q","Arn"]}}}}}`,
			`{"BatchSize":10,"BisectBatchOnFunctionError":true,"DestinationConfig":{"OnFailure":{"Destination":{"Fn::GetAtt":["Q","Arn"]}}},` +
				`"Enabled":false,"EventSourceArn":{"Fn::GetAtt":["S","Arn"]},"FunctionName":{"Ref":"F"},"KmsKeyArn":"k",` +
				`"MaximumRetryAttempts":3,"MetricsConfig":{"Metrics":["EventCount"]},"ParallelizationFactor":2,"StartingPosition":"LATEST",` +
				`"StartingPositionTimestamp":1700000000,"TumblingWindowInSeconds":30}`},
		{"dynamodb", `{"Type":"DynamoDB","Properties":{"Stream":"arn:aws:dynamodb:us-east-1:1:table/t/stream/x","StartingPosition":"TRIM_HORIZON",
			"FunctionResponseTypes":["ReportBatchItemFailures"],"FilterCriteria":{"Filters":[{"Pattern":"{}"}]}}}`,
			`{"EventSourceArn":"arn:aws:dynamodb:us-east-1:1:table/t/stream/x","FilterCriteria":{"Filters":[{"Pattern":"{}"}]},` +
				`"FunctionName":{"Ref":"F"},"FunctionResponseTypes":["ReportBatchItemFailures"],"StartingPosition":"TRIM_HORIZON"}`},
		{"sqs", `{"Type":"SQS","Properties":{"Queue":{"Ref":"QArn"},"BatchSize":5,"MaximumBatchingWindowInSeconds":1,"ScalingConfig":{"MaximumConcurrency":2}}}`,
			`{"BatchSize":5,"EventSourceArn":{"Ref":"QArn"},"FunctionName":{"Ref":"F"},"MaximumBatchingWindowInSeconds":1,"ScalingConfig":{"MaximumConcurrency":2}}`},
		{"msk", `{"Type":"MSK","Properties":{"Stream":"arn:aws:kafka:c","StartingPosition":"LATEST","Topics":["t"],"ConsumerGroupId":"g",
			"ProvisionedPollerConfig":{"MinimumPollers":1},"SchemaRegistryConfig":{"SchemaRegistryURI":"u","EventRecordFormat":"JSON","SchemaValidationConfigs":[]}}}`,
			`{"AmazonManagedKafkaEventSourceConfig":{"ConsumerGroupId":"g","SchemaRegistryConfig":{"EventRecordFormat":"JSON","SchemaRegistryURI":"u","SchemaValidationConfigs":[]}},` +
				`"EventSourceArn":"arn:aws:kafka:c","FunctionName":{"Ref":"F"},"ProvisionedPollerConfig":{"MinimumPollers":1},"StartingPosition":"LATEST","Topics":["t"]}`},
		{"self-managed kafka", `{"Type":"SelfManagedKafka","Properties":{"KafkaBootstrapServers":["b:9092"],"Topics":["t"],"ConsumerGroupId":"g",
			"SourceAccessConfigurations":[{"Type":"BASIC_AUTH","URI":"s"}]}}`,
			`{"FunctionName":{"Ref":"F"},"SelfManagedEventSource":{"Endpoints":{"KafkaBootstrapServers":["b:9092"]}},` +
				`"SelfManagedKafkaEventSourceConfig":{"ConsumerGroupId":"g"},"SourceAccessConfigurations":[{"Type":"BASIC_AUTH","URI":"s"}],"Topics":["t"]}`},
		{"destination without Type", `{"Type":"Kinesis","Properties":{"Stream":"s","StartingPosition":"LATEST","DestinationConfig":{"OnFailure":{"Destination":"d"}}}}`,
			`{"DestinationConfig":{"OnFailure":{"Destination":"d"}},"EventSourceArn":"s","FunctionName":{"Ref":"F"},"StartingPosition":"LATEST"}`},
		{"empty destination and null", `{"Type":"SQS","Properties":{"Queue":"q","DestinationConfig":{},"BatchSize":null}}`,
			`{"EventSourceArn":"q","FunctionName":{"Ref":"F"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ev map[string]any
			doc, err := parse([]byte(c.event))
			if err != nil {
				t.Fatal(err)
			}
			ev = doc.root
			got, probs := translateEvent("F", "E", ev)
			if len(probs) > 0 {
				t.Fatalf("problems %v", probs)
			}
			if g := jsonOf(t, got); g != c.want {
				t.Errorf("got  %s\nwant %s", g, c.want)
			}
		})
	}
}

func TestTranslateEventRefusals(t *testing.T) {
	cases := []struct{ event, prop, want string }{
		{`{"Type":"SQS","Properties":{"Queue":"q","Stream":"s"}}`, "Stream", "property Stream not defined for resource of type SQS"},
		{`{"Type":"Kinesis","Properties":{"Stream":"s"}}`, "StartingPosition", "missing required property 'StartingPosition'"},
		{`{"Type":"SQS","Properties":{"Queue":"q","BatchSize":"5"}}`, "BatchSize", `BatchSize must be an integer, not "5"`},
		{`{"Type":"SQS","Properties":{"Queue":"q","BatchSize":{"Ref":"P"}}}`, "", ""},
		{`{"Type":"Kinesis","Properties":{"Stream":"s","StartingPosition":"LATEST","DestinationConfig":{"OnFailure":{"Type":{"Ref":"T"}}}}}`,
			"DestinationConfig.OnFailure.Type", "The only valid values for 'Type'"},
		{`{"Type":"SelfManagedKafka","Properties":{"KafkaBootstrapServers":["b"],"Topics":["t"],"SourceAccessConfigurations":[{"Type":"VPC_SUBNET","URI":"s"}]}}`,
			"SourceAccessConfigurations", "VPC_SUBNET and VPC_SECURITY_GROUP in SourceAccessConfigurations for SelfManagedKafka must be both provided"},
		{`{"Type":"SelfManagedKafka","Properties":{"KafkaBootstrapServers":["b"],"Topics":["t"],"SourceAccessConfigurations":[{"Type":"BASIC_AUTH","URI":"s"}],"SecretsManagerKmsKeyId":{"Ref":"K"}}}`,
			"SecretsManagerKmsKeyId", "should be a string"},
		{`{"Type":"MSK","Properties":{"Stream":"s","StartingPosition":"LATEST","SchemaRegistryConfig":{"SchemaRegistryURI":"u","EventRecordFormat":"AVRO","SchemaValidationConfigs":[]}}}`,
			"SchemaRegistryConfig", "EventRecordFormat in SchemaRegistryConfig must be either 'JSON' or 'SOURCE'"},
	}
	for _, c := range cases {
		doc, err := parse([]byte(c.event))
		if err != nil {
			t.Fatal(err)
		}
		_, probs := translateEvent("F", "E", doc.root)
		if c.want == "" {
			if len(probs) > 0 {
				t.Errorf("%s: problems %v; an intrinsic passes SAM's checks", c.event, probs)
			}
			continue
		}
		found := false
		for _, p := range probs {
			found = found || (p.prop == c.prop && strings.Contains(p.msg, c.want))
		}
		if !found {
			t.Errorf("%s: problems %v, want %s: %s", c.event, probs, c.prop, c.want)
		}
	}
}

// TestMergeGlobal is GlobalProperties' table: scalars and intrinsics take
// the local value, mappings merge, lists concatenate global first.
func TestMergeGlobal(t *testing.T) {
	cases := []struct{ global, local, want string }{
		{`{"Timeout":3}`, `{"Timeout":30}`, `{"Timeout":30}`},
		{`{"Timeout":3}`, `{}`, `{"Timeout":3}`},
		{`{"Environment":{"Variables":{"A":"g","B":"g"}}}`, `{"Environment":{"Variables":{"B":"l","C":"l"}}}`,
			`{"Environment":{"Variables":{"A":"g","B":"l","C":"l"}}}`},
		{`{"Architectures":["x86_64"]}`, `{"Architectures":["arm64"]}`, `{"Architectures":["x86_64","arm64"]}`},
		{`{"Environment":{"Variables":{"A":"g"}}}`, `{"Environment":{"Fn::If":["C",{"Variables":{}},{"Ref":"AWS::NoValue"}]}}`,
			`{"Environment":{"Fn::If":["C",{"Variables":{}},{"Ref":"AWS::NoValue"}]}}`},
		{`{"Layers":["a"]}`, `{"Layers":{"Ref":"L"}}`, `{"Layers":{"Ref":"L"}}`},
	}
	for _, c := range cases {
		var g, l any
		json.Unmarshal([]byte(c.global), &g)
		json.Unmarshal([]byte(c.local), &l)
		if got := jsonOf(t, mergeGlobal(g, l)); got != c.want {
			t.Errorf("merge %s into %s: %s, want %s", c.global, c.local, got, c.want)
		}
	}
}

// TestParseOverrides takes the forms sam's CfnParameterOverridesType does.
func TestParseOverrides(t *testing.T) {
	cases := []struct {
		in   []string
		want map[string]string
	}{
		{[]string{"A=1 B=two"}, map[string]string{"A": "1", "B": "two"}},
		{[]string{"ParameterKey=A,ParameterValue=1 ParameterKey=B,ParameterValue=x y"}, map[string]string{"A": "1", "B": "x"}},
		{[]string{`A="with space" B='single' C=esc\ aped`}, map[string]string{"A": "with space", "B": "single", "C": "esc aped"}},
		{[]string{"A=1", "A=2"}, map[string]string{"A": "2"}},
		{[]string{"AWS::Region=eu-west-1"}, map[string]string{"AWS::Region": "eu-west-1"}},
		{[]string{"A=a,b,c"}, map[string]string{"A": "a,b,c"}},
	}
	for _, c := range cases {
		got, err := ParseOverrides(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %v %v, want %v", c.in, got, err, c.want)
		}
	}
	if _, err := ParseOverrides([]string{"no-equals-sign"}); err == nil || !strings.Contains(err.Error(), "is not a valid format") {
		t.Errorf("error %v", err)
	}
	dir := t.TempDir()
	path := dir + "/params.yaml"
	if err := writeFile(path, "Stage: prod\nSize: 10\nSubnets: [a, b]\nEmpty:\n"); err != nil {
		t.Fatal(err)
	}
	got, err := ParseOverrides([]string{"file://" + path})
	if want := map[string]string{"Stage": "prod", "Size": "10", "Subnets": "a,b", "Empty": ""}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("file: %v %v, want %v", got, err, want)
	}
}

// TestParseShortForms: each short tag reads as its long form.
func TestParseShortForms(t *testing.T) {
	doc, err := parse([]byte(`
a: !Ref P
b: !GetAtt Q.Arn
c: !GetAtt [Q, Arn]
d: !GetAtt Bucket.Outputs.Name
e: !Sub "x-${P}"
f: !Sub ["${X}", {X: !Ref P}]
g: !Join [",", [a, b]]
h: !If [C, 1, 2]
i: !Select [0, !Split [",", "a,b"]]
j: !ImportValue exported
k: !Equals [!Ref P, x]
l: !Not [!Condition C]
m: !FindInMap [M, k1, k2]
n: !Base64 text
o: !GetAZs ""
anchor: &A {x: 1}
alias: *A
`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":{"Ref":"P"},"alias":{"x":1},"anchor":{"x":1},"b":{"Fn::GetAtt":["Q","Arn"]},"c":{"Fn::GetAtt":["Q","Arn"]},` +
		`"d":{"Fn::GetAtt":["Bucket","Outputs.Name"]},"e":{"Fn::Sub":"x-${P}"},"f":{"Fn::Sub":["${X}",{"X":{"Ref":"P"}}]},` +
		`"g":{"Fn::Join":[",",["a","b"]]},"h":{"Fn::If":["C",1,2]},"i":{"Fn::Select":[0,{"Fn::Split":[",","a,b"]}]},` +
		`"j":{"Fn::ImportValue":"exported"},"k":{"Fn::Equals":[{"Ref":"P"},"x"]},"l":{"Fn::Not":[{"Condition":"C"}]},` +
		`"m":{"Fn::FindInMap":["M","k1","k2"]},"n":{"Fn::Base64":"text"},"o":{"Fn::GetAZs":""}}`
	if got := jsonOf(t, doc.root); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, bad := range []string{"a: !Reff X", "a: 1\na: 2", "- a", "a: !GetAtt NoDot", "<<: {a: 1}"} {
		if _, err := parse([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestResolve evaluates the intrinsics against parameters, pseudo
// parameters and conditions; references to resources stay.
func TestResolve(t *testing.T) {
	doc, err := parse([]byte(`
Parameters:
  Env: {Type: String, Default: dev}
  Subnets: {Type: CommaDelimitedList, Default: "a,b,c"}
Conditions:
  Dev: !Equals [!Ref Env, dev]
  Both: !And [!Condition Dev, !Not [!Equals [!Ref Env, prod]]]
  Either: !Or [!Equals [x, y], !Condition Dev]
Mappings:
  M: {dev: {Size: 3}}
Resources:
  Q: {Type: AWS::SQS::Queue}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := newResolver(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ in, want string }{
		{`{"Ref":"Env"}`, `"dev"`},
		{`{"Ref":"Subnets"}`, `["a","b","c"]`},
		{`{"Fn::Select":[1,{"Ref":"Subnets"}]}`, `"b"`},
		{`{"Fn::Join":["-",{"Ref":"Subnets"}]}`, `"a-b-c"`},
		{`{"Ref":"Q"}`, `{"Ref":"Q"}`},
		{`{"Fn::Sub":"${Q.Arn}"}`, `{"Fn::GetAtt":["Q","Arn"]}`},
		{`{"Fn::Sub":"${AWS::Region}/${Q}"}`, `{"Fn::Sub":"us-east-1/${Q}"}`},
		{`{"Fn::Sub":["${A}-${B}",{"A":"x","B":{"Ref":"Env"}}]}`, `"x-dev"`},
		{`{"Fn::Join":[":",["a",{"Ref":"Q"}]]}`, `{"Fn::Join":[":",["a",{"Ref":"Q"}]]}`},
		{`{"Fn::If":["Both","yes","no"]}`, `"yes"`},
		{`{"Fn::If":["Either","yes","no"]}`, `"yes"`},
		{`{"Fn::FindInMap":["M",{"Ref":"Env"},"Size"]}`, `3`},
		{`{"Fn::Base64":"hi"}`, `"aGk="`},
		{`{"a":{"Fn::If":["Dev",{"Ref":"AWS::NoValue"},1]},"b":[1,{"Ref":"AWS::NoValue"}]}`, `{"b":[1]}`},
	}
	for _, c := range cases {
		var v any
		json.Unmarshal([]byte(c.in), &v)
		got, err := r.resolve(v, at{resource: "R", prop: "P"})
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if g := jsonOf(t, got); g != c.want {
			t.Errorf("%s: %s, want %s", c.in, g, c.want)
		}
	}
	for in, want := range map[string]string{
		`{"Fn::ImportValue":"x"}`:               "Fn::ImportValue",
		`{"Fn::GetAZs":""}`:                     "Fn::GetAZs is not an intrinsic function sluice evaluates",
		`{"Ref":"Nope"}`:                        "the template has no parameter or resource Nope",
		`{"Fn::If":["Nope",1,2]}`:               "the template has no condition Nope",
		`{"Fn::Select":[5,["a"]]}`:              "Fn::Select index 5 is outside the list of 1",
		`{"Fn::Equals":[{"Ref":"Q"},"x"]}`:      "a condition may use parameters, not resources",
		`{"Fn::Sub":"${Nope.Arn}"}`:             "the template has no resource Nope",
		`{"Fn::FindInMap":["M","prod","Size"]}`: "Mappings has no such entry",
	} {
		var v any
		json.Unmarshal([]byte(in), &v)
		if _, err := r.resolve(v, at{resource: "R", prop: "P"}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

// FuzzParse: no template text panics the reader or the selection of a
// mapping; what parses turns into JSON.
func FuzzParse(f *testing.F) {
	f.Add([]byte("Transform: AWS::Serverless-2016-10-31\nResources:\n  F:\n    Type: AWS::Serverless::Function\n    Properties:\n      Events:\n        E:\n          Type: SQS\n          Properties: {Queue: !GetAtt Q.Arn}\n  Q: {Type: AWS::SQS::Queue}\n"))
	f.Add([]byte(`{"Resources":{"M":{"Type":"AWS::Lambda::EventSourceMapping","Properties":{"FunctionName":"f"}}}}`))
	f.Add([]byte("a: .nan\nb: -.inf\nc: 2001-12-14t21:59:43.10-05:00\n"))
	f.Add([]byte("a: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: &c [*b, *b, *b]\n"))
	f.Add([]byte("a: !Sub [\"${X}\", {X: !If [C, !Ref A, !Ref AWS::NoValue]}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := parse(data)
		if err != nil {
			return
		}
		if _, err := json.Marshal(doc.root); err != nil {
			t.Fatalf("parsed to something JSON cannot hold: %v", err)
		}
		ReadMapping(data, "F", Options{})
		ReadFunction(data, "F", Options{})
	})
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }
