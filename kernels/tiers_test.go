package kernels

import (
	"os"
	"strings"
	"testing"
)

// forEachTier runs f as a subtest for each tier this CPU can run, named after
// it (TestTwinMatVec/AVX2, TestTwinMatVec/generic), with the kernels switched
// to that tier, and restores the tier chosen at start-up afterwards. The
// tier is package state that every kernel reads: tests that call forEachTier
// must not run in parallel with any test (none in this package does).
func forEachTier(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	start := active
	defer func() { active = start }()
	for _, ti := range tiers {
		if !ti.available {
			t.Logf("tier %s: this CPU cannot run it", ti.name)
			continue
		}
		active = ti.tier
		t.Run(ti.name, f)
	}
}

// tiersEnv names the variable that lists, comma-separated and best first, the
// tiers a test run must be able to run (make cross sets it for each emulated
// CPU), so that a machine or emulator that lacks a tier fails TestTiers
// rather than leaving that tier's kernels untested.
const tiersEnv = "EDGELLM_TEST_TIERS"

// TestTiers checks the registry: the tiers ordered best first and ending
// with the generic tier, which every CPU can run; a tier available only if
// the ones below it are; the start-up tier the best available one; and, with
// EDGELLM_TEST_TIERS set, exactly the listed tiers available.
func TestTiers(t *testing.T) {
	if len(tiers) == 0 {
		t.Fatal("no tiers registered")
	}
	last := tiers[len(tiers)-1]
	if last.tier != tierGeneric || last.name != "generic" || !last.available {
		t.Errorf("last tier %+v, want the available generic tier", last)
	}
	var names []string
	for i, ti := range tiers {
		if i > 0 && ti.tier >= tiers[i-1].tier {
			t.Errorf("tier %s (%d) listed after %s (%d): not best first", ti.name, ti.tier, tiers[i-1].name, tiers[i-1].tier)
		}
		if i > 0 && tiers[i-1].available && !ti.available {
			t.Errorf("tier %s available but %s below it is not", tiers[i-1].name, ti.name)
		}
		if ti.available {
			names = append(names, ti.name)
		}
	}
	if want := bestTier(tiers); active != want {
		t.Errorf("active tier %d at start-up, want the best available %d", active, want)
	}
	got := strings.Join(names, ",")
	t.Logf("tiers this CPU can run: %s", got)
	if want, ok := os.LookupEnv(tiersEnv); ok && got != want {
		t.Errorf("this CPU can run the tiers %s, %s=%s", got, tiersEnv, want)
	}
}
