package batch

import (
	"errors"
	"fmt"
	"reflect"
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

// A no-progress function error is ErrNoProgress, carries the record's
// error, and its type name is what Lambda shows as the errorType.
func TestNoProgressError(t *testing.T) {
	cause := errors.New("boom")
	var err error = &NoProgressError{Records: 3, FirstFailed: "r2", Err: cause}
	if !errors.Is(err, ErrNoProgress) || !errors.Is(err, cause) {
		t.Fatalf("errors.Is fails on %v", err)
	}
	if got, want := err.Error(), "no record of the batch succeeded: 3 records; first failure on record r2: boom"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := reflect.TypeOf(err).Elem().Name(); got != "NoProgressError" {
		t.Fatalf("errorType %q", got)
	}
	none := &NoProgressError{Records: 2, Err: ErrDeadline}
	if got, want := none.Error(), "no record of the batch succeeded: 2 records, none attempted: not attempted: too close to the Lambda deadline"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestPanicErrorUnwrap(t *testing.T) {
	inner := errors.New("inner")
	if got := (&PanicError{Value: inner}).Unwrap(); got != inner {
		t.Fatalf("Unwrap of a panic with an error: %v, want the error", got)
	}
	if !errors.Is(&PanicError{Value: inner}, inner) {
		t.Fatal("errors.Is does not find the panic's error")
	}
	if got := (&PanicError{Value: "x"}).Unwrap(); got != nil {
		t.Fatalf("Unwrap of a panic with a string: %v, want nil", got)
	}
}
