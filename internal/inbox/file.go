package inbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// FileSource reads a file of JSON lines, one message per line. Close
// rewrites it without the lines that are done, keeping every other line
// byte for byte and whatever was appended to the file meanwhile.
type FileSource struct {
	path  string
	data  []byte   // the file as read
	lines [][]byte // its lines, without line ends; blank lines are nil
	next  int
	done  map[int]bool
}

var _ Source = (*FileSource)(nil)

// File opens the file at path and reads it whole.
func File(path string) (*FileSource, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f := &FileSource{path: path, data: data, done: map[int]bool{}}
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		f.lines = append(f.lines, l)
	}
	return f, nil
}

// Name is the file's path.
func (f *FileSource) Name() string { return f.path }

// Next returns up to max of the file's lines that are not blank.
func (f *FileSource) Next(_ context.Context, max int) ([]Message, error) {
	var out []Message
	for ; f.next < len(f.lines) && len(out) < max; f.next++ {
		body := bytes.TrimSpace(f.lines[f.next])
		if len(body) == 0 {
			continue
		}
		out = append(out, Message{ID: fmt.Sprintf("line %d", f.next+1), Body: body, line: f.next})
	}
	return out, nil
}

// Done marks lines to drop when the file is rewritten.
func (f *FileSource) Done(_ context.Context, msgs []Message) error {
	for _, m := range msgs {
		f.done[m.line] = true
	}
	return nil
}

// Close rewrites the file without the lines that are done (through a
// temporary file renamed over it). If the file changed other than by lines
// appended to it, it is left as it is and Close says so.
func (f *FileSource) Close(context.Context) error {
	if len(f.done) == 0 {
		return nil
	}
	now, err := os.ReadFile(f.path)
	if err != nil {
		return fmt.Errorf("%s: rewriting it without the %d line(s) done: %w", f.path, len(f.done), err)
	}
	if !bytes.HasPrefix(now, f.data) {
		return fmt.Errorf("%s changed while it was being worked through: it was left as it is, %d line(s) done are still in it (running again is safe with idempotency on)", f.path, len(f.done))
	}
	var out bytes.Buffer
	for i, l := range f.lines {
		if !f.done[i] {
			out.Write(l)
			if l[len(l)-1] != '\n' {
				out.WriteByte('\n')
			}
		}
	}
	out.Write(now[len(f.data):])
	st, err := os.Stat(f.path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), "."+filepath.Base(f.path)+".*")
	if err != nil {
		return fmt.Errorf("%s: rewriting it: %w", f.path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: rewriting it: %w", f.path, err)
	}
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("%s: rewriting it: %w", f.path, err)
	}
	f.data, f.lines, f.done = out.Bytes(), nil, map[int]bool{}
	return nil
}
