package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestWindowsExample(t *testing.T) {
	rows, writes, rep, err := runLocal(context.Background(), 3000, 1)
	if err != nil {
		t.Fatal(err)
	}
	windows := map[string]bool{}
	orders := 0
	for _, r := range rows {
		windows[r.WindowStart] = true
		orders += r.Orders
	}
	// Order 1235 is bad and given up on; every other order counts once,
	// and the final whose answer was lost does not write its window twice.
	if orders != 2999 || rep.Totals.OnFailure != 1 || writes != len(windows) || len(windows) < 3 {
		t.Fatalf("%d orders in %d windows written %d times; totals %+v", orders, len(windows), writes, rep.Totals)
	}
	var out bytes.Buffer
	if err := local(context.Background(), &out, 500, 300); err != nil || !strings.Contains(out.String(), "each once") {
		t.Fatalf("%v\n%s", err, out.String())
	}
}
