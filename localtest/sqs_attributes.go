package localtest

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// MessageAttribute is one SQS message attribute of a records line, in the
// shape an SQS event carries it. The list values are reserved by SQS: a
// line may carry them empty, as events do.
type MessageAttribute struct {
	DataType         string   `json:"dataType"`
	StringValue      *string  `json:"stringValue,omitempty"`
	BinaryValue      []byte   `json:"binaryValue,omitempty"`
	StringListValues []string `json:"stringListValues,omitempty"`
	BinaryListValues [][]byte `json:"binaryListValues,omitempty"`
}

// md5OfMessageAttributes is the MD5 digest SQS returns as
// MD5OfMessageAttributes, by the algorithm the SQS Developer Guide gives:
// for each attribute, by name in ascending order, the name, the data type
// and the value, each as a 4-byte big-endian length and its bytes, with a
// transport type byte (1 for String and Number, 2 for Binary) before the
// value. "" for no attributes. (The list values are reserved by SQS and
// never sent.)
func md5OfMessageAttributes(attrs map[string]MessageAttribute) string {
	if len(attrs) == 0 {
		return ""
	}
	var buf []byte
	field := func(b []byte) {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)))
		buf = append(buf, b...)
	}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		a := attrs[name]
		field([]byte(name))
		field([]byte(a.DataType))
		switch {
		case a.StringValue != nil:
			buf = append(buf, 1)
			field([]byte(*a.StringValue))
		case a.BinaryValue != nil:
			buf = append(buf, 2)
			field(a.BinaryValue)
		}
	}
	sum := md5.Sum(buf)
	return hex.EncodeToString(sum[:])
}

// checkMessageAttributes rejects message attributes SQS's SendMessage
// would reject: more than 10, a name SQS reserves or cannot hold, a data
// type other than String, Number or Binary (each with an optional
// ".label"), or a value missing for its type.
func checkMessageAttributes(attrs map[string]MessageAttribute) error {
	if len(attrs) > 10 {
		return fmt.Errorf("messageAttributes: %d attributes; SQS allows at most 10", len(attrs))
	}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		a := attrs[name]
		lower := strings.ToLower(name)
		switch {
		case name == "" || len(name) > 256:
			return fmt.Errorf("messageAttributes: name %q must be 1 to 256 characters", name)
		case strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon."):
			return fmt.Errorf("messageAttributes: name %q: the prefixes AWS. and Amazon. are reserved", name)
		case strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, ".."):
			return fmt.Errorf("messageAttributes: name %q may not start or end with a period or hold two in a row", name)
		}
		if len(a.StringListValues) > 0 || len(a.BinaryListValues) > 0 {
			return fmt.Errorf("messageAttributes: %q: stringListValues and binaryListValues are reserved by SQS and must be empty", name)
		}
		base, _, _ := strings.Cut(a.DataType, ".")
		switch base {
		case "String", "Number":
			if a.StringValue == nil {
				return fmt.Errorf("messageAttributes: %q of type %s needs a stringValue", name, a.DataType)
			}
		case "Binary":
			if a.BinaryValue == nil {
				return fmt.Errorf("messageAttributes: %q of type %s needs a binaryValue (base64)", name, a.DataType)
			}
		default:
			return fmt.Errorf("messageAttributes: %q has dataType %q; use String, Number or Binary (optionally with a .label)", name, a.DataType)
		}
	}
	return nil
}

// eventMessageAttributes is the attributes as a Lambda SQS event carries
// them: both list fields always present, empty.
func eventMessageAttributes(attrs map[string]MessageAttribute) map[string]events.SQSMessageAttribute {
	out := make(map[string]events.SQSMessageAttribute, len(attrs))
	for k, a := range attrs {
		out[k] = events.SQSMessageAttribute{DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue,
			StringListValues: []string{}, BinaryListValues: [][]byte{}}
	}
	return out
}
