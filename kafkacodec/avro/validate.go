package avro

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	hamba "github.com/hamba/avro/v2"

	"github.com/sluicehq/sluice/kafkacodec"
)

// The Avro library reads a value that ends before its schema as zero
// values (its Unmarshal takes io.EOF for success), and preallocates an
// array from the count the value claims, however few bytes follow. So
// before it sees a value, the codec walks the writer's schema over the
// bytes: every length and count must fit in what is left of the input and
// in the codec's Limits, and the value must end exactly where the bytes do.

// ErrTruncated is wrapped by the error of a value that ends before its
// writer's schema does (or claims more than its bytes can hold).
var ErrTruncated = errors.New("the value ends before its schema does")

// ErrTrailingBytes is wrapped by the error of a value that has bytes left
// over after its writer's schema ends.
var ErrTrailingBytes = errors.New("bytes left over after the value")

// errMalformed is wrapped by the error of bytes that are not Avro of the
// schema: a boolean that is not 0 or 1, an index out of range, a negative
// length.
var errMalformed = errors.New("not an Avro value of the writer's schema")

// errOverflow is wrapped by the error of an int or long varint longer or
// larger than its type. (The library would silently drop the high bits.)
var errOverflow = errors.New("varint overflows its type")

// errBlockSize is wrapped by the error of an array or map block whose byte
// size is not that of its items. (The library would skip a block the
// reader's schema does not want by that size, and read on out of step.)
var errBlockSize = errors.New("block byte size does not match its items")

type kind uint8

const (
	kNull kind = iota
	kBoolean
	kInt
	kLong
	kFloat
	kDouble
	kBytes
	kString
	kFixed
	kEnum
	kUnion
	kRecord
	kArray
	kMap
)

// A node is a writer's schema compiled for validation. Named types that
// refer to themselves make cycles.
type node struct {
	kind  kind
	min   int     // the fewest bytes a value of the type encodes in
	n     int     // fixed: size; enum: symbols; union: branches
	kids  []*node // record: fields; union: branches
	names []string
	items *node // array: items; map: values
}

// compile compiles a parsed schema.
func compile(s hamba.Schema) (*node, error) {
	c := compiler{named: map[string]*node{}}
	n, err := c.node(s)
	if err != nil {
		return nil, err
	}
	c.minimize(n, map[*node]bool{})
	return n, nil
}

type compiler struct {
	named map[string]*node // records by full name, for cycles
}

func (c *compiler) node(s hamba.Schema) (*node, error) {
	switch s.Type() {
	case hamba.Null:
		return &node{kind: kNull}, nil
	case hamba.Boolean:
		return &node{kind: kBoolean}, nil
	case hamba.Int:
		return &node{kind: kInt}, nil
	case hamba.Long:
		return &node{kind: kLong}, nil
	case hamba.Float:
		return &node{kind: kFloat}, nil
	case hamba.Double:
		return &node{kind: kDouble}, nil
	case hamba.Bytes:
		return &node{kind: kBytes}, nil
	case hamba.String:
		return &node{kind: kString}, nil
	case hamba.Fixed:
		return &node{kind: kFixed, n: s.(*hamba.FixedSchema).Size()}, nil
	case hamba.Enum:
		return &node{kind: kEnum, n: len(s.(*hamba.EnumSchema).Symbols())}, nil
	case hamba.Ref:
		return c.node(s.(*hamba.RefSchema).Schema())
	case hamba.Union:
		u := s.(*hamba.UnionSchema)
		n := &node{kind: kUnion, n: len(u.Types())}
		for _, t := range u.Types() {
			k, err := c.node(t)
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, k)
		}
		return n, nil
	case hamba.Array:
		items, err := c.node(s.(*hamba.ArraySchema).Items())
		return &node{kind: kArray, items: items}, err
	case hamba.Map:
		values, err := c.node(s.(*hamba.MapSchema).Values())
		return &node{kind: kMap, items: values}, err
	case hamba.Record, hamba.Error:
		r := s.(*hamba.RecordSchema)
		if n, ok := c.named[r.FullName()]; ok {
			return n, nil
		}
		n := &node{kind: kRecord}
		c.named[r.FullName()] = n
		for _, f := range r.Fields() {
			k, err := c.node(f.Type())
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, k)
			n.names = append(n.names, f.Name())
		}
		return n, nil
	}
	return nil, fmt.Errorf("schema type %s is not supported", s.Type())
}

// minimize sets each node's min. A node met again on its own path (a
// recursive record) counts as 0 there: a lower bound stays a lower bound.
func (c *compiler) minimize(n *node, onPath map[*node]bool) int {
	if onPath[n] {
		return 0
	}
	onPath[n] = true
	defer delete(onPath, n)
	m := 0
	switch n.kind {
	case kBoolean, kInt, kLong, kBytes, kString, kEnum, kArray, kMap:
		m = 1
	case kFloat:
		m = 4
	case kDouble:
		m = 8
	case kFixed:
		m = n.n
	case kUnion:
		m = math.MaxInt
		for _, k := range n.kids {
			m = min(m, c.minimize(k, onPath))
		}
		if m == math.MaxInt {
			m = 0
		}
		m = satAdd(m, 1)
	case kRecord:
		for _, k := range n.kids {
			m = satAdd(m, c.minimize(k, onPath))
		}
	}
	if n.items != nil {
		c.minimize(n.items, onPath)
	}
	n.min = m
	return m
}

func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// validator walks one value.
type validator struct {
	b      []byte
	pos    int
	items  int64
	limits kafkacodec.Limits
}

// validate checks that b is exactly one value of the schema n within l.
func validate(n *node, b []byte, l kafkacodec.Limits) error {
	v := validator{b: b, limits: l}
	if err := v.walk(n, 1); err != nil {
		return err
	}
	if v.pos != len(b) {
		return fmt.Errorf("%w: the value ends at byte %d of %d", ErrTrailingBytes, v.pos, len(b))
	}
	return nil
}

// walkError is an error with the path to where it happened, built on the
// way out.
type walkError struct {
	path []string // innermost first
	pos  int
	err  error
}

func (e *walkError) Error() string {
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		p := e.path[i]
		if b.Len() > 0 && p[0] != '[' {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	where := b.String()
	if where == "" {
		where = "the value"
	}
	return fmt.Sprintf("%s, at byte %d: %v", where, e.pos, e.err)
}

func (e *walkError) Unwrap() error { return e.err }

func (v *validator) fail(err error) error { return &walkError{pos: v.pos, err: err} }

func (v *validator) truncated(format string, args ...any) error {
	return v.fail(fmt.Errorf("%w: %s", ErrTruncated, fmt.Sprintf(format, args...)))
}

func at(err error, p string) error {
	if we, ok := err.(*walkError); ok {
		we.path = append(we.path, p)
	}
	return err
}

func (v *validator) left() int { return len(v.b) - v.pos }

// varint reads a zig-zag varint of at most max bytes whose value fits in
// bits bits.
func (v *validator) varint(what string, max, bits int) (int64, error) {
	if v.pos < len(v.b) && v.b[v.pos] < 0x80 { // most lengths, counts and indexes
		u := uint64(v.b[v.pos])
		v.pos++
		return int64(u>>1) ^ -int64(u&1), nil
	}
	var u uint64
	for i := 0; ; i++ {
		if v.pos == len(v.b) {
			return 0, v.truncated("%s", what)
		}
		c := v.b[v.pos]
		if i == max-1 && uint64(c) >= 1<<(bits-7*(max-1)) {
			return 0, v.fail(fmt.Errorf("%w: %s is more than %d bits", errOverflow, what, bits))
		}
		v.pos++
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
}

func (v *validator) long(what string) (int64, error) { return v.varint(what, 10, 64) }
func (v *validator) int(what string) (int64, error)  { return v.varint(what, 5, 32) }

func (v *validator) need(n int, what string) error {
	if n > v.left() {
		return v.truncated("%s needs %d bytes, %d are left", what, n, v.left())
	}
	v.pos += n
	return nil
}

// length reads a string's or bytes' length (named lenWhat) and skips
// over what it counts.
func (v *validator) length(what, lenWhat string) error {
	n, err := v.long(lenWhat)
	if err != nil {
		return err
	}
	switch {
	case n < 0:
		return v.fail(fmt.Errorf("%w: %s length %d is negative", errMalformed, what, n))
	case n > int64(v.left()):
		return v.truncated("%s needs %d bytes, %d are left", what, n, v.left())
	case n > int64(v.limits.MaxBytes):
		return v.fail(&kafkacodec.LimitError{Limit: "MaxBytes", Got: n, Max: v.limits.MaxBytes})
	}
	v.pos += int(n)
	return nil
}

func (v *validator) walk(n *node, depth int) error {
	switch n.kind {
	case kNull:
		return nil
	case kBoolean:
		if v.pos == len(v.b) {
			return v.truncated("boolean")
		}
		if c := v.b[v.pos]; c > 1 {
			return v.fail(fmt.Errorf("%w: boolean byte 0x%02x is neither 0 nor 1", errMalformed, c))
		}
		v.pos++
		return nil
	case kInt:
		_, err := v.int("int")
		return err
	case kLong:
		_, err := v.long("long")
		return err
	case kFloat:
		return v.need(4, "float")
	case kDouble:
		return v.need(8, "double")
	case kBytes:
		return v.length("bytes", "bytes length")
	case kString:
		return v.length("string", "string length")
	case kFixed:
		if n.n <= v.left() && n.n > v.limits.MaxBytes {
			return v.fail(&kafkacodec.LimitError{Limit: "MaxBytes", Got: int64(n.n), Max: v.limits.MaxBytes})
		}
		return v.need(n.n, "fixed")
	case kEnum:
		i, err := v.int("enum index")
		if err == nil && (i < 0 || i >= int64(n.n)) {
			err = v.fail(fmt.Errorf("%w: enum index %d, the enum has %d symbols", errMalformed, i, n.n))
		}
		return err
	}
	if depth > v.limits.MaxDepth {
		return v.fail(&kafkacodec.LimitError{Limit: "MaxDepth", Got: int64(depth), Max: v.limits.MaxDepth})
	}
	switch n.kind {
	case kUnion:
		i, err := v.int("union index")
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(n.n) {
			return v.fail(fmt.Errorf("%w: union index %d, the union has %d branches", errMalformed, i, n.n))
		}
		if err := v.walk(n.kids[i], depth+1); err != nil {
			return at(err, "["+strconv.FormatInt(i, 10)+"]")
		}
		return nil
	case kRecord:
		for i, k := range n.kids {
			if err := v.walk(k, depth+1); err != nil {
				return at(err, n.names[i])
			}
		}
		return nil
	case kArray, kMap:
		return v.blocks(n, depth)
	}
	return v.fail(fmt.Errorf("schema kind %d", n.kind))
}

// blocks walks the blocks of an array or a map.
func (v *validator) blocks(n *node, depth int) error {
	what, countWhat, sizeWhat, item := "array", "array block count", "array block size", n.items.min
	if n.kind == kMap {
		what, countWhat, sizeWhat, item = "map", "map block count", "map block size", satAdd(item, 1) // a key is a string
	}
	done := 0 // items of earlier blocks, for the path
	for {
		count, err := v.long(countWhat)
		if err != nil {
			return err
		}
		if count == 0 {
			return nil
		}
		size := int64(-1)
		if count < 0 {
			if count == math.MinInt64 {
				return v.fail(fmt.Errorf("%w: %s block count %d", errMalformed, what, count))
			}
			count = -count
			if size, err = v.long(sizeWhat); err != nil {
				return err
			}
			if size < 0 {
				return v.fail(fmt.Errorf("%w: the %s block size %d is negative", errBlockSize, what, size))
			}
			// A size past the end is a cut or a lie: the items tell which.
		}
		if item > 0 && count > int64(v.left()/item) {
			return v.truncated("%s block claims %d items of %d or more bytes each, %d bytes are left", what, count, item, v.left())
		}
		if v.items += count; v.items > int64(v.limits.MaxItems) {
			return v.fail(&kafkacodec.LimitError{Limit: "MaxItems", Got: v.items, Max: v.limits.MaxItems})
		}
		start := v.pos
		for i := range int(count) {
			if n.kind == kMap {
				if err := v.length("map key", "map key length"); err != nil {
					return at(err, "["+strconv.Itoa(done+i)+"]")
				}
			}
			if err := v.walk(n.items, depth+1); err != nil {
				return at(err, "["+strconv.Itoa(done+i)+"]")
			}
		}
		if size >= 0 && int64(v.pos-start) != size {
			return v.fail(fmt.Errorf("%w: the %s block says %d bytes, its %d items take %d", errBlockSize, what, size, count, v.pos-start))
		}
		done += int(count)
	}
}
