package invoke

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testsupport/rie"
	"github.com/sluicehq/sluice/invocation"
)

// BenchmarkRuntimeAPIInvoke measures warm invocations of the compiled
// conformance handler through the Runtime API: the runner's hot path plus
// the function's own work (two HTTP exchanges over loopback per invocation).
func BenchmarkRuntimeAPIInvoke(b *testing.B) {
	bin := rie.BuildHandler(b, conformancePkg)
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			inv, err := RuntimeAPI(bin, []string{"SLUICE_SOURCE=sqs"})
			if err != nil {
				b.Fatal(err)
			}
			defer inv.Close()
			actions := make([]string, n)
			for i := range actions {
				actions[i] = "ok"
			}
			raw, _ := conformanceEvent(b, "sqs", actions...)
			ctx := context.Background()
			call := invocation.Invocation{Payload: raw, Timeout: 5 * time.Second}
			if resp, err := inv.Invoke(ctx, call); err != nil || resp.Failed() { // init
				b.Fatalf("%+v %v", resp, err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				resp, err := inv.Invoke(ctx, call)
				if err != nil || resp.Failed() {
					b.Fatalf("%+v %v", resp, err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "invocations/s")
		})
	}
}
