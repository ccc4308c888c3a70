package sam

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The forms sam takes --parameter-overrides in (aws-sam-cli
// samcli/cli/types.py, CfnParameterOverridesType): space-separated
// "ParameterKey=K,ParameterValue=V" pairs, or "K=V" pairs, a value quoted
// in double or single quotes when it holds spaces; or file://FILE, a JSON or YAML
// mapping of names to values. The key pattern is sam's, with ':' added so
// a pseudo parameter (AWS::Region) can be given.
const (
	overrideKey   = `([A-Za-z0-9"':]+)`
	overrideValue = `("(?:\\.|[^"\\]+)*"|'(?:\\.|[^'\\]+)*'|(?:\\.|[^ "\\]+)+)`
)

var (
	overrideLong  = regexp.MustCompile(`(?:ParameterKey=` + overrideKey + `,ParameterValue=` + overrideValue + `)`)
	overrideShort = regexp.MustCompile(`(?: )` + overrideKey + `=` + overrideValue)
)

// ParseOverrides reads --parameter-overrides values (each flag one value,
// as sam takes several) into parameter values; a later one wins.
func ParseOverrides(values []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range values {
		if err := parseOverride(v, out, map[string]bool{}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func parseOverride(v string, out map[string]string, seen map[string]bool) error {
	if path, ok := strings.CutPrefix(v, "file://"); ok {
		abs, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		if seen[abs] {
			return fmt.Errorf("--parameter-overrides %s includes itself", v)
		}
		seen[abs] = true
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("--parameter-overrides %s: %w", v, err)
		}
		doc, err := parse(data)
		if err != nil {
			return fmt.Errorf("--parameter-overrides %s: %w", v, err)
		}
		for _, k := range slices.Sorted(mapKeys(doc.root)) {
			switch x := doc.root[k].(type) {
			case nil:
				out[k] = ""
			case []any:
				var parts []string
				for _, e := range x {
					if s := strings.TrimSpace(scalarString(e)); s != "" {
						parts = append(parts, s)
					}
				}
				out[k] = strings.Join(parts, ",")
			case map[string]any:
				return fmt.Errorf("--parameter-overrides %s: %s is a mapping; a parameter's value is a string or a list", v, k)
			default:
				out[k] = scalarString(x)
			}
		}
		return nil
	}
	s := " " + strings.TrimSpace(v)
	var pairs [][]string
	for _, re := range []*regexp.Regexp{overrideLong, overrideShort} {
		if pairs = re.FindAllStringSubmatch(s, -1); len(pairs) > 0 {
			break
		}
	}
	if len(pairs) == 0 {
		return fmt.Errorf("--parameter-overrides %q is not a valid format: write KEY=VALUE (several separated by spaces), "+
			"ParameterKey=KEY,ParameterValue=VALUE, or file://FILE (a JSON or YAML mapping)", v)
	}
	for _, p := range pairs {
		out[unquote(p[1])] = unquote(p[2])
	}
	return nil
}

// unquote is sam's _unquote_wrapped_quotes.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == s[len(s)-1] && (s[0] == '"' || s[0] == '\'') {
		s = s[1 : len(s)-1]
	}
	return strings.NewReplacer(`\ `, " ", `\"`, `"`, `\'`, "'").Replace(s)
}
