package localtest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/source"
)

// TestSkippedByCheckpoint: a Kinesis handler with idempotency on DynamoDB
// Local keeps a checkpoint per shard, so a record delivered again is a
// duplicate its shard's checkpoint answered, and the store holds no item
// of its own key. The skips name the lane and the record's position, and
// the runner checks them against the lane as the table held it before
// the run: a second run over the same records is every record skipped,
// each claim held. A handler told a ParallelizationFactor of 1 under a
// mapping of 2 lets one batch's checkpoint cover the records of the
// other batch of its shard: those are skipped as duplicates too, and the
// runner, finding the lane covers them only since the run began and no
// effect names them, says they were lost.
func TestSkippedByCheckpoint(t *testing.T) {
	srv := servers.DynamoDB(t)
	db := dynamodb.NewFromConfig(srv.AWSConfig())
	newTable := func(t *testing.T) (*dynamodbstore.Store, localtest.IdempotencyKeys) {
		table := servers.UniqueName(t, "ck")
		if err := dynamodbstore.CreateTable(context.Background(), db, table); err != nil {
			t.Fatal(err)
		}
		store, err := dynamodbstore.New(db, table)
		if err != nil {
			t.Fatal(err)
		}
		return store, source.IdempotencyTable(srv.AWSConfig(), table)
	}
	records := func(n int) []localtest.InputRecord {
		out := make([]localtest.InputRecord, n)
		for i := range out {
			out[i] = localtest.InputRecord{PartitionKey: fmt.Sprintf("k%d", i%8), Data: []byte(fmt.Sprintf(`{"id":"r%d","action":"ok"}`, i))}
		}
		return out
	}
	build := func(t *testing.T, store *dynamodbstore.Store, effects *effectLog, opts ...handlers.Option) localtest.BytesHandler {
		h, err := handlers.NewKinesis(func(_ context.Context, r handlers.KinesisRecord[command]) error {
			effects.add(localtest.Effect{Record: r.RecordID(), ID: r.Value.ID})
			return nil
		}, quietOpts(append(opts, handlers.WithIdempotency(store))...)...)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	t.Run("held before the run", func(t *testing.T) {
		store, reader := newTable(t)
		recs := records(30)
		var first effectLog
		skips := skipsFile(t)
		if _, err := localtest.Run(context.Background(), localtest.Options{Mapping: kinesisMapping(), Records: recs,
			Invoker: localtest.InProcess(build(t, store, &first))}); err != nil {
			t.Fatal(err)
		}
		var again effectLog
		rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: kinesisMapping(), Records: recs,
			Invoker: localtest.InProcess(build(t, store, &again)), Effects: again.read, Skips: skips, Idempotency: reader})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Held() || rep.Totals.Skipped != len(recs) || len(again.all) != 0 {
			t.Fatalf("held %v %+v, %d skipped of %d, %d effects", rep.Held(), rep.Invariants, rep.Totals.Skipped, len(recs), len(again.all))
		}
		for _, s := range rep.Skipped {
			if s.IdempotencyLane == "" || s.LanePosition == "" || !strings.Contains(s.Checked, "covered its position before the run") {
				t.Fatalf("skipped %+v: want its lane's checkpoint named and checked", s)
			}
		}
		// Without the lanes, the claims cannot be checked: not held.
		rep, err = localtest.Run(context.Background(), localtest.Options{Mapping: kinesisMapping(), Records: recs,
			Invoker: localtest.InProcess(build(t, store, &again)), Effects: again.read, Skips: skips, Idempotency: keysOnly{reader}})
		if err != nil {
			t.Fatal(err)
		}
		if loss := invariant(rep, localtest.InvariantNoLoss); loss.Status != localtest.StatusNotEvaluated || !strings.Contains(loss.Reason, "cannot read the lanes") {
			t.Fatalf("keys only: %+v", loss)
		}
	})

	t.Run("a checkpoint that covers another batch's records", func(t *testing.T) {
		store, reader := newTable(t)
		recs := records(200)
		var effects effectLog
		skips := skipsFile(t)
		m := kinesisMapping()
		pf, size := 2, 20
		m.ParallelizationFactor, m.BatchSize = &pf, &size
		rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: m, Records: recs,
			Invoker: localtest.InProcess(build(t, store, &effects, handlers.WithParallelizationFactor(1))),
			Effects: effects.read, Skips: skips, Idempotency: reader})
		if err != nil {
			t.Fatal(err)
		}
		loss := invariant(rep, localtest.InvariantNoLoss)
		if rep.Totals.Skipped == 0 || loss.Status != localtest.StatusViolated ||
			!strings.Contains(fmt.Sprint(loss.Violations), "moved past it without its function running") {
			t.Fatalf("%d skipped, %d effects: %+v", rep.Totals.Skipped, len(effects.all), loss)
		}
	})
}

// keysOnly is a store reader that reads completed keys, not lanes.
type keysOnly struct{ localtest.IdempotencyKeys }
