package dlq

import (
	"context"
	"fmt"
	"os"
	"sync"
)

// File is a Destination that appends envelopes to a file, one JSON object a
// line (JSON Lines), for local runs and tests. It is safe for concurrent
// use, and each line is written with a single write to a file opened for
// appending, so processes sharing the file do not interleave lines.
type File struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

var _ Destination = (*File)(nil)

// OpenFile opens (creating it if needed) the file at path for appending.
func OpenFile(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dlq: opening dead-letter file: %w", err)
	}
	return &File{path: path, f: f}, nil
}

// Path is the file's path.
func (d *File) Path() string { return d.path }

// Send appends one line per envelope and syncs the file. An envelope whose
// line could not be written is not accepted; when the sync fails, none is.
func (d *File) Send(ctx context.Context, envs []*Envelope) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("dlq: file %s: %w", d.path, err)
	}
	errs := make([]error, len(envs))
	lines := make([][]byte, len(envs))
	for i, e := range envs {
		b, err := e.Marshal()
		if err != nil {
			errs[i] = err
			continue
		}
		lines[i] = append(b, '\n')
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return fmt.Errorf("dlq: file %s is closed", d.path)
	}
	failed := false
	for i, line := range lines {
		if line == nil {
			failed = true
			continue
		}
		if _, err := d.f.Write(line); err != nil {
			errs[i] = fmt.Errorf("dlq: writing record %s to %s: %w", envs[i].RecordID, d.path, err)
			failed = true
		}
	}
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("dlq: syncing %s: %w", d.path, err)
	}
	if failed {
		return &SendError{Errs: errs}
	}
	return nil
}

// Close closes the file.
func (d *File) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return nil
	}
	err := d.f.Close()
	d.f = nil
	return err
}
