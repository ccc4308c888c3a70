package jsonread

import "bytes"

// A Field is one member of an object shape: its key, and how its value is
// read into the Go value of the object.
type Field[T any] struct {
	Name string
	Read func(r *Reader, v *T) error
}

// A Table is the fields of one object shape: the one place a shape's keys
// are spelled. Members it does not name are skipped.
type Table[T any] struct {
	want   string // "an object" spelled for errors
	fields []Field[T]
	names  [][]byte // the fields' names, for bytes.EqualFold
}

// NewTable returns the table of fields; what names the object for errors.
func NewTable[T any](what string, fields ...Field[T]) *Table[T] {
	t := &Table[T]{want: what, fields: fields}
	for _, f := range fields {
		t.names = append(t.names, []byte(f.Name))
	}
	return t
}

// Names returns the fields' keys, in the table's order.
func (t *Table[T]) Names() []string {
	out := make([]string, len(t.fields))
	for i, f := range t.fields {
		out[i] = f.Name
	}
	return out
}

// lookup finds the field of key: exactly, trying hint first (members mostly
// come in the same order in every record), else case-insensitively, as
// encoding/json matches keys.
func (t *Table[T]) lookup(key []byte, hint int) int {
	fs := t.fields
	if hint < len(fs) && string(key) == fs[hint].Name {
		return hint
	}
	for i := range fs {
		if string(key) == fs[i].Name {
			return i
		}
	}
	for i, n := range t.names {
		if bytes.EqualFold(key, n) { // encoding/json's folding is bytes.EqualFold
			return i
		}
	}
	return -1
}

// Read reads an object into *v: each member a field names goes to its
// Read, every other is skipped. The caller checks for null first. A value
// that is not an object is a *TypeError, recorded and skipped.
func (t *Table[T]) Read(r *Reader, v *T) error {
	hint := 0
	return r.Object(t.want, func(key []byte) error {
		i := t.lookup(key, hint)
		if i < 0 {
			return r.Skip()
		}
		hint = i + 1
		return t.fields[i].Read(r, v)
	})
}

// Str is a string field.
func Str[T any](name string, at func(*T) *string) Field[T] {
	return Field[T]{name, func(r *Reader, v *T) error { return r.StringInto(at(v)) }}
}

// Int64 is an integer field.
func Int64[T any](name string, at func(*T) *int64) Field[T] {
	return Field[T]{name, func(r *Reader, v *T) error { return r.Int64Into(at(v)) }}
}

// Obj is an object field decoded by table t into the value at(v); null
// leaves it as it was, as encoding/json leaves a struct.
func Obj[T, U any](name string, t *Table[U], at func(*T) *U) Field[T] {
	return Field[T]{name, func(r *Reader, v *T) error {
		if null, err := r.Null(); null || err != nil {
			return err
		}
		return t.Read(r, at(v))
	}}
}

// Ptr is a pointer-to-struct field decoded by table t: null makes it nil,
// an object decodes into the struct it points to (a new one when nil).
func Ptr[T, U any](name string, t *Table[U], at func(*T) **U) Field[T] {
	return Field[T]{name, func(r *Reader, v *T) error {
		p := at(v)
		if null, err := r.Null(); null || err != nil {
			*p = nil
			return err
		}
		if r.Peek() != '{' {
			return t.Read(r, new(U)) // records the mismatch, leaves *p
		}
		if *p == nil {
			*p = new(U)
		}
		return t.Read(r, *p)
	}}
}

// StringMap reads an object of strings into *m as encoding/json fills a
// map[string]string: null makes it nil; an object adds to it (made when
// nil), null values as "". names, when not nil, gives the constant
// spelling of a key it knows, so common keys cost no allocation.
func StringMap(r *Reader, m *map[string]string, size int, names func([]byte) string) error {
	if null, err := r.Null(); null || err != nil {
		*m = nil
		return err
	}
	if r.Peek() != '{' {
		return r.Object("an object of strings", nil) // records the mismatch
	}
	if *m == nil {
		*m = make(map[string]string, size)
	}
	return r.Object("an object of strings", func(key []byte) error {
		k := ""
		if names != nil {
			k = names(key)
		}
		if k == "" {
			k = string(key)
		}
		var s string
		if err := r.StringInto(&s); err != nil {
			return err
		}
		(*m)[k] = s
		return nil
	})
}

// StringSlice reads an array of strings into *s as encoding/json fills a
// []string: null makes it nil, [] an empty slice.
func StringSlice(r *Reader, s *[]string) error {
	if null, err := r.Null(); null || err != nil {
		*s = nil
		return err
	}
	out := (*s)[:0]
	if r.Peek() == '[' && out == nil {
		out = []string{}
	}
	err := r.Array("an array of strings", func(i int) error {
		var e string
		if i < len(*s) {
			e = (*s)[i]
		}
		if err := r.StringInto(&e); err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if err == nil && out != nil {
		*s = out
	}
	return err
}
