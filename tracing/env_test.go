package tracing_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/tracing"
)

// FromEnv: off without an endpoint, on with one, and a protocol other than
// http/protobuf is refused with what to set.
func TestFromEnv(t *testing.T) {
	lookup := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	off, err := tracing.FromEnvWith(context.Background(), lookup(nil))
	if err != nil || off.Enabled() || off.Options() != nil || off.Provider() != nil {
		t.Fatalf("no endpoint: %+v %v", off, err)
	}
	for _, k := range []string{tracing.EnvEndpoint, tracing.EnvTracesEndpoint} {
		on, err := tracing.FromEnvWith(context.Background(), lookup(map[string]string{k: "http://127.0.0.1:4318", tracing.EnvProtocol: "http/protobuf"}))
		if err != nil || !on.Enabled() || len(on.Options()) != 1 {
			t.Fatalf("%s: %+v %v", k, on, err)
		}
		if err := on.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{tracing.EnvProtocol, tracing.EnvTracesProtocol} {
		_, err := tracing.FromEnvWith(context.Background(), lookup(map[string]string{tracing.EnvEndpoint: "http://127.0.0.1:4317", k: "grpc"}))
		if err == nil || !strings.Contains(err.Error(), k+"=http/protobuf") {
			t.Errorf("%s=grpc: %v", k, err)
		}
	}
}
