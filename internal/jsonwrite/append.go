// Package jsonwrite writes the JSON Sluice spells by hand: the partial
// batch responses, window states and metric lines.
package jsonwrite

import (
	"encoding/json"
	"unicode/utf8"
)

// AppendString appends s as a JSON string, as encoding/json would (without
// HTML escaping): the writing half Sluice's responses, window states and
// metric lines share.
func AppendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			b, _ := json.Marshal(s) // rare: escapes or non-ASCII
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
