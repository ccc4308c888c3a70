package eventscan

import (
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/jsonread"
)

// EventBridge is an Amazon EventBridge event as EventBridge delivers it
// to a target: its metadata (with replay-name, which only a replayed event
// carries), and its detail as JSON (nil when absent, null as it is).
type EventBridge struct {
	Version    string
	ID         string
	DetailType string
	Source     string
	Account    string
	Time       time.Time
	Region     string
	Resources  []string
	ReplayName string
	Detail     SharedJSON
}

// The event, spelled once.
var (
	eventBridgeTable *jsonread.Table[EventBridge]
	eventBridgeOnce  sync.Once
)

// eventBridgeTables builds the tables on first use: a function links the
// tables of the sources it reads, no others.
func eventBridgeTables() {
	eventBridgeOnce.Do(func() {
		eventBridgeTable = jsonread.NewTable("an EventBridge event",
			jsonread.Str("version", func(e *EventBridge) *string { return &e.Version }),
			jsonread.Str("id", func(e *EventBridge) *string { return &e.ID }),
			jsonread.Str("detail-type", func(e *EventBridge) *string { return &e.DetailType }),
			jsonread.Str("source", func(e *EventBridge) *string { return &e.Source }),
			jsonread.Str("account", func(e *EventBridge) *string { return &e.Account }),
			timeField("time", func(e *EventBridge) *time.Time { return &e.Time }),
			jsonread.Str("region", func(e *EventBridge) *string { return &e.Region }),
			jsonread.Field[EventBridge]{Name: "resources", Read: func(r *jsonread.Reader, e *EventBridge) error { return jsonread.StringSlice(r, &e.Resources) }},
			jsonread.Str("replay-name", func(e *EventBridge) *string { return &e.ReplayName }),
			jsonread.Field[EventBridge]{Name: "detail", Read: func(r *jsonread.Reader, e *EventBridge) error {
				raw, err := r.Raw() // checked as JSON, as encoding/json checks a value it keeps raw
				e.Detail = SharedJSON(raw)
				return err
			}},
		)
	})
}

// DecodeEventBridge decodes an event. Its strings share one copy of data;
// Detail shares data itself.
func DecodeEventBridge(data []byte) (EventBridge, error) {
	eventBridgeTables()
	var e EventBridge
	if err := envelope(eventBridgeTable, data, &e); err != nil {
		return EventBridge{}, err
	}
	return e, nil
}
