package sampler

import (
	"math"
	"testing"
)

func TestExpfAccuracy(t *testing.T) {
	if expf(0) != 1 {
		t.Fatalf("expf(0) = %v, want 1", expf(0))
	}
	if got := expf(float32(math.Inf(-1))); got != 0 {
		t.Fatalf("expf(-Inf) = %v", got)
	}
	if got := expf(-200); got != 0 {
		t.Fatalf("expf(-200) = %v", got)
	}
	worst := 0.0
	prev := float32(0)
	for x := float32(-87.3); x <= 0; x += 0.00037 {
		got := float64(expf(x))
		want := math.Exp(float64(x))
		if rel := math.Abs(got-want) / want; rel > worst {
			worst = rel
		}
		if float32(got) < prev {
			t.Fatalf("expf not monotone at %v", x)
		}
		prev = float32(got)
	}
	if worst > 4e-7 {
		t.Fatalf("expf max relative error %g", worst)
	}
	t.Logf("expf max relative error %g", worst)
}
