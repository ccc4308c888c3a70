// Package jsonshape compares JSON documents by shape: the set of key paths
// they have, with array elements folded together and the keys of
// Lambda-event maps that hold data (Kafka's records, Kafka headers,
// DynamoDB images and keys) folded to "*". Tests use it to check that an
// event has exactly the fields of an AWS sample.
package jsonshape

import (
	"encoding/json"
	"sort"
	"strings"
)

// Paths lists every key path of doc, sorted.
func Paths(doc []byte) ([]string, error) {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	var walk func(p string, v any)
	walk = func(p string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if p == ".records" || strings.HasSuffix(p, ".headers[]") || strings.HasSuffix(p, "Image") || strings.HasSuffix(p, ".Keys") {
					k = "*"
				}
				set[p+"."+k] = true
				walk(p+"."+k, e)
			}
		case []any:
			for _, e := range v {
				walk(p+"[]", e)
			}
		}
	}
	walk("", v)
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}
