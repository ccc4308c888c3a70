package localtest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/localtest/internal/checks"
	"github.com/sluicehq/sluice/localtest/internal/dlqfile"
)

// Fates: what became of a record. A run passes only when every record ended
// as expected: processed, unless its InputRecord.Expect or Options.Allow
// says otherwise (docs/localtest.md, "Fates and expectations").

// InvariantFates is the check that every record ended as expected.
const InvariantFates = "fate-as-expected"

// Fates lists every fate, in the order the summary counts them.
func Fates() []string {
	return []string{FateProcessed, FateSkipped, FateQuarantined, FateDeadLettered, FateOnFailure, FateFiltered, FateLeft}
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
		if rec.Expect != "" {
			if err := checkFateName(rec.Expect); err != nil {
				return fmt.Errorf("localtest: %s: expect: %w", where(i, rec), err)
			}
		}
		for j, u := range rec.Aggregate {
			if u.Expect != "" {
				if err := checkFateName(u.Expect); err != nil {
					return fmt.Errorf("localtest: %s: user record %d of the aggregate: expect: %w", where(i, rec), j, err)
				}
			}
		}
	}
	return nil
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

// checkFates checks that every record ended as expected (checks.CheckFates),
// and lists those that did not, in source order.
func checkFates(in fatesInput) (InvariantResult, []RecordFate) {
	res, unexpected := checks.CheckFates(checks.FatesInput{Records: checkRecords(in.records, ""), Name: nameOf(in.records), Expect: in.expect,
		Fates: in.fates, Allow: in.allow, Unknown: in.unknown})
	var out []RecordFate
	for _, u := range unexpected {
		rf := in.records[u.Index].fate(u.Fate)
		rf.Expected = u.Expected
		out = append(out, rf)
	}
	return InvariantResult(res), out
}

// Quarantine is where the function parks the records it gives up on: its
// own dead letters (handlers.WithDeadLetters). The runner reads it at the
// end of a run to tell the records the function quarantined from those it
// processed: both are reported handled to Lambda. An error makes the checks
// that depend on it not evaluated, never guessed.
type Quarantine interface {
	// Quarantined returns the record ids of the records parked during the
	// run, as dlq.Envelope.RecordKey names them: the record's batch item
	// identifier, and for a KPL user record ":" and its sub-sequence
	// number (the user record alone was parked).
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
	size, err := dlqfile.Size(path)
	if err != nil {
		return nil, fmt.Errorf("localtest: dead-letter file: %w", err)
	}
	return &FileQuarantine{path: path, start: size}, nil
}

// Path is the file's path.
func (q *FileQuarantine) Path() string { return q.path }

// Quarantined reads the envelopes appended since the file was opened. A
// line that is not an envelope is an error naming it.
func (q *FileQuarantine) Quarantined(context.Context) ([]string, error) {
	return dlqfile.RecordKeys(q.path, q.start)
}

// readQuarantine turns the fate of the records the function quarantined
// into FateQuarantined, in fates (by record of the run). It returns why
// Options.Quarantine could not be read, or "".
func (r *runner) readQuarantine(ctx context.Context, fates map[string]string) string {
	if r.opts.Quarantine == nil {
		return ""
	}
	ids, err := r.opts.Quarantine.Quarantined(ctx)
	if err != nil {
		return fmt.Sprintf("the function's dead letters could not be read (%v): the records it quarantined cannot be told from those it processed", err)
	}
	checks.MarkQuarantined(fates, ids)
	return ""
}

// checkFates adds the check fate-as-expected and Report.Unexpected, for
// the records of the run recs and their fates; unknown is why quarantined
// records cannot be told from processed ones.
func (r *runner) checkFates(recs []inputRef, fates map[string]string, unknown string) {
	expect := make([]string, len(recs))
	for i, ref := range recs {
		expect[i] = ref.expect
	}
	res, unexpected := checkFates(fatesInput{records: recs, expect: expect, fates: fates, allow: r.opts.Allow, unknown: unknown})
	r.report.Unexpected = unexpected
	r.report.Invariants = append(r.report.Invariants, res)
}
