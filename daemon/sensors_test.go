package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCPUTemperaturePrefersCPUZone(t *testing.T) {
	sys := fakeSystem(t, map[string]string{
		"sys/class/thermal/thermal_zone0/type": "acpitz\n",
		"sys/class/thermal/thermal_zone0/temp": "27800\n",
		"sys/class/thermal/thermal_zone1/type": "cpu-thermal\n",
		"sys/class/thermal/thermal_zone1/temp": "61234\n",
	})
	c, ok := sys.CPUTemperature()
	if !ok || c != 61.234 {
		t.Errorf("CPUTemperature = %v, %v; want 61.234", c, ok)
	}
	if err := os.WriteFile(filepath.Join(sys.SysFSRoot, "class/thermal/thermal_zone1/temp"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, ok := sys.CPUTemperature(); !ok || c != 27.8 {
		t.Errorf("fallback zone: %v, %v; want 27.8", c, ok)
	}
	if _, ok := (System{SysFSRoot: t.TempDir()}).CPUTemperature(); ok {
		t.Error("no zones: ok")
	}
}

func TestThrottled(t *testing.T) {
	for _, c := range []struct {
		val  string
		want bool
	}{{"0x0\n", false}, {"0x50000\n", false}, {"0x50005\n", true}, {"0x4\n", true}} {
		sys := fakeSystem(t, map[string]string{"sys/devices/platform/soc/soc:firmware/get_throttled": c.val})
		got, ok := sys.Throttled()
		if !ok || got != c.want {
			t.Errorf("%q: %v, %v; want %v", c.val, got, ok, c.want)
		}
	}
	if _, ok := (System{SysFSRoot: t.TempDir()}).Throttled(); ok {
		t.Error("not a Pi: ok")
	}
}
