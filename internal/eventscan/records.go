package eventscan

import (
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/internal/jsonplan"
)

// recordArray is an event of the shape {"Records":[...]}.
type recordArray[E any] struct {
	Records []E `json:"Records"`
}

// RecordArray decodes an event of the shape {"Records":[...]} into
// records of type E. When the event as a whole does not decode (one record
// with a wrongly typed field fails encoding/json for all), it decodes the
// records one by one, so only the bad ones fail: errs has an entry for each.
// A bad record must still carry the identifier it is reported by (id); if it
// does not, or the envelope itself is not JSON, the whole event fails.
func RecordArray[E any](source string, payload []byte, id func(*E) string) (recs []E, errs []error, err error) {
	var whole recordArray[E]
	// The plan decoder (strings copied: the runtime reuses payload), which
	// falls back to encoding/json for anything it does not expect (and the
	// handlers' FuzzEnvelopeAgrees keeps equal to it); a bad record then goes the
	// encoding/json way below, one record at a time.
	if err := jsonplan.New[recordArray[E]]().Unmarshal(payload, &whole, false); err == nil {
		return whole.Records, nil, nil
	}
	var loose struct {
		Records []json.RawMessage `json:"Records"`
	}
	if err := json.Unmarshal(payload, &loose); err != nil {
		return nil, nil, fmt.Errorf("sluice: %s: the event is not a %s event: %w", source, source, err)
	}
	recs = make([]E, len(loose.Records))
	errs = make([]error, len(loose.Records))
	for i, raw := range loose.Records {
		if err := json.Unmarshal(raw, &recs[i]); err != nil {
			if id(&recs[i]) == "" {
				return nil, nil, fmt.Errorf("sluice: %s: record %d is malformed and has no identifier to report it by: %w", source, i, err)
			}
			errs[i] = fmt.Errorf("malformed %s record: %w", source, err)
		}
	}
	return recs, errs, nil
}
