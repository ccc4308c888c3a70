package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sluicehq/sluice/internal/engine"
	"github.com/sluicehq/sluice/internal/jsonwrite"
)

// Records answered without the user's function. A handler answers some
// records itself: a duplicate whose idempotency key had completed
// (WithIdempotency), the s3:TestEvent message of an S3Notification. Each
// such record says why (RecordOutcome.Skipped), through one function,
// answeredWithout, so a new envelope that skips a payload needs only to
// give the reason (payloadSkipper). A local runner that gives the function
// a file in EnvSkipsFile is told of every one of them, to tell a record
// answered on purpose from one whose effect was lost.

// EnvSkipsFile names the environment variable that, when set, names a
// file the handler appends one JSON line to for each record it answered
// without running the function, once its batch has run:
// {"record": <the record's id>, "reason": <why>, "key": <a duplicate's
// idempotency key>, "lane": <the lane whose checkpoint answered a
// duplicate>, "position": <the record's position in that lane>,
// "request": <the invocation's request id>}. The record's id is the one
// the runner names records by (RecordOutcome.Record). A duplicate of an
// ordered lane that keeps a checkpoint (see WithIdempotency) names the
// lane's key (as the store holds it, prefix included) and its position
// (idempotency.Position): the store holds no item of the record's own
// key, and the runner checks the lane instead. The local runner (sluice
// run) sets it; unset, nothing is written and nothing costs.
const EnvSkipsFile = "SLUICE_SKIPS_FILE"

// Why a record was answered without the function (RecordOutcome.Skipped).
const (
	// SkipDuplicate: its idempotency key had completed (WithIdempotency).
	SkipDuplicate = engine.SkipDuplicate
	// SkipS3TestEvent: the s3:TestEvent message S3 sends when
	// notifications are set up (S3Notification).
	SkipS3TestEvent = "s3-test-event"
	// SkipControlMessage: the CONTROL_MESSAGE CloudWatch Logs sends to
	// check that a subscription's destination is reachable
	// (CloudWatchLogs).
	SkipControlMessage = "control-message"
)

// answeredWithout notes that the record being processed under ctx is
// answered without the user's function, and why (key: a duplicate's
// idempotency key). The caller then returns nil: the record succeeds.
func answeredWithout(ctx context.Context, reason, key string) {
	engine.NoteSkip(ctx, engine.Skip{Reason: reason, Key: key})
}

// answeredByCheckpoint notes that the record being processed under ctx
// is a duplicate its lane's checkpoint answered: key is its idempotency
// key, lane the lane's key and pos its position there, what the store
// holds to show it.
func answeredByCheckpoint(ctx context.Context, key, lane, pos string) {
	engine.NoteSkip(ctx, engine.Skip{Reason: SkipDuplicate, Key: key, Lane: lane, Position: pos})
}

// skipLog is the file EnvSkipsFile names.
type skipLog struct {
	path   string
	mu     sync.Mutex
	logger *slog.Logger
}

// newSkipLog is the skip log the environment names, or nil.
func newSkipLog(c *config) *skipLog {
	path, _ := c.lookupEnv(EnvSkipsFile)
	if path == "" {
		return nil
	}
	return &skipLog{path: path, logger: c.logger}
}

// write appends a line for each record of the batch that succeeded
// without running the function, named by its record id, as the runner
// names it. A
// failed write is logged, not failed: the file is the local runner's, and
// a claim it misses reads as a lost record there, never as a kept one.
func (l *skipLog) write(ctx context.Context, res *engine.Result, ids recordIDs) {
	if l == nil || res.Skips == nil {
		return
	}
	request := ""
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		request = lc.AwsRequestID
	}
	var b []byte
	for i := range res.Skips {
		s, ok := res.Skipped(i)
		if !ok {
			continue
		}
		b = append(b, `{"record":`...)
		b = jsonwrite.AppendString(b, ids.of(i))
		b = append(b, `,"reason":`...)
		b = jsonwrite.AppendString(b, s.Reason)
		if s.Key != "" {
			b = append(b, `,"key":`...)
			b = jsonwrite.AppendString(b, s.Key)
		}
		if s.Lane != "" {
			b = append(b, `,"lane":`...)
			b = jsonwrite.AppendString(b, s.Lane)
			b = append(b, `,"position":`...)
			b = jsonwrite.AppendString(b, s.Position)
		}
		if request != "" {
			b = append(b, `,"request":`...)
			b = jsonwrite.AppendString(b, request)
		}
		b = append(b, "}\n"...)
	}
	if len(b) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// One write per batch, appended: lines of processes that share the
	// file do not interleave.
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil && l.logger != nil {
		l.logger.LogAttrs(ctx, slog.LevelWarn, "sluice: the records answered without the function could not be written to "+EnvSkipsFile,
			slog.String("file", l.path), slog.String("error", fmt.Sprint(err)))
	}
}
