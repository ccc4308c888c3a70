package checks

import (
	"slices"
	"strings"
)

// words says in words what a fate means, for people.
func words(fate string) string {
	switch fate {
	case Processed:
		return "processed"
	case Quarantined:
		return "quarantined (the function parked it in its own dead letters)"
	case DeadLettered:
		return "dead-lettered (the queue's redrive policy moved it to its dead-letter queue)"
	case OnFailure:
		return "on-failure (Lambda gave up on it and sent it to the mapping's on-failure destination)"
	case Filtered:
		return "filtered (it matched none of the mapping's FilterCriteria)"
	case Left:
		return "left (still in the source when the run ended)"
	case Skipped:
		return "skipped (its handler acknowledged it without running the function)"
	}
	return fate
}

// allowedFates is what a record may end as: its expectation (processed by
// default, where a record the mapping's filters drop, or its handler
// answers without the function for a reason the no-record-lost check
// verifies, is expected by construction) and every fate the run allows.
func allowedFates(expect string, allow []string) []string {
	out := []string{expect}
	if expect == "" {
		out = []string{Processed, Filtered, Skipped}
	}
	for _, f := range allow {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// FatesInput is what the fate check reads.
type FatesInput struct {
	Records []Record           // every record of the run, in source order
	Name    func(i int) string // how reports name Records[i]
	Expect  []string           // per record, its expected fate ("" for the default)
	Fates   map[string]string  // record id -> fate
	Allow   []string           // the fates every record may end with
	// Unknown, if set, is why a processed record may have been
	// quarantined instead (the function's dead letters could not be
	// read): where that makes the difference, the check is not evaluated.
	Unknown string
}

// Unexpected is a record that did not end as expected: Records[Index] of
// the input, the fate it got and the one it was expected to end with.
type Unexpected struct {
	Index          int
	Fate, Expected string
}

// CheckFates checks that every record ended as expected, and lists those
// that did not, in source order. A record without a fate is the
// no-record-lost check's to report.
func CheckFates(in FatesInput) (Result, []Unexpected) {
	res := Result{Name: Fates, Status: Held}
	var unexpected []Unexpected
	unsure := false
	for i, rec := range in.Records {
		got, ok := in.Fates[rec.ID]
		if !ok {
			continue
		}
		expect := ""
		if i < len(in.Expect) {
			expect = in.Expect[i]
		}
		allowed := allowedFates(expect, in.Allow)
		if slices.Contains(allowed, got) && (got != Processed || in.Unknown == "" || slices.Contains(allowed, Quarantined)) {
			continue
		}
		if got == Processed && in.Unknown != "" && slices.Contains(allowed, Quarantined) != slices.Contains(allowed, Processed) {
			unsure = true // processed, or quarantined: one is expected, the other not
			continue
		}
		exp := expect
		if exp == "" {
			exp = Processed
		}
		unexpected = append(unexpected, Unexpected{Index: i, Fate: got, Expected: exp})
		res.Violate("%s: expected %s, got %s", in.Name(i), expectedWords(expect, allowed), words(got))
	}
	if unsure {
		res = res.NotEvaluated(in.Unknown)
	}
	return res, unexpected
}

// expectedWords says what a record was allowed to end as.
func expectedWords(expect string, allowed []string) string {
	if expect == "" { // filtered and skipped are allowed by construction, not expected
		allowed = slices.DeleteFunc(slices.Clone(allowed), func(f string) bool { return f == Filtered || f == Skipped })
	}
	switch len(allowed) {
	case 1:
		return allowed[0]
	case 2:
		return allowed[0] + " or " + allowed[1]
	}
	return strings.Join(allowed[:len(allowed)-1], ", ") + " or " + allowed[len(allowed)-1]
}

// MarkQuarantined turns the fate of every processed record the function
// quarantined (ids are the record ids of its dead-letter envelopes) into
// Quarantined: the function reported it handled because it parked it,
// not because it processed it. A record Lambda itself gave up on keeps
// Lambda's fate. It returns the ids that name no record of the run.
func MarkQuarantined(fates map[string]string, ids []string) (stray []string) {
	for _, id := range ids {
		switch f, ok := fates[id]; {
		case !ok:
			stray = append(stray, id)
		case f == Processed:
			fates[id] = Quarantined
		}
	}
	return stray
}
