package redrive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/sluicehq/sluice/dlq"
)

// A Watch follows the function's dead-letter destination while a redrive
// runs, so Run can tell a replay that ended in quarantine from one that
// succeeded: both are acknowledged the same way.
type Watch interface {
	// Since returns the envelopes written since the last call (the first
	// call: since the Watch was made).
	Since(ctx context.Context) ([]*dlq.Envelope, error)
	// Name names the destination in messages.
	Name() string
}

// WatchFile follows a file of envelopes, one a line (a function's
// SLUICE_DLQ_FILE), from its end as it is now; a file that does not exist
// yet is followed from its start.
func WatchFile(path string) (Watch, error) {
	w := &fileWatch{path: path}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("redrive: watching %s: %w", path, err)
	default:
		w.offset = fi.Size()
	}
	return w, nil
}

type fileWatch struct {
	path   string
	offset int64
}

func (w *fileWatch) Name() string { return w.path }

func (w *fileWatch) Since(ctx context.Context) ([]*dlq.Envelope, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(w.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() < w.offset {
		w.offset = 0 // rewritten shorter: what it holds now is all new
	}
	if _, err := f.Seek(w.offset, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return nil, nil // no complete line yet
	}
	w.offset += int64(end + 1)
	var out []*dlq.Envelope
	for _, line := range bytes.Split(data[:end], []byte("\n")) {
		if e, err := dlq.Unmarshal(bytes.TrimSpace(line)); err == nil {
			out = append(out, e)
		}
	}
	return out, nil
}
