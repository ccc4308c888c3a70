package localtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/dlq"
)

// Fates: what became of a record. A run passes only when every record ended
// as expected: processed, unless its InputRecord.Expect or Options.Allow
// says otherwise (docs/localtest.md, "Fates and expectations").

// InvariantFates is the check that every record ended as expected.
const InvariantFates = "fate-as-expected"

// Fates lists every fate, in the order the summary counts them.
func Fates() []string {
	return []string{FateProcessed, FateQuarantined, FateDeadLettered, FateOnFailure, FateFiltered, FateLeft}
}

// fateWords says in words what a fate means, for people.
func fateWords(fate string) string {
	switch fate {
	case FateProcessed:
		return "processed"
	case FateQuarantined:
		return "quarantined (the function parked it in its own dead letters)"
	case FateDeadLettered:
		return "dead-lettered (the queue's redrive policy moved it to its dead-letter queue)"
	case FateOnFailure:
		return "on-failure (Lambda gave up on it and sent it to the mapping's on-failure destination)"
	case FateFiltered:
		return "filtered (it matched none of the mapping's FilterCriteria)"
	case FateLeft:
		return "left (still in the source when the run ended)"
	}
	return fate
}

// ParseFates reads a comma-separated list of fate names (--allow), as
// Fates names them.
func ParseFates(list string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if err := checkFateName(f); err != nil {
			return nil, err
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// checkFateName refuses a name that is not a fate.
func checkFateName(f string) error {
	if slices.Contains(Fates(), f) {
		return nil
	}
	return fmt.Errorf("%q is not a fate: want one of %s", f, strings.Join(Fates(), ", "))
}

// checkExpectations refuses, before the run, an Options.Allow or an
// InputRecord.Expect that names no fate.
func checkExpectations(opts Options) error {
	for _, f := range opts.Allow {
		if err := checkFateName(f); err != nil {
			return fmt.Errorf("localtest: Options.Allow: %w", err)
		}
	}
	for i, rec := range opts.Records {
		if rec.Expect == "" {
			continue
		}
		if err := checkFateName(rec.Expect); err != nil {
			return fmt.Errorf("localtest: %s: expect: %w", where(i, rec), err)
		}
	}
	return nil
}

// allowedFates is what a record may end as: its expectation (processed by
// default, where a record the mapping's filters drop is expected by
// construction) and every fate the run allows.
func allowedFates(expect string, allow []string) []string {
	out := []string{expect}
	if expect == "" {
		out = []string{FateProcessed, FateFiltered}
	}
	for _, f := range allow {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// fatesInput is what the fate check reads.
type fatesInput struct {
	records []inputRef        // every record of the run, in source order
	expect  []string          // per record, its InputRecord.Expect ("" for the default)
	fates   map[string]string // record id -> fate
	allow   []string          // Options.Allow
	// unknown, if set, is why a processed record may have been
	// quarantined instead (the function's dead letters could not be
	// read): where that makes the difference, the check is not evaluated.
	unknown string
}

// checkFates checks that every record ended as expected, and lists those
// that did not, in source order. A record without a fate is the
// no-record-lost check's to report.
func checkFates(in fatesInput) (InvariantResult, []RecordFate) {
	res := InvariantResult{Name: InvariantFates, Status: StatusHeld}
	var unexpected []RecordFate
	unsure := false
	for i, rec := range in.records {
		got, ok := in.fates[rec.id]
		if !ok {
			continue
		}
		expect := ""
		if i < len(in.expect) {
			expect = in.expect[i]
		}
		allowed := allowedFates(expect, in.allow)
		if slices.Contains(allowed, got) && (got != FateProcessed || in.unknown == "" || slices.Contains(allowed, FateQuarantined)) {
			continue
		}
		if got == FateProcessed && in.unknown != "" && slices.Contains(allowed, FateQuarantined) != slices.Contains(allowed, FateProcessed) {
			unsure = true // processed, or quarantined: one is expected, the other not
			continue
		}
		unexpected = append(unexpected, RecordFate{ID: rec.id, Line: rec.line, Input: rec.input, PayloadID: rec.payloadID,
			Key: rec.key, Fate: got, Expected: or(expect, FateProcessed)})
		res.violate("%s: expected %s, got %s", rec.name(), expectedWords(expect, allowed), fateWords(got))
	}
	if unsure {
		res = res.notEvaluated(in.unknown)
	}
	return res, unexpected
}

// expectedWords says what a record was allowed to end as.
func expectedWords(expect string, allowed []string) string {
	if expect == "" { // filtered is allowed by construction, not expected
		allowed = slices.DeleteFunc(slices.Clone(allowed), func(f string) bool { return f == FateFiltered })
	}
	switch len(allowed) {
	case 1:
		return allowed[0]
	case 2:
		return allowed[0] + " or " + allowed[1]
	}
	return strings.Join(allowed[:len(allowed)-1], ", ") + " or " + allowed[len(allowed)-1]
}

// markQuarantined turns the fate of every processed record the function
// quarantined (ids are the record ids of its dead-letter envelopes) into
// FateQuarantined: the function reported it handled because it parked it,
// not because it processed it. A record Lambda itself gave up on keeps
// Lambda's fate. It returns the ids that name no record of the run.
func markQuarantined(fates map[string]string, ids []string) (stray []string) {
	for _, id := range ids {
		switch f, ok := fates[id]; {
		case !ok:
			stray = append(stray, id)
		case f == FateProcessed:
			fates[id] = FateQuarantined
		}
	}
	return stray
}

// Quarantine is where the function parks the records it gives up on: its
// own dead letters (handlers.WithDeadLetters). The runner reads it at the
// end of a run to tell the records the function quarantined from those it
// processed: both are reported handled to Lambda. An error makes the checks
// that depend on it not evaluated, never guessed.
type Quarantine interface {
	// Quarantined returns the record ids (dlq.Envelope.RecordID: the
	// record's batch item identifier) of the records parked during the run.
	Quarantined(ctx context.Context) ([]string, error)
}

// FileQuarantine is a dead-letter file (the file destination of package
// dlq, SLUICE_DLQ_FILE): one envelope a line. It reads only what was
// appended after it was opened, so envelopes of earlier runs do not count.
type FileQuarantine struct {
	path  string
	start int64 // the file's size when opened
}

var _ Quarantine = (*FileQuarantine)(nil)

// QuarantineFile opens the dead-letter file at path as the run's
// Quarantine; call it just before Run. A file that does not exist yet is
// read from its start once it does.
func QuarantineFile(path string) (*FileQuarantine, error) {
	q := &FileQuarantine{path: path}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("localtest: dead-letter file: %w", err)
	default:
		q.start = st.Size()
	}
	return q, nil
}

// Path is the file's path.
func (q *FileQuarantine) Path() string { return q.path }

// Quarantined reads the envelopes appended since the file was opened. A
// line that is not an envelope is an error naming it.
func (q *FileQuarantine) Quarantined(context.Context) ([]string, error) {
	f, err := os.Open(q.path)
	if errors.Is(err, os.ErrNotExist) {
		if q.start > 0 {
			return nil, fmt.Errorf("dead-letter file %s was removed during the run", q.path)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dead-letter file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("dead-letter file: %w", err)
	}
	if st.Size() < q.start {
		return nil, fmt.Errorf("dead-letter file %s shrank during the run (%d bytes, %d before): it cannot be read", q.path, st.Size(), q.start)
	}
	if _, err := f.Seek(q.start, io.SeekStart); err != nil {
		return nil, fmt.Errorf("dead-letter file: %w", err)
	}
	var ids []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for n := 0; sc.Scan(); {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		n++
		e, err := dlq.Unmarshal([]byte(line))
		if err != nil {
			return nil, fmt.Errorf("dead-letter file %s: envelope %d written during the run: %w", q.path, n, err)
		}
		ids = append(ids, e.RecordID)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dead-letter file %s: %w", q.path, err)
	}
	return ids, nil
}

// readQuarantine turns the fate of the records the function quarantined
// into FateQuarantined. It returns why Options.Quarantine could not be
// read, or "".
func (r *runner) readQuarantine(ctx context.Context) string {
	if r.opts.Quarantine == nil {
		return ""
	}
	ids, err := r.opts.Quarantine.Quarantined(ctx)
	if err != nil {
		return fmt.Sprintf("the function's dead letters could not be read (%v): the records it quarantined cannot be told from those it processed", err)
	}
	markQuarantined(r.fates, ids)
	return ""
}

// checkFates adds the check fate-as-expected and Report.Unexpected; unknown
// is why quarantined records cannot be told from processed ones.
func (r *runner) checkFates(unknown string) {
	recs := r.records()
	expect := make([]string, len(recs))
	for i, ref := range recs {
		if ref.input > 0 && ref.input <= len(r.opts.Records) {
			expect[i] = r.opts.Records[ref.input-1].Expect
		}
	}
	res, unexpected := checkFates(fatesInput{records: recs, expect: expect, fates: r.fates, allow: r.opts.Allow, unknown: unknown})
	r.report.Unexpected = unexpected
	r.report.Invariants = append(r.report.Invariants, res)
}
