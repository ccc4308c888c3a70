package eventscan

import (
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/jsonread"
)

// WindowEvent is the tumbling window fields of a Kinesis or DynamoDB
// Streams event (a mapping with TumblingWindowInSeconds); Records only
// counts the records.
type WindowEvent struct {
	Window *struct {
		Start time.Time `json:"start"`
		End   time.Time `json:"end"`
	} `json:"window"`
	State                   map[string]string `json:"state"`
	ShardID                 string            `json:"shardId"`
	EventSourceARN          string            `json:"eventSourceARN"`
	IsFinalInvokeForWindow  bool              `json:"isFinalInvokeForWindow"`
	IsWindowTerminatedEarly bool              `json:"isWindowTerminatedEarly"`
	Records                 []struct{}        `json:"Records"`
}

type windowRange = struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// The window fields, spelled once (the records themselves are skipped).
var (
	windowTable      *jsonread.Table[WindowEvent]
	anyRecord        *jsonread.Table[struct{}]
	windowRangeTable *jsonread.Table[windowRange]
	windowOnce       sync.Once
)

// windowTables builds the tables on first use: a function links the
// tables of the sources it reads, no others.
func windowTables() {
	windowOnce.Do(func() {
		windowTable = jsonread.NewTable("a tumbling window event",
			jsonread.Field[WindowEvent]{Name: "window", Read: func(r *jsonread.Reader, w *WindowEvent) error {
				if null, err := r.Null(); null || err != nil {
					w.Window = nil
					return err
				}
				if w.Window == nil && r.Peek() == '{' {
					w.Window = new(windowRange)
				}
				if w.Window == nil {
					return windowRangeTable.Read(r, new(windowRange)) // records the mismatch
				}
				return windowRangeTable.Read(r, w.Window)
			}},
			jsonread.Field[WindowEvent]{Name: "state", Read: func(r *jsonread.Reader, w *WindowEvent) error {
				return jsonread.StringMap(r, &w.State, 0, nil)
			}},
			jsonread.Str("shardId", func(w *WindowEvent) *string { return &w.ShardID }),
			jsonread.Str("eventSourceARN", func(w *WindowEvent) *string { return &w.EventSourceARN }),
			jsonread.Field[WindowEvent]{Name: "isFinalInvokeForWindow", Read: func(r *jsonread.Reader, w *WindowEvent) error {
				return r.BoolInto(&w.IsFinalInvokeForWindow)
			}},
			jsonread.Field[WindowEvent]{Name: "isWindowTerminatedEarly", Read: func(r *jsonread.Reader, w *WindowEvent) error {
				return r.BoolInto(&w.IsWindowTerminatedEarly)
			}},
			jsonread.Field[WindowEvent]{Name: "Records", Read: func(r *jsonread.Reader, w *WindowEvent) error {
				if null, err := r.Null(); null || err != nil {
					w.Records = nil
					return err
				}
				n := 0
				err := r.Array("an array of records", func(i int) error {
					n = i + 1
					if null, err := r.Null(); null || err != nil {
						return err
					}
					return anyRecord.Read(r, &struct{}{}) // an object, read no further
				})
				w.Records = make([]struct{}, n)
				return err
			}},
		)
		anyRecord = jsonread.NewTable[struct{}]("a record")
		windowRangeTable = jsonread.NewTable("a window object",
			timeField("start", func(w *windowRange) *time.Time { return &w.Start }),
			timeField("end", func(w *windowRange) *time.Time { return &w.End }),
		)
	})
}

// DecodeWindow reads the window fields of an event, with encoding/json's
// rules for WindowEvent.
func DecodeWindow(payload []byte) (WindowEvent, error) {
	windowTables()
	var w WindowEvent
	if err := envelope(windowTable, payload, &w); err != nil {
		return WindowEvent{}, err
	}
	return w, nil
}
