package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCPUTemperaturePrefersCPUZone(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"class/thermal/thermal_zone0/type": "acpitz\n",
		"class/thermal/thermal_zone0/temp": "27800\n",
		"class/thermal/thermal_zone1/type": "cpu-thermal\n",
		"class/thermal/thermal_zone1/temp": "61234\n",
	})
	c, ok := System{SysFSRoot: root}.CPUTemperature()
	if !ok || c != 61.234 {
		t.Errorf("CPUTemperature = %v, %v; want 61.234", c, ok)
	}
	writeFiles(t, root, map[string]string{"class/thermal/thermal_zone1/temp": "garbage"})
	if c, ok := (System{SysFSRoot: root}).CPUTemperature(); !ok || c != 27.8 {
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
		root := t.TempDir()
		writeFiles(t, root, map[string]string{"devices/platform/soc/soc:firmware/get_throttled": c.val})
		got, ok := System{SysFSRoot: root}.Throttled()
		if !ok || got != c.want {
			t.Errorf("%q: %v, %v; want %v", c.val, got, ok, c.want)
		}
	}
	if _, ok := (System{SysFSRoot: t.TempDir()}).Throttled(); ok {
		t.Error("not a Pi: ok")
	}
}
