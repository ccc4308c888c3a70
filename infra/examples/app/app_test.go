package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/localtest"
)

// TestSynth is make synth: the app synthesizes with no cdk-nag error, and
// its templates hold the dashboards, the mapping metrics, an S3 on-failure
// destination and the shadow replays, every mapping of them one that
// `sluice run --template` reads and AWS would accept.
func TestSynth(t *testing.T) {
	out := t.TempDir()
	t.Setenv("CDK_OUTDIR", out)
	t.Setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
	if err := run(); err != nil {
		t.Fatal(err)
	}
	type resource struct {
		Type       string
		Properties map[string]json.RawMessage
	}
	mappings, dashboards := 0, 0
	var shadows, s3 []string
	for _, name := range []string{"SluiceExample", "SluiceExampleKafka"} {
		data, err := os.ReadFile(filepath.Join(out, name+".template.json"))
		if err != nil {
			t.Fatal(err)
		}
		var tmpl struct{ Resources map[string]resource }
		if err := json.Unmarshal(data, &tmpl); err != nil {
			t.Fatal(err)
		}
		for id, r := range tmpl.Resources {
			switch r.Type {
			case "AWS::CloudWatch::Dashboard":
				dashboards++
			case "AWS::Lambda::EventSourceMapping":
				mappings++
				tm, err := localtest.MappingFromTemplate(data, id)
				if err == nil {
					err = tm.Mapping.Validate()
				}
				if err != nil {
					t.Errorf("%s %s: %v", name, id, err)
					continue
				}
				if tm.Environment["SLUICE_SHADOW"] == "1" {
					shadows = append(shadows, tm.Mapping.FunctionName)
				}
				if d := string(r.Properties["DestinationConfig"]); strings.Contains(d, "OnFailureBucket") {
					s3 = append(s3, tm.Mapping.FunctionName)
				}
				if string(r.Properties["MetricsConfig"]) == "" {
					t.Errorf("%s %s: no MetricsConfig", name, id)
				}
			}
		}
	}
	// Orders, Changes, Jobs, Ledger and the stack's; Payments and its
	// stack's.
	if dashboards != 5+2 || mappings != 7 {
		t.Errorf("%d dashboards and %d mappings, want 7 and 7", dashboards, mappings)
	}
	if strings.Join(s3, ",") != "sluice-example-orders" {
		t.Errorf("S3 on-failure destinations on %v, want the orders stream's", s3)
	}
	if len(shadows) != 2 {
		t.Errorf("shadow replays %v, want orders' and payments'", shadows)
	}
}
