package jsonread

import "bytes"

// A Field is one member of an object shape: its key, and how its value is
// read into the Go value of the object.
type Field[T any] struct {
	Name string
	Read func(r *Reader, v *T) error
	str  func(*T) *string // a string field's place (Str): read without a call through Read
}

// A Table is the fields of one object shape: the one place a shape's keys
// are spelled. Members it does not name are skipped.
type Table[T any] struct {
	want   string // "an object" spelled for errors
	fields []Field[T]
	keys   []string // the fields' names
	names  [][]byte // the same, for bytes.EqualFold
	plain  []bool   // the name can be matched by Reader.knownKey
}

// NewTable returns the table of fields; what names the object for errors.
func NewTable[T any](what string, fields ...Field[T]) *Table[T] {
	t := &Table[T]{want: what, fields: fields}
	for _, f := range fields {
		t.keys = append(t.keys, f.Name)
		t.names = append(t.names, []byte(f.Name))
		t.plain = append(t.plain, plainName(f.Name))
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

// plainName reports whether a key can be matched by its bytes in the
// input: printable ASCII without a quote or a backslash.
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// known returns the index of the name the next key spells exactly,
// trying from hint on and then from the start, -1 if none does. plain
// says which names can be matched by their bytes.
func known(r *Reader, names []string, plain []bool, hint int) int {
	n := len(names)
	for k := 0; k < n; k++ {
		i := hint + k
		if i >= n {
			i -= n
		}
		if plain[i] && r.knownKey(names[i]) {
			return i
		}
	}
	return -1
}

// match finds the field of the next member and consumes its key and
// colon: by the key's bytes, the name that followed the previous one in
// the last record first (next[prev]), then the others; else the key is
// read and looked up (an unknown key, an escaped one, one that matches
// only case-insensitively). prev is updated to the field found, and the
// order learnt. -1 means no field names the key.
func match(r *Reader, names []string, plain []bool, folded [][]byte, next []int, prev *int) (int, error) {
	r.ws()
	h := next[*prev]
	i := -1
	if h < len(names) && plain[h] && r.knownKey(names[h]) {
		i = h
	} else if i = known(r, names, plain, h); i >= 0 {
		next[*prev] = i
	} else {
		key, err := r.memberKey()
		if err != nil {
			return -1, err
		}
		i = lookup(key, names, folded)
	}
	if i >= 0 {
		*prev = i + 1
	}
	return i, nil
}

// lookup finds the name of key: exactly, else case-insensitively, as
// encoding/json matches keys.
func lookup(key []byte, names []string, folded [][]byte) int {
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	for i, n := range folded {
		if bytes.EqualFold(key, n) { // encoding/json's folding is bytes.EqualFold
			return i
		}
	}
	return -1
}

// Read reads an object into *v: each member a field names goes to its
// Read, every other is skipped. The caller checks for null first. A value
// that is not an object is a *TypeError, recorded and skipped.
//
// Members mostly come in the same order in every record: each key is
// matched by its bytes, the one that followed the same key in the record
// before first (match), and only a key that is none of the names is read.
func (t *Table[T]) Read(r *Reader, v *T) error {
	more, err := r.openObject(t.want)
	if !more || err != nil {
		return err
	}
	next, prev := r.orderOf(t, len(t.fields)), 0
	for more && err == nil {
		var i int
		if i, err = match(r, t.keys, t.plain, t.names, next, &prev); err != nil {
			return err
		}
		switch {
		case i < 0:
			err = r.Skip()
		case t.fields[i].str != nil:
			err = r.StringInto(t.fields[i].str(v))
		default:
			err = t.fields[i].Read(r, v)
		}
		if err == nil {
			more, err = r.nextMember()
		}
	}
	return err
}

// Str is a string field.
func Str[T any](name string, at func(*T) *string) Field[T] {
	return Field[T]{Name: name, Read: func(r *Reader, v *T) error { return r.StringInto(at(v)) }, str: at}
}

// Int64 is an integer field.
func Int64[T any](name string, at func(*T) *int64) Field[T] {
	return Field[T]{Name: name, Read: func(r *Reader, v *T) error { return r.Int64Into(at(v)) }}
}

// Obj is an object field decoded by table t into the value at(v); null
// leaves it as it was, as encoding/json leaves a struct.
func Obj[T, U any](name string, t *Table[U], at func(*T) *U) Field[T] {
	return Field[T]{Name: name, Read: func(r *Reader, v *T) error {
		if null, err := r.Null(); null || err != nil {
			return err
		}
		return t.Read(r, at(v))
	}}
}

// Ptr is a pointer-to-struct field decoded by table t: null makes it nil,
// an object decodes into the struct it points to (a new one when nil).
func Ptr[T, U any](name string, t *Table[U], at func(*T) **U) Field[T] {
	return Field[T]{Name: name, Read: func(r *Reader, v *T) error {
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

// Names is a set of keys an object of strings often holds (StringMap):
// a key spelled as one of them costs no allocation and is matched by its
// bytes.
type Names struct {
	keys  []string
	plain []bool
}

// NewNames returns the set of keys.
func NewNames(keys ...string) *Names {
	n := &Names{keys: keys}
	for _, k := range keys {
		n.plain = append(n.plain, plainName(k))
	}
	return n
}

// StringMap reads an object of strings into *m as encoding/json fills a
// map[string]string: null makes it nil; an object adds to it (made when
// nil, with room for size), null values as "". A key of names (which may
// be nil) is spelled by names' own string.
func StringMap(r *Reader, m *map[string]string, size int, names *Names) error {
	if null, err := r.Null(); null || err != nil {
		*m = nil
		return err
	}
	if r.Peek() != '{' {
		_, err := r.openObject("an object of strings") // records the mismatch
		return err
	}
	if *m == nil {
		*m = make(map[string]string, size)
	}
	more, err := r.openObject("an object of strings")
	if !more || err != nil {
		return err
	}
	none := [1]int{}
	keys, plain, next, prev := []string(nil), []bool(nil), none[:], 0
	if names != nil {
		keys, plain, next = names.keys, names.plain, r.orderOf(names, len(names.keys))
	}
	for more && err == nil {
		var i int
		if i, err = match(r, keys, plain, nil, next, &prev); err != nil {
			return err
		}
		k := ""
		if i >= 0 {
			k = keys[i]
		} else if r.strs != nil {
			k = r.Gather(r.key)
		} else {
			k = string(r.key)
		}
		var s string
		if err = r.StringInto(&s); err != nil {
			return err
		}
		(*m)[k] = s
		more, err = r.nextMember()
	}
	return err
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
