package dlq_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/deadletter"
)

func sample(record string) *dlq.Envelope {
	p, o := int64(3), int64(42)
	return &dlq.Envelope{
		Version: dlq.Version, Source: events.SourceKafka, SourceARN: "arn:aws:kafka:us-east-1:1:cluster/c/x",
		Topic: "orders", Partition: &p, Offset: &o, RecordID: "orders-3@42", EventID: "orders-3-42",
		Attempts: 2, FirstFailure: time.Unix(100, 0).UTC(), LastFailure: time.Unix(200, 0).UTC(),
		Error: "boom", Class: "plain", Reason: dlq.ReasonAttempts, FunctionName: "f", RequestID: "r",
		Record: json.RawMessage(record),
	}
}

func TestMarshalLimitFits(t *testing.T) {
	e := sample(`{"topic":"orders","value":"eyJpZCI6MX0="}`)
	full, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.MarshalLimit(len(full))
	if err != nil || !bytes.Equal(got, full) {
		t.Fatalf("MarshalLimit at the exact size: %s, %v", got, err)
	}
}

func TestMarshalLimitTruncates(t *testing.T) {
	rec := `{"topic":"orders","value":"` + strings.Repeat(`é"\\x`, 5000) + `"}`
	rec = strings.ReplaceAll(rec, `"\\x`, `\"x`) // quotes escaped inside the value: they expand again as a JSON string
	e := sample(rec)
	for _, limit := range []int{1500, 4096, 20000} {
		b, err := e.MarshalLimit(limit)
		if err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		if len(b) > limit || len(b) < limit-8 {
			t.Fatalf("limit %d: %d bytes, want it filled to within a rune's escape", limit, len(b))
		}
		got, err := dlq.Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if got.Truncated == nil || got.Truncated.OriginalBytes != len(rec) || got.Truncated.Marker != dlq.TruncationMarker {
			t.Fatalf("limit %d: truncation %+v", limit, got.Truncated)
		}
		var prefix string
		if err := json.Unmarshal(got.Record, &prefix); err != nil || prefix == "" || !strings.HasPrefix(rec, prefix) {
			t.Fatalf("limit %d: record %.80s is not a prefix of the original as a JSON string: %v", limit, got.Record, err)
		}
		if got.RecordID != e.RecordID || *got.Offset != 42 || got.Topic != "orders" {
			t.Fatalf("limit %d: coordinates lost: %+v", limit, got)
		}
	}
	if e.Truncated != nil || string(e.Record) != rec {
		t.Fatal("MarshalLimit changed the envelope")
	}
	if _, err := e.MarshalLimit(100); err == nil || !strings.Contains(err.Error(), "orders-3@42") {
		t.Fatalf("a limit below the envelope's own size: %v", err)
	}
}

func TestRejected(t *testing.T) {
	boom := errors.New("boom")
	if got := deadletter.Rejected(nil, 2); got[0] != nil || got[1] != nil || len(got) != 2 {
		t.Fatalf("nil: %v", got)
	}
	if got := deadletter.Rejected(boom, 2); got[0] != boom || got[1] != boom {
		t.Fatalf("plain error: %v", got)
	}
	half := &dlq.SendError{Errs: []error{nil, boom}}
	if got := deadletter.Rejected(half, 2); got[0] != nil || got[1] != boom {
		t.Fatalf("half: %v", got)
	}
	if got := deadletter.Rejected(half, 3); got[0] == nil || got[2] == nil {
		t.Fatalf("a SendError of the wrong length must fail every envelope: %v", got)
	}
	if !errors.Is(half, boom) || !strings.Contains(half.Error(), "1 of 2") {
		t.Fatalf("SendError: %v", half)
	}
}

func TestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dlq.jsonl")
	f, err := dlq.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			envs := []*dlq.Envelope{sample(`{"w":` + string(rune('0'+w)) + `}`), sample(`{"big":"` + strings.Repeat("x", 100_000) + `"}`)}
			if err := f.Send(ctx, envs); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Send(ctx, []*dlq.Envelope{sample(`{}`)}); err == nil {
		t.Fatal("Send after Close succeeded")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 16 {
		t.Fatalf("%d lines, want 16", len(lines))
	}
	for _, l := range lines {
		if _, err := dlq.Unmarshal([]byte(l)); err != nil {
			t.Fatalf("line %.60s: %v", l, err)
		}
	}
	bad := sample(`{}`)
	bad.Record = json.RawMessage(`{not json`)
	f2, _ := dlq.OpenFile(path)
	defer f2.Close()
	errs := deadletter.Rejected(f2.Send(ctx, []*dlq.Envelope{sample(`{"ok":1}`), bad}), 2)
	if errs[0] != nil || errs[1] == nil {
		t.Fatalf("one envelope that cannot be encoded: %v", errs)
	}
}
