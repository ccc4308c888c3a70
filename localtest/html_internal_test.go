package localtest

import (
	"testing"

	"github.com/sluicehq/sluice/localtest/internal/htmlreport"
)

// TestHTMLReportSpellsTheSameWords: the page's derivations read results
// by localtest's words (its fates come from checks, which
// TestChecksSpellTheSameWords keeps equal).
func TestHTMLReportSpellsTheSameWords(t *testing.T) {
	for _, p := range [][2]string{{ResultSuccess, htmlreport.ResultSuccess}, {ResultPartial, htmlreport.ResultPartial}} {
		if p[0] != p[1] {
			t.Errorf("localtest says %q, htmlreport %q", p[0], p[1])
		}
	}
}
