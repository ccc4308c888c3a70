// Package dlqfile reads a dead-letter file (the file destination of
// package dlq: one envelope a line) the way the localtest runner's
// FileQuarantine does: only what was appended after a given size.
package dlqfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sluicehq/sluice/dlq"
)

// Size is the file's size now, 0 when it does not exist yet.
func Size(path string) (int64, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return st.Size(), nil
}

// RecordKeys reads the record keys (dlq.Envelope.RecordKey: the record's
// id, with a KPL user record's sub-sequence number) of the envelopes
// appended to the file at path after its first start bytes. A line that is not an envelope is an
// error naming it, and so is a file that shrank below start or was
// removed after it had held something.
func RecordKeys(path string, start int64) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		if start > 0 {
			return nil, fmt.Errorf("dead-letter file %s was removed during the run", path)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dead-letter file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("dead-letter file: %w", err)
	}
	if st.Size() < start {
		return nil, fmt.Errorf("dead-letter file %s shrank during the run (%d bytes, %d before): it cannot be read", path, st.Size(), start)
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return nil, fmt.Errorf("dead-letter file: %w", err)
	}
	var ids []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for n := 0; sc.Scan(); {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		n++
		e, err := dlq.Unmarshal([]byte(line))
		if err != nil {
			return nil, fmt.Errorf("dead-letter file %s: envelope %d written during the run: %w", path, n, err)
		}
		ids = append(ids, e.RecordKey())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dead-letter file %s: %w", path, err)
	}
	return ids, nil
}
