package localtest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
)

// BenchmarkRunInProcess is the runner's own cost: 10,000 records through an
// emulated mapping to an in-process handler that does nothing.
func BenchmarkRunInProcess(b *testing.B) {
	for _, src := range []events.Source{events.SourceKinesis, events.SourceSQS, events.SourceKafka} {
		b.Run(string(src), func(b *testing.B) {
			const n = 10000
			recs := make([]InputRecord, n)
			for i := range recs {
				p := i % 4
				data := json.RawMessage(fmt.Sprintf(`{"id":"r%d","action":"ok"}`, i))
				switch src { // each source's own fields: the runner refuses a record with another's
				case events.SourceKinesis:
					recs[i] = InputRecord{PartitionKey: fmt.Sprint("pk", i%16), Data: data}
				case events.SourceSQS:
					recs[i] = InputRecord{Body: data}
				default:
					recs[i] = InputRecord{Value: data, Partition: &p}
				}
			}
			m := &Mapping{EventSource: src, BatchSize: ptr(100), MaximumBatchingWindowInSeconds: ptr(1)}
			switch src {
			case events.SourceKinesis:
				m.StartingPosition = "TRIM_HORIZON"
			case events.SourceKafka:
				m.StartingPosition, m.Partitions, m.MaximumBatchingWindowInSeconds = "TRIM_HORIZON", ptr(4), nil
			}
			noop := InProcess(fn(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
			b.ReportAllocs()
			for b.Loop() {
				rep, err := Run(context.Background(), Options{Mapping: m, Records: recs, Invoker: noop})
				if err != nil || rep.Totals.Processed != n {
					b.Fatalf("%v %+v", err, rep)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// kplBenchRecords is n Kinesis records, one in ten a KPL aggregate of ten
// user records, each with an id in its data.
func kplBenchRecords(n int) (recs []InputRecord, users int) {
	recs = make([]InputRecord, n)
	for i := range recs {
		if i%10 != 0 {
			recs[i] = InputRecord{PartitionKey: fmt.Sprint("pk", i%16), Data: json.RawMessage(fmt.Sprintf(`{"id":"r%d","action":"ok"}`, i))}
			users++
			continue
		}
		agg := make([]UserRecord, 10)
		for k := range agg {
			agg[k] = UserRecord{PartitionKey: fmt.Sprint("pk", (i+k)%16), Data: json.RawMessage(fmt.Sprintf(`{"id":"r%d-%d","action":"ok"}`, i, k))}
		}
		recs[i] = InputRecord{Aggregate: agg}
		users += len(agg)
	}
	return recs, users
}

// BenchmarkRunKPL is the runner's own cost on 100,000 Kinesis records, one
// in ten a KPL aggregate of ten user records (190,000 records of the run),
// to an in-process handler that does nothing. kinesis-records/s counts
// the Kinesis records the mapping delivered.
func BenchmarkRunKPL(b *testing.B) {
	const n = 100000
	recs, _ := kplBenchRecords(n)
	m := &Mapping{EventSource: events.SourceKinesis, StartingPosition: "TRIM_HORIZON", BatchSize: ptr(100)}
	noop := InProcess(fn(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
	b.ReportAllocs()
	for b.Loop() {
		rep, err := Run(context.Background(), Options{Mapping: m, Records: recs, Invoker: noop})
		if err != nil || rep.Totals.Invocations == 0 {
			b.Fatalf("%v %+v", err, rep)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "kinesis-records/s")
}

// BenchmarkRunKPLEffects is BenchmarkRunKPL with the checks at work: the
// handler is given, and the run checks, one effect per record of the run
// (each user record's named <sequenceNumber>:<subSequenceNumber>), with
// effect-once. records/s counts the records of the run (190,000).
func BenchmarkRunKPLEffects(b *testing.B) {
	const n = 100000
	recs, users := kplBenchRecords(n)
	m := &Mapping{EventSource: events.SourceKinesis, StartingPosition: "TRIM_HORIZON", BatchSize: ptr(100)}
	var effects []Effect
	h := InProcess(fn(func(_ context.Context, p []byte) ([]byte, error) {
		var ev struct {
			Records []struct {
				Kinesis struct {
					SequenceNumber string `json:"sequenceNumber"`
					Data           []byte `json:"data"`
				} `json:"kinesis"`
			} `json:"Records"`
		}
		if err := json.Unmarshal(p, &ev); err != nil {
			return nil, err
		}
		for _, r := range ev.Records {
			if users, ok, _ := kpl.Deaggregate(r.Kinesis.Data); ok {
				for j := range users {
					effects = append(effects, Effect{Record: kpl.SubSequenceKey(r.Kinesis.SequenceNumber, j)})
				}
				continue
			}
			effects = append(effects, Effect{Record: r.Kinesis.SequenceNumber})
		}
		return nil, nil
	}))
	b.ReportAllocs()
	for b.Loop() {
		effects = effects[:0]
		rep, err := Run(context.Background(), Options{Mapping: m, Records: recs, Invoker: h, ExactlyOnce: true,
			Effects: func() ([]Effect, error) { return effects, nil }})
		if err != nil || rep.Totals.Records != users || statusOf(rep, InvariantNoLoss) != StatusHeld || statusOf(rep, InvariantOnce) != StatusHeld {
			b.Fatalf("%v %+v %+v", err, rep.Totals, rep.Invariants)
		}
	}
	b.ReportMetric(float64(users*b.N)/b.Elapsed().Seconds(), "records/s")
}

func statusOf(rep *Report, name string) string {
	for _, inv := range rep.Invariants {
		if inv.Name == name {
			return inv.Status
		}
	}
	return ""
}
