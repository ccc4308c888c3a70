// Package windowstate is the format in which a tumbling window handler
// (handlers.NewKinesisWindow, handlers.NewDynamoDBWindow) keeps its
// aggregate in Lambda's window state between invokes: JSON, gzipped when
// that is shorter, under a format version.
package windowstate

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/internal/jsonwrite"
)

// The window state format. Lambda's state is a map of strings; Sluice
// writes the aggregate into it as
//
//	{"sluice":"1","json":"<the aggregate as JSON>"}
//
// or, when it is shorter (large aggregates, which repeat their keys),
//
//	{"sluice":"1","gz":"<the aggregate's JSON, gzipped, in base64>"}
//
// "sluice" is the format version: a handler refuses a state of a version
// it does not know, or a state it did not write, rather than fold into
// the wrong thing.
const (
	versionKey = "sluice"
	version    = "1"
	jsonKey    = "json"
	gzipKey    = "gz"
	// gzipFrom is the JSON size from which compression is tried.
	gzipFrom = 512
)

// Encode encodes s as the state map's JSON.
func Encode[S any](s S) ([]byte, error) {
	j, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding the window aggregate %T as JSON: %w", s, err)
	}
	key, val := jsonKey, string(j)
	if len(j) >= gzipFrom {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
		zw.Write(j)
		zw.Close()
		if z := base64.StdEncoding.EncodeToString(b.Bytes()); len(z) < len(j) {
			key, val = gzipKey, z
		}
	}
	out := make([]byte, 0, len(val)+len(val)/8+32)
	out = append(out, `{"`+versionKey+`":"`+version+`","`...)
	out = append(out, key...)
	out = append(out, `":`...)
	out = jsonwrite.AppendString(out, val)
	return append(out, '}'), nil
}

// Decode decodes a state map written by Encode. An
// empty or missing state (a window's first invoke) is S's zero value.
func Decode[S any](state map[string]string) (S, error) {
	var s S
	if len(state) == 0 {
		return s, nil
	}
	v, ok := state[versionKey]
	if !ok {
		keys := make([]string, 0, len(state))
		for k := range state {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return s, fmt.Errorf("sluice: the window state (keys %s) was not written by a Sluice window handler: "+
			"a window handler owns its mapping's state; was the function changed in the middle of a window?", strings.Join(keys, ", "))
	}
	if v != version {
		return s, fmt.Errorf("sluice: the window state has format version %q, and this handler reads version %q only: "+
			"it was written by another version of Sluice; deploy that version until the window closes", v, version)
	}
	var j []byte
	if z, ok := state[gzipKey]; ok {
		raw, err := base64.StdEncoding.DecodeString(z)
		if err != nil {
			return s, fmt.Errorf("sluice: the window state is damaged (%q is not base64): %w", gzipKey, err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err == nil {
			j, err = io.ReadAll(zr)
		}
		if err != nil {
			return s, fmt.Errorf("sluice: the window state is damaged (%q is not gzip): %w", gzipKey, err)
		}
	} else if t, ok := state[jsonKey]; ok {
		j = []byte(t)
	} else {
		return s, fmt.Errorf("sluice: the window state is damaged: it has neither %q nor %q", jsonKey, gzipKey)
	}
	if err := json.Unmarshal(j, &s); err != nil {
		return s, fmt.Errorf("sluice: the window state does not decode into %T (was the aggregate type changed in the middle of a window?): %w", s, err)
	}
	return s, nil
}
