package tracing

import (
	"context"
	"log/slog"
)

// NewLogHandler wraps h so that every line logged under a context with a
// span (inside a record's function, the record's span) carries its
// trace_id and span_id, as Sluice's own lines do:
//
//	logger := slog.New(tracing.NewLogHandler(slog.NewJSONHandler(os.Stderr, nil)))
//	logger.InfoContext(ctx, "charged", "order", r.Value.ID)
func NewLogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ slog.Handler }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if tid, sid := IDs(ctx); tid != "" {
		r.AddAttrs(slog.String("trace_id", tid), slog.String("span_id", sid))
	}
	return h.Handler.Handle(ctx, r)
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{h.Handler.WithAttrs(as)}
}
func (h logHandler) WithGroup(name string) slog.Handler { return logHandler{h.Handler.WithGroup(name)} }
