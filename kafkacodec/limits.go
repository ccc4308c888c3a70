package kafkacodec

import (
	"errors"
	"fmt"
)

// Limits bound what decoding one key or value may read, nest and allocate,
// so that a hostile or corrupt record fails alone instead of taking the
// process down with it. The Avro and Protobuf codecs take them with their
// WithLimits options. A zero field takes its default (DefaultLimits); the
// defaults accept every value a Lambda event (at most 6 MB) can carry.
type Limits struct {
	// MaxValueSize is the most bytes of one encoded value, after its wire
	// header is taken off and a Glue payload inflated. Default 64 MiB, the
	// most a Glue payload inflates to.
	MaxValueSize int
	// MaxDepth is the deepest nesting: each Avro record, array, map and
	// union, each Protobuf message, is one level. Default 10,000, the
	// Protobuf library's own limit.
	MaxDepth int
	// MaxItems is the most Avro array items and map entries, counted over
	// the whole value. Whatever the limit, a count must fit in the bytes
	// left (an item of a type that takes at least one byte cannot be
	// claimed without its byte), so this limit is what bounds items that
	// encode in no bytes at all (null, an empty record). Default 6 Mi
	// (6,291,456): as many one-byte items as 6 MiB holds.
	MaxItems int
	// MaxBytes is the longest Avro string, bytes or fixed value. Default
	// 6 MiB.
	MaxBytes int
}

// Default limits: see Limits.
const (
	DefaultMaxValueSize = 64 << 20
	DefaultMaxDepth     = 10000
	DefaultMaxItems     = 6 << 20
	DefaultMaxBytes     = 6 << 20
)

// DefaultLimits returns the limits a codec has without WithLimits.
func DefaultLimits() Limits {
	return Limits{MaxValueSize: DefaultMaxValueSize, MaxDepth: DefaultMaxDepth, MaxItems: DefaultMaxItems, MaxBytes: DefaultMaxBytes}
}

// WithDefaults returns l with each zero field set to its default, or an
// error naming each negative one.
func (l Limits) WithDefaults() (Limits, error) {
	var errs []error
	set := func(name string, v *int, def int) {
		switch {
		case *v < 0:
			errs = append(errs, fmt.Errorf("kafkacodec.Limits.%s is %d: want 0 (the default, %d) or more", name, *v, def))
		case *v == 0:
			*v = def
		}
	}
	set("MaxValueSize", &l.MaxValueSize, DefaultMaxValueSize)
	set("MaxDepth", &l.MaxDepth, DefaultMaxDepth)
	set("MaxItems", &l.MaxItems, DefaultMaxItems)
	set("MaxBytes", &l.MaxBytes, DefaultMaxBytes)
	return l, errors.Join(errs...)
}

// CheckSize returns a *LimitError when an encoded value of n bytes is
// larger than l.MaxValueSize.
func (l Limits) CheckSize(n int) error {
	if n > l.MaxValueSize {
		return &LimitError{Limit: "MaxValueSize", Got: int64(n), Max: l.MaxValueSize}
	}
	return nil
}

// LimitError is a value that needs more than one of the codec's Limits
// allow. A DecodeError wraps it, so the record fails permanently; a
// legitimate value this large needs a higher limit (WithLimits).
type LimitError struct {
	// Limit names the field of Limits: "MaxValueSize", "MaxDepth",
	// "MaxItems" or "MaxBytes".
	Limit string
	// Got is what the value needs: its size, a depth, an item count
	// reached, a length.
	Got int64
	// Max is the limit.
	Max int
	// What says what the value needs, in the codec's words; empty for the
	// limit's own.
	What string
}

func (e *LimitError) Error() string {
	what := e.What
	switch {
	case what != "":
	case e.Limit == "MaxValueSize":
		what = fmt.Sprintf("the value is %d bytes", e.Got)
	case e.Limit == "MaxDepth":
		what = fmt.Sprintf("the value nests %d levels deep", e.Got)
	case e.Limit == "MaxItems":
		what = fmt.Sprintf("the value holds at least %d array items and map entries", e.Got)
	case e.Limit == "MaxBytes":
		what = fmt.Sprintf("a string, bytes or fixed value is %d bytes", e.Got)
	default:
		what = fmt.Sprintf("the value needs %d", e.Got)
	}
	return fmt.Sprintf("%s, more than Limits.%s (%d) allows; if such values are legitimate, raise it with WithLimits", what, e.Limit, e.Max)
}
