package inbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileSource(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		content  string
		done     []int // indexes into the messages read
		appended string
		changed  string
		want     string
		wantErr  string
	}{
		{"drop done lines", "a\nb\n\nc\n", []int{0, 2}, "", "", "b\n\n", ""},
		{"last line without newline", "a\nb", []int{0}, "", "", "b\n", ""},
		{"keep what was appended", "a\nb\n", []int{1}, "c\n", "", "a\nc\n", ""},
		{"nothing done: untouched", "a\nb", nil, "", "", "a\nb", ""},
		{"changed meanwhile", "a\nb\n", []int{0}, "", "x\n", "x\n", "changed while it was being worked through"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.jsonl")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := File(path)
			if err != nil {
				t.Fatal(err)
			}
			var msgs []Message
			for {
				m, _ := f.Next(ctx, 2)
				if len(m) == 0 {
					break
				}
				msgs = append(msgs, m...)
			}
			if strings.Count(tt.content, "\n")+1 < len(msgs) || msgs[0].ID != "line 1" || string(msgs[0].Body) != "a" {
				t.Fatalf("messages %+v", msgs)
			}
			var done []Message
			for _, i := range tt.done {
				done = append(done, msgs[i])
			}
			f.Done(ctx, done)
			if tt.appended != "" {
				fh, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
				fh.WriteString(tt.appended)
				fh.Close()
			}
			if tt.changed != "" {
				os.WriteFile(path, []byte(tt.changed), 0o600)
			}
			err = f.Close(ctx)
			if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Close: %v, want %q", err, tt.wantErr)
			}
			got, _ := os.ReadFile(path)
			if string(got) != tt.want {
				t.Fatalf("file %q, want %q", got, tt.want)
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
				t.Errorf("mode %v", st.Mode())
			}
		})
	}
}
