package htmlreport

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// tinyRun is a Kinesis run of one shard of four records: a batch of four
// fails whole and is split; its first half succeeds; the second half's
// first record fails until Lambda gives up on it; the last record succeeds.
// A trace entry carries a field this package does not know.
func tinyRun(hostileID string) Input {
	ids := []string{"4959000001", "4959000002", hostileID, "4959000004"}
	trace := []string{
		`{"n":1,"requestId":"r1","shard":"s0","ids":["4959000001","4959000002","` + jsonEsc(hostileID) + `","4959000004"],"result":"function_error","reported":[],"bisect":false,"retry":0,"error":"function error: Unhandled","ms":5}`,
		`{"n":2,"requestId":"r2","shard":"s0","ids":["4959000001","4959000002"],"result":"success","reported":[],"bisect":true,"retry":0,"ms":3,"environment":"env-7"}`,
		`{"n":3,"requestId":"r3","shard":"s0","ids":["` + jsonEsc(hostileID) + `","4959000004"],"result":"partial","reported":["` + jsonEsc(hostileID) + `"],"bisect":true,"retry":0,"ms":2}`,
		`{"n":4,"requestId":"r4","shard":"s0","ids":["` + jsonEsc(hostileID) + `","4959000004"],"result":"partial","reported":["` + jsonEsc(hostileID) + `"],"bisect":true,"retry":1,"ms":2}`,
		`{"n":5,"requestId":"r5","shard":"s0","ids":["4959000004"],"result":"success","reported":[],"bisect":false,"retry":0,"ms":1}`,
	}
	report := `{"mapping":{"EventSource":"kinesis"},"totals":{"records":4},
		"onFailureRecords":[{"requestContext":{"requestId":"r4","condition":"RetryAttemptsExhausted","approximateInvokeCount":2},
			"KinesisBatchInfo":{"shardId":"s0","startSequenceNumber":"` + jsonEsc(hostileID) + `","endSequenceNumber":"` + jsonEsc(hostileID) + `"}}],
		"checkpoints":{"s0":"4959000004"},
		"fates":{"4959000001":"processed","4959000002":"processed","` + jsonEsc(hostileID) + `":"on-failure","4959000004":"processed"},
		"unexpected":[{"id":"` + jsonEsc(hostileID) + `","fate":"on-failure","expected":"processed"}],
		"invariants":[{"name":"fate-as-expected","status":"violated","violations":["line 3 (id o3): expected processed, got on-failure"]}]}`
	in := Input{Title: "kinesis </title><script>alert(1)</script>", Source: "kinesis", Results: []string{"success", "partial", "function_error", "timeout"},
		Fates: []string{"processed", "quarantined", "dead-lettered", "on-failure", "filtered", "left"}, Report: json.RawMessage(report),
		LaneOrder: map[string][]string{"s0": ids}}
	for _, e := range trace {
		in.Trace = append(in.Trace, json.RawMessage(e))
	}
	for i, id := range ids {
		in.Records = append(in.Records, Record{ID: id, Key: "k", Line: i + 1, PayloadID: "o" + string(rune('1'+i)), Lane: "s0"})
	}
	return in
}

func jsonEsc(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// TestBuildDerivesWhatTheTraceImplies: the split, the retry, where the
// on-failure record lands, where the checkpoint moved (ending where the
// report says), the violation's record, the unknown trace field.
func TestBuildDerivesWhatTheTraceImplies(t *testing.T) {
	d, err := build(tinyRun("4959000003"))
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]int{{0, 0}}; !equalPairs(d.Marks.Split, want) {
		t.Errorf("splits %v, want %v", d.Marks.Split, want)
	}
	if d.Retries != 1 {
		t.Errorf("retries %d, want 1", d.Retries)
	}
	if len(d.Marks.OF) != 1 || d.Marks.OF[0].Slot != after(3) || !equalInts(d.Marks.OF[0].Recs, []int{2, 1}) {
		t.Errorf("on-failure marks %+v, want after invocation 4 (index 3), record 2", d.Marks.OF)
	}
	// After #2 the checkpoint is at record 2 (index 1); after #4, when
	// Lambda gave up on record 3, it passes it: record 4 was not
	// resolved yet. After #5, record 4.
	want := [][3]int{{after(1), 0, 1}, {after(3), 0, 2}, {after(4), 0, 3}}
	if len(d.Marks.CP) != len(want) {
		t.Fatalf("checkpoint marks %v, want %v", d.Marks.CP, want)
	}
	for i := range want {
		if d.Marks.CP[i] != want[i] {
			t.Errorf("checkpoint mark %d: %v, want %v", i, d.Marks.CP[i], want[i])
		}
	}
	if last := d.Marks.CP[len(d.Marks.CP)-1]; d.Checkpoints["s0"] != "4959000004" || last[2] != 3 {
		t.Errorf("the last checkpoint mark %v does not end where the report says (%s)", last, d.Checkpoints["s0"])
	}
	if v := d.Invariants[0].Violations[0]; !equalInts(v.Recs, []int{2}) {
		t.Errorf("violation %q links %v, want record index 2", v.Text, v.Recs)
	}
	if len(d.Invs.Extra) != 1 || d.Invs.ExtraI[0] != 1 || !strings.Contains(string(d.Invs.Extra[0]), `"environment":"env-7"`) {
		t.Errorf("unknown trace fields: %v at %v", d.Invs.Extra, d.Invs.ExtraI)
	}
	if !equalInts(d.Recs.Exp[0][:], []int{2, 0}) {
		t.Errorf("expected fates %v", d.Recs.Exp)
	}
}

func equalPairs(a, b [][2]int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPageIsSelfContained: the page fetches nothing (no URL in it but the
// policy's own words, a policy that allows no fetch) and a record id or
// title that holds markup cannot end its script or title.
func TestPageIsSelfContained(t *testing.T) {
	hostile := `</script><script>alert("x")</script><!--`
	var buf bytes.Buffer
	if err := Write(&buf, tinyRun(hostile)); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []string{"http://", "https://", "//cdn", " src=", "@import", "url(", "<link", "<iframe", "<img"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q: it must fetch nothing", bad)
		}
	}
	if !strings.Contains(page, `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'sha256-`) {
		t.Error("no Content-Security-Policy that forbids fetching")
	}
	if n := strings.Count(page, "<script"); n != 2 {
		t.Errorf("%d script elements, want 2 (the data and the page's own script): markup escaped its string", n)
	}
	if strings.Contains(page, "alert(") && !strings.Contains(page, `\u003c/script\u003e\u003cscript\u003ealert(`) {
		t.Error("the hostile id is in the page unescaped")
	}
	if !strings.Contains(page, "<title>kinesis &lt;/title&gt;&lt;script&gt;") {
		t.Error("the title is not escaped")
	}
	m := regexp.MustCompile(`(?s)<script id="run-data" type="application/json">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no data element")
	}
	var d data
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatalf("the data is not JSON: %v", err)
	}
	if len(d.Recs.IDPre) != 4 || d.Invs.N[4] != 5 {
		t.Fatalf("the data holds %d records and invocations %v", len(d.Recs.IDPre), d.Invs.N)
	}
	// The policy's hashes are those of the script and style in the page.
	for _, part := range []string{style, script} {
		if !strings.Contains(page, part) {
			t.Fatal("the page does not hold the embedded script and style verbatim")
		}
	}
}

// TestBuildRejectsBadInput: a report or trace line that is not JSON is an
// error naming it, not a page that lies.
func TestBuildRejectsBadInput(t *testing.T) {
	in := tinyRun("x")
	in.Trace[2] = json.RawMessage(`{"n":3,`)
	if err := Write(&bytes.Buffer{}, in); err == nil || !strings.Contains(err.Error(), "trace entry 3") {
		t.Fatalf("want an error naming trace entry 3, got %v", err)
	}
	in = tinyRun("x")
	in.Report = json.RawMessage(`[]`)
	if err := Write(&bytes.Buffer{}, in); err == nil || !strings.Contains(err.Error(), "report") {
		t.Fatalf("want an error naming the report, got %v", err)
	}
}
