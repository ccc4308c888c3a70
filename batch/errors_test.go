package batch

import (
	"errors"
	"fmt"
	"testing"
)

func TestClassify(t *testing.T) {
	base := errors.New("boom")
	tests := []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, ClassNone},
		{"plain", base, ClassPlain},
		{"permanent", Permanent(base), ClassPermanent},
		{"transient", Transient(base), ClassTransient},
		{"wrapped transient", fmt.Errorf("call: %w", Transient(base)), ClassTransient},
		{"permanent wins over transient", Permanent(Transient(base)), ClassPermanent},
		{"permanent inside transient still permanent", Transient(Permanent(base)), ClassPermanent},
		{"decode error", &DecodeError{ID: "1", Err: base}, ClassPermanent},
		{"panic", &PanicError{Value: "x"}, ClassPlain},
		{"joined", errors.Join(base, Transient(base)), ClassTransient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Fatalf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
	if Permanent(nil) != nil || Transient(nil) != nil {
		t.Fatal("Permanent(nil) and Transient(nil) must be nil")
	}
	if !errors.Is(Permanent(base), base) {
		t.Fatal("Permanent must wrap its error")
	}
}
