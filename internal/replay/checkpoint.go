package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/events"
)

const checkpointVersion = 1

// checkpoint is the replay's checkpoint file: per shard or partition, the
// last record whose batch succeeded, and the consumer it belongs to.
type checkpoint struct {
	Version  int           `json:"version"`
	Source   events.Source `json:"source"`
	Stream   string        `json:"stream"`
	Function string        `json:"function,omitempty"`
	Shadow   bool          `json:"shadow"`
	// Positions maps a shard id or "<topic>-<n>" to the sequence number or
	// offset of its last record acknowledged.
	Positions map[string]string `json:"positions"`
	Updated   time.Time         `json:"updated"`
}

// readCheckpoint reads path; a missing or empty file is no checkpoint.
func readCheckpoint(path string) (*checkpoint, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || err == nil && len(b) == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("replay: checkpoint: %w", err)
	}
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("replay: checkpoint %s is not a replay checkpoint: %v", path, err)
	}
	if cp.Version != checkpointVersion {
		return nil, fmt.Errorf("replay: checkpoint %s has version %d; this sluice reads version %d", path, cp.Version, checkpointVersion)
	}
	for lane, pos := range cp.Positions {
		if !isDigits(pos) {
			return nil, fmt.Errorf("replay: checkpoint %s: the position of %s is %q, not a sequence number or offset", path, lane, pos)
		}
	}
	if cp.Positions == nil {
		cp.Positions = map[string]string{}
	}
	return &cp, nil
}

// matches checks that the checkpoint is of this stream and consumer: a
// checkpoint per consumer, never shared.
func (c *checkpoint) matches(source events.Source, stream, function string, shadow bool) error {
	mode := func(s bool) string {
		if s {
			return "a shadow replay"
		}
		return "a production replay"
	}
	switch {
	case c.Source != source || c.Stream != stream:
		return fmt.Errorf("it is of %s %s, not %s %s: name another checkpoint file", c.Source, c.Stream, source, stream)
	case c.Function != function:
		return fmt.Errorf("it is function %q's, not %q's: each consumer keeps its own checkpoint", c.Function, function)
	case c.Shadow != shadow:
		return fmt.Errorf("it is of %s, and this is %s: each keeps its own checkpoint", mode(c.Shadow), mode(shadow))
	}
	return nil
}

// write replaces the file atomically (a temporary file renamed over it).
func (c *checkpoint) write(path string, now time.Time) error {
	c.Updated = now.UTC()
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("replay: checkpoint: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("replay: checkpoint: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("replay: checkpoint: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("replay: checkpoint: %w", err)
	}
	return nil
}
