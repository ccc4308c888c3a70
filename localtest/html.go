package localtest

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/localtest/internal/htmlreport"
)

// The HTML report (Options.HTML): one self-contained page of the run,
// written by localtest/internal/htmlreport from the report, the trace
// entries and the records (docs/localtest.md, "The HTML report").

// htmlOut collects what the page needs while the run goes on.
type htmlOut struct {
	f     *os.File
	trace []json.RawMessage
	done  bool
}

// startHTML creates Options.HTML before the run, so that a path that
// cannot be written is an error before anything runs, and keeps every
// trace entry. It returns nil when no page was asked for.
func (r *runner) startHTML() (*htmlOut, error) {
	if r.opts.HTML == "" {
		return nil, nil
	}
	f, err := os.Create(r.opts.HTML)
	if err != nil {
		return nil, fmt.Errorf("localtest: Options.HTML: %w", err)
	}
	h := &htmlOut{f: f}
	next := r.opts.Trace
	r.opts.Trace = func(e TraceEntry) {
		b, err := json.Marshal(e)
		if err == nil {
			h.trace = append(h.trace, b)
		}
		if next != nil {
			next(e)
		}
	}
	return h, nil
}

// htmlRecord is a record of the run as the page shows it.
func htmlRecord(ref inputRef, lane string) htmlreport.Record {
	f := ref.fate("") // its payload id, read now
	return htmlreport.Record{ID: ref.id, Key: ref.key, PayloadID: f.PayloadID, Line: ref.line, Input: ref.input, Lane: lane}
}

// abandon removes the page of a run that ended in an error: no page is
// better than one that looks like a run.
func (h *htmlOut) abandon() {
	if h == nil || h.done {
		return
	}
	h.f.Close()
	os.Remove(h.f.Name())
}

// write writes the page of the finished run.
func (h *htmlOut) write(r *runner) error {
	if h == nil {
		return nil
	}
	h.done = true
	rep, err := json.Marshal(r.report)
	if err != nil {
		h.f.Close()
		return fmt.Errorf("localtest: HTML report: %w", err)
	}
	title := "sluice run: " + string(r.s.source) + " mapping"
	if fn := r.opts.Mapping.FunctionName; fn != "" {
		title += ", function " + functionNameOf(fn)
	}
	in := htmlreport.Input{Title: title, Generated: time.Now(), Source: string(r.s.source),
		Results: []string{ResultSuccess, ResultPartial, ResultFunctionError, ResultTimeout},
		Fates:   Fates(), Held: r.report.Held(), Report: rep, Trace: h.trace, LaneOrder: r.shardOrder}
	laneOf := map[string]string{}
	for lane, ids := range r.shardOrder {
		for _, id := range ids {
			laneOf[id] = lane
		}
	}
	for _, ref := range r.records() {
		lane := ""
		switch r.s.source {
		case sevents.SourceSQSFIFO:
			lane = ref.key // the message group
		case sevents.SourceSQS:
		default:
			if lane = laneOf[ref.id]; lane == "" {
				lane = "(not read)" // a run that stopped before it read the record
			}
		}
		if ref.users == nil {
			in.Records = append(in.Records, htmlRecord(ref, lane))
			continue
		}
		// A KPL aggregate: the records of the run are its user records.
		for _, u := range ref.users {
			rec := htmlRecord(u, lane)
			rec.Of, rec.Sub = ref.id, u.sub
			in.Records = append(in.Records, rec)
		}
	}
	werr := htmlreport.Write(h.f, in)
	if cerr := h.f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("localtest: write the HTML report %s: %w", h.f.Name(), werr)
	}
	return nil
}
