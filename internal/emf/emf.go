// Package emf writes CloudWatch Embedded Metric Format lines
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html):
// one JSON object per line whose "_aws" directive declares the namespace,
// the dimension set and the metrics, followed by the dimensions' and the
// metrics' values. CloudWatch Logs turns each line into metrics; no SDK
// call is made. The handlers' metrics (handlers.WithMetrics) are its one
// user: they choose the dimensions and the metrics, this package only
// spells them. A line is built by hand into the caller's buffer, without
// allocating, from the parts that do not change precomputed by NewFormat.
package emf

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/jsonwrite"
)

// A Metric is a metric a line declares: its name and CloudWatch unit.
type Metric struct{ Name, Unit string }

// A Dim is one dimension of a line: its name and value.
type Dim struct{ Name, Value string }

// A Value is one metric's value in a line: an integer (Int) or a number
// with a fraction (Float).
type Value struct {
	i     int64
	f     float64
	float bool
}

// Int is an integer value.
func Int(v int64) Value { return Value{i: v} }

// Float is a value written as strconv.FormatFloat(v, 'f', -1, 64).
func Float(v float64) Value { return Value{f: v, float: true} }

// ValidNamespace checks a CloudWatch namespace: 1 to 255 characters,
// letters, digits and . - _ / # : space, not starting with "AWS/".
func ValidNamespace(ns string) error {
	if ns == "" || len(ns) > 255 {
		return fmt.Errorf("metrics namespace %q: must be 1 to 255 characters", ns)
	}
	if strings.HasPrefix(ns, "AWS/") {
		return fmt.Errorf("metrics namespace %q: names starting with AWS/ are reserved for AWS services", ns)
	}
	for _, r := range ns {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_/#: ", r)
		if !ok {
			return fmt.Errorf("metrics namespace %q: %q is not allowed (letters, digits and . - _ / # : space are)", ns, r)
		}
	}
	return nil
}

// A Format is what the lines of one writer share: the namespace and the
// metrics, in order, of which the last is optional (a line without a value
// for it does not declare it).
type Format struct {
	metrics []Metric
	// head is the start of the directive, up to and including
	// `"Dimensions":[[`; decl the rest after the dimension names, without
	// the last metric, declAll with it.
	head, decl, declAll string
}

// NewFormat returns the Format of lines in namespace ns (checked with
// ValidNamespace by the caller) declaring metrics.
func NewFormat(ns string, metrics []Metric) *Format {
	head := []byte(`{"Namespace":`)
	head = jsonwrite.AppendString(head, ns)
	f := &Format{metrics: metrics, head: string(append(head, `,"Dimensions":[[`...))}
	decl := func(n int) string {
		b := []byte(`]],"Metrics":[`)
		for i, m := range metrics[:n] {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"Name":"`+m.Name+`","Unit":"`+m.Unit+`"}`...)
		}
		return string(append(b, "]}]}"...))
	}
	f.decl, f.declAll = decl(len(metrics)-1), decl(len(metrics))
	return f
}

// Head is the start of the lines' directive, which names the namespace.
func (f *Format) Head() string { return f.head }

// Append appends one line, with its newline, to b: the timestamp ts, the
// dimension set dims (names and values) and vals, the values of the
// metrics in order; vals holds all of them or all but the last.
func (f *Format) Append(b []byte, ts time.Time, dims []Dim, vals []Value) []byte {
	b = append(b, `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, ts.UnixMilli(), 10)
	b = append(b, `,"CloudWatchMetrics":[`...)
	b = append(b, f.head...)
	for i := range dims {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonwrite.AppendString(b, dims[i].Name)
	}
	if len(vals) < len(f.metrics) {
		b = append(b, f.decl...)
	} else {
		b = append(b, f.declAll...)
	}
	for i := range dims {
		b = append(b, ',')
		b = jsonwrite.AppendString(b, dims[i].Name)
		b = append(b, ':')
		b = jsonwrite.AppendString(b, dims[i].Value)
	}
	for i, v := range vals {
		b = append(b, `,"`...)
		b = append(b, f.metrics[i].Name...)
		b = append(b, `":`...)
		if v.float {
			b = strconv.AppendFloat(b, v.f, 'f', -1, 64)
		} else {
			b = strconv.AppendInt(b, v.i, 10)
		}
	}
	return append(b, "}\n"...)
}
