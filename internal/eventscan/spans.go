package eventscan

import (
	"encoding/json"
	"slices"

	"github.com/sluicehq/sluice/internal/jsonread"
)

// SplitRecords returns the spans of an event's records, sharing payload
// (as encoding/json keeps a RawMessage's bytes), in the order the handlers
// decode them: the "Records" array in order, or Kafka's topic-partitions
// sorted, each in offset order; nil when the event does not decode.
func SplitRecords(payload []byte, kafka bool) []json.RawMessage {
	r := jsonread.New(payload)
	var spans []json.RawMessage
	var parts map[string][]json.RawMessage
	name := "Records"
	if kafka {
		name = "records"
	}
	err := r.Object("an event object", func(key []byte) error {
		if !isKey(key, name) {
			return r.Skip()
		}
		if null, err := r.Null(); null || err != nil {
			spans, parts = nil, nil
			return err
		}
		if !kafka {
			out := spans[:0]
			if out == nil {
				out = []json.RawMessage{}
			}
			err := r.Array("an array of records", func(int) error {
				raw, err := r.Raw()
				out = append(out, raw)
				return err
			})
			spans = out
			return err
		}
		if parts == nil {
			parts = map[string][]json.RawMessage{}
		}
		return r.Object("an object of topic-partitions", func(key []byte) error {
			k := string(key)
			if null, err := r.Null(); null || err != nil {
				parts[k] = nil
				return err
			}
			var recs []json.RawMessage
			err := r.Array("an array of records", func(int) error {
				raw, err := r.Raw()
				recs = append(recs, raw)
				return err
			})
			parts[k] = recs
			return err
		})
	})
	if err == nil {
		err = r.End()
	}
	if err != nil || r.Saved() != nil {
		return nil
	}
	if !kafka {
		return spans
	}
	keys, n := Partitions(parts)
	out := make([]json.RawMessage, 0, n)
	for _, k := range keys {
		out = append(out, parts[k]...)
	}
	return slices.Clip(out)
}
