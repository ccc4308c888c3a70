package localtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/localtest/internal/checks"
)

// Skipped records: a Sluice handler answers some records without running
// the user's function (an s3:TestEvent message, a duplicate whose
// idempotency key had completed, a CloudWatch Logs control message). Such
// a record has no effect, and would read as lost. When the function's
// environment names a file in SLUICE_SKIPS_FILE, its handlers append one
// JSON line per record they answered that way (Skip); the runner reads it
// back (Options.Skips), gives those records the fate FateSkipped, and
// checks each claim it can (docs/localtest.md, "Skipped records").

// EnvSkipsFile names the variable of the function's environment that
// names the file its handlers append their skips to (handlers.EnvSkipsFile
// spells it for the handlers).
const EnvSkipsFile = "SLUICE_SKIPS_FILE"

// Skip reasons, as handlers write them in Skip.Reason.
const (
	// SkipDuplicate: the record's idempotency key (Skip.Key) had
	// completed: its effect happened before, in this run or an earlier one.
	SkipDuplicate = checks.ReasonDuplicate
	// SkipS3TestEvent: the message is the s3:TestEvent S3 sends when
	// notifications are set up.
	SkipS3TestEvent = checks.ReasonS3TestEvent
	// SkipControlMessage: the record is a CloudWatch Logs subscription's
	// CONTROL_MESSAGE.
	SkipControlMessage = checks.ReasonControlMessage
)

// Skip is one line of the skips file: a record its handler answered
// without running the function, named by its id (a KPL user record's
// "<sequenceNumber>:<subSequenceNumber>"), the reason, the idempotency
// key of a duplicate (the function name prefix included), and the
// invocation's request id when the handler knew it. A duplicate that the
// checkpoint of its ordered lane answered (a Kinesis shard, a DynamoDB
// item, a Kafka partition, a FIFO message group: handlers.WithIdempotency)
// also names the lane's key and the record's position there
// (idempotency.Position): the store holds the lane, not the key, and the
// runner checks the lane (IdempotencyLanes).
type Skip struct {
	Record   string `json:"record"`
	Reason   string `json:"reason"`
	Key      string `json:"key,omitempty"`
	Lane     string `json:"lane,omitempty"`
	Position string `json:"position,omitempty"`
	Request  string `json:"request,omitempty"`
}

// ReadSkips reads a skips file (SLUICE_SKIPS_FILE): one Skip a line. A
// missing file is no skips; a line that is not a Skip is an error naming
// it.
func ReadSkips(path string) ([]Skip, error) {
	var out []Skip
	err := readJSONLines(path, func(line []byte) error {
		var s Skip
		if err := json.Unmarshal(line, &s); err != nil || s.Record == "" || s.Reason == "" {
			if err == nil {
				err = errors.New(`a skip needs "record" and "reason"`)
			}
			return err
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// readJSONLines calls line for each non-blank line of the file at path (a
// JSON-lines file the function writes: effects, skips), in order, up to
// 1 MiB a line. A missing file has no lines; an error of line is returned
// naming the file and the line's number.
func readJSONLines(path string, line func([]byte) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if err := line(b); err != nil {
			return fmt.Errorf("%s line %d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// IdempotencyKeys is the function's idempotency store as the runner reads
// it, to check a record skipped as a duplicate: its key must have
// completed before the run, or the record's own effect (or, matching
// effects by a business key, that key's) must have happened in it. Run
// calls CompletedKeys once before the first invocation and, when a claim
// needs it, once after the last. source.IdempotencyTable reads a
// DynamoDB table in dynamodbstore's layout.
type IdempotencyKeys interface {
	// CompletedKeys returns the keys whose record is completed now.
	CompletedKeys(ctx context.Context) (map[string]bool, error)
}

// IdempotencyLanes is what an IdempotencyKeys also implements when it can
// read the lane checkpoints the handlers keep on ordered sources
// (idempotency.LaneStore), to check a duplicate its lane's checkpoint
// answered (Skip.Lane): the lane must have covered the record's position
// before the run (idempotency.LaneCovers). Without it such a claim cannot
// be checked. Run reads the lanes when it reads the completed keys.
type IdempotencyLanes interface {
	// Lanes returns the lanes the store holds, by their key.
	Lanes(ctx context.Context) (map[string]*idempotency.LaneRecord, error)
}

// IdempotencyStoredKeys is what an IdempotencyKeys also implements when
// its store keeps a long key in another form (idempotency.StoredKey: the
// DynamoDB store past 2,048 bytes) and its CompletedKeys and Lanes name
// keys in that form: the runner looks a claim's key and lane up as
// StoredKey gives them.
type IdempotencyStoredKeys interface {
	StoredKey(key string) string
}
