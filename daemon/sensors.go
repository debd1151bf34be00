package daemon

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CPUTemperature reads the CPU temperature in °C from the kernel's thermal
// zones (/sys/class/thermal/thermal_zone*/temp, in millidegrees): the zone
// whose type names the CPU (cpu-thermal on a Raspberry Pi, x86_pkg_temp on
// Intel), else the first readable zone. ok is false when the board exposes
// none.
func (s System) CPUTemperature() (celsius float64, ok bool) {
	zones, _ := filepath.Glob(s.sys("/sys/class/thermal/thermal_zone*"))
	first, firstOK := 0.0, false
	for _, z := range zones {
		milli, err := readInt(filepath.Join(z, "temp"))
		if err != nil {
			continue
		}
		c := float64(milli) / 1000
		typ, _ := os.ReadFile(filepath.Join(z, "type"))
		t := strings.ToLower(strings.TrimSpace(string(typ)))
		if strings.Contains(t, "cpu") || strings.Contains(t, "pkg") || strings.Contains(t, "soc") {
			return c, true
		}
		if !firstOK {
			first, firstOK = c, true
		}
	}
	return first, firstOK
}

// Throttled reads the Raspberry Pi firmware's throttling flags
// (/sys/devices/platform/soc/soc:firmware/get_throttled, a hex bit mask):
// true when under-voltage, frequency capping, throttling or the soft
// temperature limit is active now (bits 0–3). ok is false on other boards.
func (s System) Throttled() (throttled bool, ok bool) {
	for _, p := range []string{
		"/sys/devices/platform/soc/soc:firmware/get_throttled",
		"/sys/devices/platform/soc:firmware/get_throttled",
	} {
		b, err := os.ReadFile(s.sys(p))
		if err != nil {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(string(b)), "0x"), 16, 32)
		if err != nil {
			continue
		}
		return v&0xf != 0, true
	}
	return false, false
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
