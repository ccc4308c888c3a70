package localtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/internal/filter"
)

// Event filtering: Lambda drops the records of a mapping that match none of
// its FilterCriteria before they are batched (docs/localtest.md, "Event
// filtering"). A dropped SQS message is deleted from the queue; a dropped
// stream or Kafka record is skipped and the checkpoint moves past it. Both
// end with FateFiltered.

// FateFiltered is the fate of a record that matched none of the mapping's
// filters: Lambda discarded it without invoking the function.
const FateFiltered = "filtered"

// awsInvalidPattern is AWS's message for every pattern it cannot read
// (recorded for null, a plain string, a leaf that is not a list, an empty
// list, malformed JSON); the runner's detail follows it.
const awsInvalidPattern = "Invalid filter pattern definition."

// maxFilters is Lambda's limit on FilterCriteria: five filters per
// mapping (its default quota).
const maxFilters = 5

// FilterCriteria is a mapping's event filtering, spelled as
// CreateEventSourceMapping takes it: each Pattern is a JSON document held
// in a string. A record is delivered when it matches any filter. No filters
// (absent, {} or an empty list) delivers every record.
type FilterCriteria struct {
	Filters []Filter `json:"Filters,omitempty"`
}

// Filter is one filter of FilterCriteria.
type Filter struct {
	Pattern string `json:"Pattern"`
	// notString is why the Pattern field of the mapping file was not a JSON
	// string (the usual slip: the pattern written as an object).
	notString string
}

// UnmarshalJSON reads a filter and remembers, for Validate to report with
// the filter's index, a Pattern that is not a string.
func (f *Filter) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return fmt.Errorf("FilterCriteria: a filter must be an object {\"Pattern\": \"...\"}: %w", err)
	}
	*f = Filter{}
	for k, raw := range fields {
		if k != "Pattern" {
			return fmt.Errorf("FilterCriteria: unknown field %q in a filter; a filter is {\"Pattern\": \"<JSON pattern as a string>\"}", k)
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 && raw[0] == '"' {
			if err := json.Unmarshal(raw, &f.Pattern); err != nil {
				return fmt.Errorf("FilterCriteria: Pattern: %w", err)
			}
			continue
		}
		f.notString = string(raw)
	}
	return nil
}

// compileFilters compiles the mapping's filters, returning every problem
// as a ValidationError naming the filter. It returns nil without errors
// when the mapping has no filters.
func compileFilters(source events.Source, fc *FilterCriteria) (*filter.Set, []error) {
	if fc == nil || len(fc.Filters) == 0 {
		return nil, nil
	}
	var errs []error
	if n := len(fc.Filters); n > maxFilters {
		errs = append(errs, &ValidationError{Field: "FilterCriteria.Filters",
			Reason: fmt.Sprintf("%d filters: a mapping holds at most %d (Lambda's default quota); merge patterns with $or or list more values in one pattern", n, maxFilters)})
	}
	var patterns []*filter.Pattern
	for i, f := range fc.Filters {
		field := fmt.Sprintf("FilterCriteria.Filters[%d].Pattern", i)
		if f.notString != "" {
			errs = append(errs, &ValidationError{Field: field,
				Reason: "must be a JSON string holding the pattern, as CreateEventSourceMapping takes it (e.g. \"Pattern\": \"{\\\"body\\\": {\\\"type\\\": [\\\"order\\\"]}}\"), not " + jsonKind(f.notString)})
			continue
		}
		p, err := filter.Compile(source, f.Pattern)
		if err != nil {
			ve := &ValidationError{Field: field, Reason: err.Error()}
			if !errors.Is(err, filter.ErrTooLong) {
				ve.AWS = awsInvalidPattern
			}
			errs = append(errs, ve)
			continue
		}
		patterns = append(patterns, p)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return filter.NewSet(source, patterns), nil
}

func jsonKind(raw string) string {
	switch {
	case strings.HasPrefix(raw, "{"):
		return "a JSON object"
	case strings.HasPrefix(raw, "["):
		return "a JSON array"
	}
	return raw
}

// skipFiltered drops a stream or Kafka record that matches none of the
// mapping's filters: it is resolved as filtered, keeps its place in the
// shard's order (so the checkpoint moves past it) and never reaches a
// batch. It reports whether the record was dropped.
func (r *runner) skipFiltered(shard, id, key string, event json.RawMessage) bool {
	if r.s.filter.Keep(event) {
		return false
	}
	r.shardOrder[shard] = append(r.shardOrder[shard], id)
	if r.refs == nil {
		r.see(realRef(r.s.source, id, key, event))
	}
	r.resolve(id, FateFiltered)
	return true
}

// dropFiltered deletes the received messages that match none of the
// mapping's filters, as Lambda does (they never reach the function and
// count as filtered), and returns the others and how many it dropped.
func (r *runner) dropFiltered(ctx context.Context, msgs []invocation.QueueMessage) ([]invocation.QueueMessage, int, error) {
	if r.s.filter == nil {
		return msgs, 0, nil
	}
	keep := msgs[:0:0]
	var handles []string
	for _, m := range msgs {
		if r.s.filter.Keep(m.Event) {
			keep = append(keep, m)
			continue
		}
		if r.refs == nil {
			key := m.GroupID
			if key == "" {
				key = m.MessageID
			}
			r.see(realRef(r.s.source, m.MessageID, key, m.Event))
		}
		r.resolve(m.MessageID, FateFiltered)
		handles = append(handles, m.ReceiptHandle)
	}
	if len(handles) > 0 {
		if err := r.queue.Delete(ctx, handles); err != nil {
			return nil, 0, fmt.Errorf("localtest: delete filtered messages: %w", err)
		}
	}
	return keep, len(handles), nil
}
