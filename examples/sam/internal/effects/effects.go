// Package effects writes what the example functions did where sluice run
// reads it back: one JSON line per record to the file SLUICE_EFFECTS_FILE
// names (nothing when it is unset, as deployed). The line names the record
// by its id in its source, so the runner's checks can tell a record
// processed from one lost, and whether each key kept its order.
package effects

import (
	"encoding/json"
	"os"
	"sync"
)

var mu sync.Mutex

// Write appends {"record": record, "id": id, "key": key}.
func Write(record, id, key string) error {
	path := os.Getenv("SLUICE_EFFECTS_FILE")
	if path == "" {
		return nil
	}
	line, err := json.Marshal(map[string]string{"record": record, "id": id, "key": key})
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
