package avro

import "github.com/sluicehq/sluice/kafkacodec"

// Validator returns the validation DecodeKafka runs on a value written
// with the schema text, within l.
func Validator(text string, l kafkacodec.Limits) (func([]byte) error, error) {
	s, err := parse(text)
	if err != nil {
		return nil, err
	}
	n, err := compile(s)
	if err != nil {
		return nil, err
	}
	if l, err = l.WithDefaults(); err != nil {
		return nil, err
	}
	return func(b []byte) error { return validate(n, b, l) }, nil
}

// The kinds of bytes the validator rejects though the library may read
// them (see their declarations).
var (
	ErrOverflow  = errOverflow
	ErrBlockSize = errBlockSize
	ErrMalformed = errMalformed
)
