package htmlreport

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// bigRun is a Kinesis run of records over 4 shards in batches of 10: one
// record in 1,000 is poison, so its batch fails, is split down to it, and
// retried until Lambda gives up on it; the rest succeed.
func bigRun(records int) Input {
	const shards, batchSize = 4, 10
	in := Input{Title: "kinesis mapping", Source: "kinesis", Results: []string{"success", "partial", "function_error", "timeout"},
		Fates: []string{"processed", "quarantined", "dead-lettered", "on-failure", "filtered", "left"}, LaneOrder: map[string][]string{}}
	fates := map[string]string{}
	var onFailure []json.RawMessage
	n := 0
	entry := func(shard string, ids []string, result string, bisect bool, retry int) {
		n++
		b, _ := json.Marshal(map[string]any{"n": n, "requestId": fmt.Sprintf("00000001-0000-4000-8000-%012x", n), "shard": shard, "ids": ids,
			"result": result, "reported": []string{}, "bisect": bisect, "retry": retry, "ms": 3})
		in.Trace = append(in.Trace, b)
	}
	for s := range shards {
		shard := fmt.Sprintf("shardId-%012d", s)
		var ids []string
		for i := s; i < records; i += shards {
			id := fmt.Sprintf("4959033827149025660855969%031d", uint64(s)<<40+uint64(i))
			ids = append(ids, id)
			in.Records = append(in.Records, Record{ID: id, Key: fmt.Sprintf("key-%d", i%64), PayloadID: fmt.Sprintf("o%d", i), Line: i + 1, Lane: shard})
			fates[id] = "processed"
		}
		in.LaneOrder[shard] = ids
		for a := 0; a < len(ids); a += batchSize {
			b := ids[a:min(a+batchSize, len(ids))]
			poison := -1
			for k, id := range b {
				if (a+k)%1000 == 999 {
					poison = k
					fates[id] = "on-failure"
				}
			}
			if poison < 0 {
				entry(shard, b, "success", false, 0)
				continue
			}
			// Split down to the poison record (each half in turn, the
			// first first), retry it twice, give up, run the halves left.
			entry(shard, b, "function_error", false, 0)
			lo, hi := 0, len(b)
			var pending [][2]int
			for hi-lo > 1 {
				m := lo + (hi-lo)/2
				if poison < m {
					entry(shard, b[lo:m], "function_error", true, 0)
					pending = append(pending, [2]int{m, hi})
					hi = m
				} else {
					entry(shard, b[lo:m], "success", true, 0)
					entry(shard, b[m:hi], "function_error", true, 0)
					lo = m
				}
			}
			entry(shard, b[lo:hi], "function_error", true, 1)
			entry(shard, b[lo:hi], "function_error", true, 2)
			of, _ := json.Marshal(map[string]any{"requestContext": map[string]any{"requestId": fmt.Sprintf("00000001-0000-4000-8000-%012x", n),
				"condition": "RetryAttemptsExhausted", "approximateInvokeCount": 3},
				"KinesisBatchInfo": map[string]any{"shardId": shard, "startSequenceNumber": b[poison], "endSequenceNumber": b[poison]}})
			onFailure = append(onFailure, of)
			for k := len(pending) - 1; k >= 0; k-- {
				entry(shard, b[pending[k][0]:pending[k][1]], "success", true, 0)
			}
		}
	}
	rep, _ := json.Marshal(map[string]any{"fates": fates, "onFailureRecords": onFailure,
		"invariants": []map[string]any{{"name": "fate-as-expected", "status": "violated", "violations": []string{"line 1000 (id o999): expected processed, got on-failure"}}}})
	in.Report = rep
	return in
}

// BenchmarkWrite100k writes the page of a run of 100,000 records and
// about 11,000 invocations; it reports the page's size.
func BenchmarkWrite100k(b *testing.B) {
	in := bigRun(100_000)
	var size countWriter
	if err := Write(&size, in); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := Write(io.Discard, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size)/1e6, "MB")
	b.ReportMetric(float64(len(in.Trace)), "invocations")
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}

// TestBigRunIsWhatItSays keeps the benchmark's run honest: its page
// derives a split for each failed batch and ends every shard's checkpoint
// at its last record.
func TestBigRunIsWhatItSays(t *testing.T) {
	in := bigRun(20_000)
	d, err := build(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Recs.IDPre) != 20_000 || len(d.OnFailure) != 20 || len(d.Marks.OF) != 20 {
		t.Fatalf("%d records, %d on-failure records, %d placed", len(d.Recs.IDPre), len(d.OnFailure), len(d.Marks.OF))
	}
	if splits := len(d.Marks.Split); splits < 20*3 {
		t.Fatalf("%d splits for 20 poison batches of 10", splits)
	}
	// The size docs/localtest.md states: about 34 bytes a record, its
	// share of the invocations included.
	var size countWriter
	if err := Write(&size, in); err != nil {
		t.Fatal(err)
	}
	if per := float64(size) / 20_000; per > 40 {
		t.Errorf("the page takes %.1f bytes a record; docs/localtest.md says about 34", per)
	}
	last := map[int]int{}
	for _, c := range d.Marks.CP {
		last[c[1]] = c[2]
	}
	for l, name := range d.Lanes {
		ids := in.LaneOrder[name]
		if got := d.Recs.IDSuf[last[l]]; !strings.HasSuffix(ids[len(ids)-1], got) {
			t.Errorf("%s: the checkpoint ends at record %d, want its last", name, last[l])
		}
	}
}
