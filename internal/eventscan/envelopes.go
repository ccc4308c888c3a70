package eventscan

import (
	"time"

	"github.com/sluicehq/sluice/internal/jsonread"
)

// The envelope readers (sns.go, eventbridge.go, s3.go, ddbchange.go) read
// the JSON another AWS service wraps a payload in (an SQS body or Kinesis
// data, bytes of the record's own), by a table of the fields the service
// writes; members they do not name are skipped, as encoding/json skips
// them, and each reader's fuzz target keeps it equal to encoding/json.

// SharedJSON is a JSON value as it lies in the input (the record's own
// bytes, which nothing changes afterwards).
type SharedJSON []byte

// envelope reads data, an object, by table t into v: strings cut from one
// copy of data. Invalid JSON is worded by encoding/json.
func envelope[T any](t *jsonread.Table[T], data []byte, v *T) error {
	r := jsonread.Shared(data)
	err := func() error {
		if null, err := r.Null(); null || err != nil {
			return err
		}
		return t.Read(r, v)
	}()
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return jsonread.SyntaxErr(data, err)
	}
	return r.Saved()
}

// rawField is a field kept as the JSON it is (null: nil).
func rawField[T any](name string, at func(*T) *SharedJSON) jsonread.Field[T] {
	return jsonread.Field[T]{Name: name, Read: func(r *jsonread.Reader, v *T) error {
		raw, err := r.Raw()
		if err != nil {
			return err
		}
		if string(raw) == "null" {
			raw = nil
		}
		*at(v) = SharedJSON(raw)
		return nil
	}}
}

// timeField is a time.Time field read as encoding/json reads one: an RFC
// 3339 string, ParseTime's form without the time package; null leaves it.
func timeField[T any](name string, at func(*T) *time.Time) jsonread.Field[T] {
	return jsonread.Field[T]{Name: name, Read: func(r *jsonread.Reader, v *T) error {
		raw, err := r.Raw()
		if err != nil || string(raw) == "null" {
			return err
		}
		if len(raw) > 2 && raw[0] == '"' {
			if t, ok := ParseTime(string(raw[1 : len(raw)-1])); ok {
				*at(v) = t
				return nil
			}
		}
		var t time.Time
		if err := t.UnmarshalJSON(raw); err != nil {
			r.Fail("%v", err)
			return nil
		}
		*at(v) = t
		return nil
	}}
}

// ParseTime parses the timestamps AWS writes, 2006-01-02T15:04:05Z with
// up to nine digits of fractional seconds, as time.Parse with
// time.RFC3339Nano (and encoding/json's time.Time) parses them; ok is
// false for any other form, which the caller leaves to the time package.
func ParseTime(s string) (t time.Time, ok bool) {
	if len(s) < 20 || len(s) > 30 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return time.Time{}, false
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, day, hour, minute, sec := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2)
	if year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	if day > daysIn(time.Month(month), year) {
		return time.Time{}, false
	}
	nsec := 0
	if f := s[19 : len(s)-1]; f != "" {
		if len(f) < 2 || f[0] != '.' {
			return time.Time{}, false
		}
		if nsec = num(20, len(f)-1); nsec < 0 {
			return time.Time{}, false
		}
		for range 10 - len(f) {
			nsec *= 10
		}
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

func daysIn(m time.Month, year int) int {
	if m == time.February {
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	}
	return 30 + int((m+m/8)%2)
}
