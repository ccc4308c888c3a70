package batch

import (
	"errors"
	"fmt"
)

// Class is how a record's error is treated.
type Class uint8

const (
	// ClassNone means no error.
	ClassNone Class = iota
	// ClassPlain errors fail the record; Lambda's own retries apply.
	ClassPlain
	// ClassTransient errors are retried in process before they fail the record.
	ClassTransient
	// ClassPermanent errors fail the record at once and are never retried in
	// process: retrying cannot help (bad input, a rejected request).
	ClassPermanent
)

func (c Class) String() string {
	switch c {
	case ClassNone:
		return "none"
	case ClassPlain:
		return "plain"
	case ClassTransient:
		return "transient"
	case ClassPermanent:
		return "permanent"
	}
	return fmt.Sprintf("Class(%d)", c)
}

// permanent and transient are the marker interfaces Classify looks for with
// errors.As, so any error type can declare its class without importing batch.
type permanent interface{ Permanent() bool }
type transient interface{ Transient() bool }

// Classify returns the class of err. An error that declares Permanent() true
// anywhere in its chain is permanent, even if it is also transient.
func Classify(err error) Class {
	if err == nil {
		return ClassNone
	}
	var p permanent
	if errors.As(err, &p) && p.Permanent() {
		return ClassPermanent
	}
	var t transient
	if errors.As(err, &t) && t.Transient() {
		return ClassTransient
	}
	return ClassPlain
}

type permanentError struct{ err error }

func (e *permanentError) Error() string   { return e.err.Error() }
func (e *permanentError) Unwrap() error   { return e.err }
func (e *permanentError) Permanent() bool { return true }

type transientError struct{ err error }

func (e *transientError) Error() string   { return e.err.Error() }
func (e *transientError) Unwrap() error   { return e.err }
func (e *transientError) Transient() bool { return true }

// Permanent marks err as permanent: the record fails at once, with no
// in-process retry. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// Transient marks err as transient: the record is retried in process (see
// Retry) before it fails, unless something in its chain is permanent.
// Transient(nil) is nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &transientError{err}
}

// PanicError is the error a record fails with when its handler panics.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the goroutine's stack at the panic
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}

// DecodeError reports a record that could not be decoded into its typed
// value. It is permanent: the same bytes will never decode.
type DecodeError struct {
	ID  string // the record's identifier (sequence number, message id, ...)
	Err error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("decode record %s: %v", e.ID, e.Err)
}
func (e *DecodeError) Unwrap() error   { return e.Err }
func (e *DecodeError) Permanent() bool { return true }

var (
	// ErrDeadline is the error of a record that was not attempted because
	// too little time was left before the Lambda deadline.
	ErrDeadline = errors.New("not attempted: too close to the Lambda deadline")
	// ErrStopped is the error of a record that was not attempted because an
	// earlier record it must follow failed.
	ErrStopped = errors.New("not attempted: an earlier record in its order failed")
	// ErrNoProgress is the function error returned when no record of the batch
	// made progress, so that Lambda can bisect the batch.
	ErrNoProgress = errors.New("no record of the batch succeeded")
)

// NoProgressError is the function error a handler returns when no record of
// the batch made progress (errors.Is(err, ErrNoProgress) holds). Its type
// name is what Lambda reports as the errorType: "NoProgressError".
type NoProgressError struct {
	// Records is the size of the batch.
	Records int
	// FirstFailed is the id of the first record that failed, or "" when
	// none was attempted.
	FirstFailed string
	// Err is that record's error (or the first record's, when none was
	// attempted).
	Err error
}

func (e *NoProgressError) Error() string {
	if e.FirstFailed == "" {
		return fmt.Sprintf("%v: %d records, none attempted: %v", ErrNoProgress, e.Records, e.Err)
	}
	return fmt.Sprintf("%v: %d records; first failure on record %s: %v", ErrNoProgress, e.Records, e.FirstFailed, e.Err)
}

// Unwrap returns ErrNoProgress and the record's error.
func (e *NoProgressError) Unwrap() []error { return []error{ErrNoProgress, e.Err} }
