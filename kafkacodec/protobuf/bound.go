package protobuf

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/sluicehq/sluice/kafkacodec"
)

// The Protobuf library reads no length past the bytes it has, but what it
// allocates is not bounded by them: each embedded message, however empty
// (two bytes), allocates the whole generated struct (1 MiB of empty
// submessages of descriptorpb.FileDescriptorProto kept 147 MB live), and
// each further run of a packed repeated field copies the whole field so
// far (120 KB of one-element runs copied 3.2 GB in 1.5 s, growing with
// the square of the runs). So before it sees a message, the codec walks
// the bytes with the message's descriptor and counts what the library
// would make: messages, repeated elements and map entries against
// Limits.MaxItems, the copies that packed runs cost against the same
// limit, strings and bytes against MaxBytes, nesting against MaxDepth.
// The walk checks framing only as far as it must to count; the library
// reports what else is wrong.

// errWire is the error of bytes that are not Protobuf wire format.
var errWire = errors.New("not Protobuf wire format")

type bounder struct {
	limits kafkacodec.Limits
	items  int64
	copies int64 // elements copied by packed runs after a field's first
	runs   []run // per message being walked, its packed fields so far
}

// run counts the elements of one packed field of one message so far.
type run struct {
	num   protowire.Number
	elems int64
}

// bound walks b, a message of type md, within l.
func bound(md protoreflect.MessageDescriptor, b []byte, l kafkacodec.Limits) error {
	w := bounder{limits: l}
	return w.message(md, b, 1, 0)
}

func (w *bounder) fail(at int, err error) error {
	return fmt.Errorf("at byte %d: %w", at, err)
}

func (w *bounder) count(at int, n int64) error {
	if w.items += n; w.items > int64(w.limits.MaxItems) {
		return w.fail(at, &kafkacodec.LimitError{Limit: "MaxItems", Got: w.items, Max: w.limits.MaxItems,
			What: fmt.Sprintf("the value holds at least %d messages, repeated elements and map entries", w.items)})
	}
	return nil
}

// message walks the fields of one message; off is where b starts in the
// value, for errors.
func (w *bounder) message(md protoreflect.MessageDescriptor, b []byte, depth, off int) error {
	if depth > w.limits.MaxDepth {
		return w.fail(off, &kafkacodec.LimitError{Limit: "MaxDepth", Got: int64(depth), Max: w.limits.MaxDepth,
			What: fmt.Sprintf("the value nests %d messages deep", depth)})
	}
	base := len(w.runs)
	defer func() { w.runs = w.runs[:base] }()
	fields := md.Fields()
	for pos := 0; pos < len(b); {
		num, typ, n := protowire.ConsumeTag(b[pos:])
		if n < 0 {
			return w.fail(off+pos, fmt.Errorf("%w: %v", errWire, protowire.ParseError(n)))
		}
		at := off + pos
		pos += n
		fd := fields.ByNumber(num)
		if fd == nil && md.ExtensionRanges().Has(num) {
			if xt, err := protoregistry.GlobalTypes.FindExtensionByNumber(md.FullName(), num); err == nil {
				fd = xt.TypeDescriptor()
			}
		}
		switch {
		case fd == nil:
		case typ == protowire.BytesType && fd.Kind() == protoreflect.MessageKind:
			v, n := protowire.ConsumeBytes(b[pos:])
			if n < 0 {
				return w.fail(at, fmt.Errorf("%w: %v", errWire, protowire.ParseError(n)))
			}
			if err := w.count(at, 1); err != nil {
				return err
			}
			if err := w.message(fd.Message(), v, depth+1, off+pos+n-len(v)); err != nil {
				return err
			}
			pos += n
			continue
		case typ == protowire.StartGroupType && fd.Kind() == protoreflect.GroupKind:
			v, n := protowire.ConsumeGroup(num, b[pos:])
			if n < 0 {
				return w.fail(at, fmt.Errorf("%w: %v", errWire, protowire.ParseError(n)))
			}
			if err := w.count(at, 1); err != nil {
				return err
			}
			if err := w.message(fd.Message(), v, depth+1, off+pos); err != nil {
				return err
			}
			pos += n
			continue
		case typ == protowire.BytesType && (fd.Kind() == protoreflect.StringKind || fd.Kind() == protoreflect.BytesKind):
			v, n := protowire.ConsumeBytes(b[pos:])
			if n >= 0 && len(v) > w.limits.MaxBytes {
				return w.fail(at, &kafkacodec.LimitError{Limit: "MaxBytes", Got: int64(len(v)), Max: w.limits.MaxBytes,
					What: fmt.Sprintf("field %s is %d bytes", fd.Name(), len(v))})
			}
			if fd.IsList() {
				if err := w.count(at, 1); err != nil {
					return err
				}
			}
		case typ == protowire.BytesType && fd.IsList():
			v, n := protowire.ConsumeBytes(b[pos:])
			if n < 0 {
				return w.fail(at, fmt.Errorf("%w: %v", errWire, protowire.ParseError(n)))
			}
			if err := w.packed(at, fd, v, base); err != nil {
				return err
			}
			pos += n
			continue
		case fd.IsList():
			if err := w.count(at, 1); err != nil {
				return err
			}
		}
		n = protowire.ConsumeFieldValue(num, typ, b[pos:])
		if n < 0 {
			return w.fail(at, fmt.Errorf("%w: %v", errWire, protowire.ParseError(n)))
		}
		pos += n
	}
	return nil
}

// packed counts one run of a packed repeated scalar field, and what it
// costs the library to append it to the runs before it in the message.
func (w *bounder) packed(at int, fd protoreflect.FieldDescriptor, v []byte, base int) error {
	var elems int64
	switch fd.Kind() {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		elems = int64(len(v) / 4)
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		elems = int64(len(v) / 8)
	default: // varints: one ends at each byte below 0x80
		for _, c := range v {
			if c < 0x80 {
				elems++
			}
		}
	}
	if err := w.count(at, elems); err != nil {
		return err
	}
	for i := base; i < len(w.runs); i++ {
		if w.runs[i].num == fd.Number() {
			if w.copies += w.runs[i].elems; w.copies > int64(w.limits.MaxItems) {
				return w.fail(at, &kafkacodec.LimitError{Limit: "MaxItems", Got: w.copies, Max: w.limits.MaxItems,
					What: fmt.Sprintf("packed field %s comes in so many separate runs that decoding them copies %d elements", fd.Name(), w.copies)})
			}
			w.runs[i].elems += elems
			return nil
		}
	}
	w.runs = append(w.runs, run{num: fd.Number(), elems: elems})
	return nil
}
