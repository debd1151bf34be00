package mqtt

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// What Home Assistant's MQTT documentation says a device discovery payload
// is (https://www.home-assistant.io/integrations/mqtt/#device-discovery-payload,
// the sensor, binary sensor, text and button pages), written out so the
// payloads are checked against it rather than against themselves.
var (
	// Abbreviations HA expands (abbreviations.py); each payload key is a
	// full name or one of these.
	haAbbreviations = map[string]string{"dev": "device", "o": "origin", "cmps": "components", "p": "platform",
		"avty": "availability", "uniq_id": "unique_id", "stat_t": "state_topic", "val_tpl": "value_template",
		"cmd_t": "command_topic", "dev_cla": "device_class", "stat_cla": "state_class", "unit_of_meas": "unit_of_measurement",
		"ent_cat": "entity_category", "ic": "icon", "json_attr_t": "json_attributes_topic", "ops": "options",
		"pl_prs": "payload_press", "pl_avail": "payload_available", "pl_not_avail": "payload_not_available", "t": "topic"}
	haDeviceAbbreviations = map[string]string{"ids": "identifiers", "mf": "manufacturer", "mdl": "model",
		"sw": "sw_version", "hw": "hw_version", "cu": "configuration_url", "sn": "serial_number", "sa": "suggested_area"}
	haOriginAbbreviations = map[string]string{"sw": "sw_version", "url": "support_url"}

	// The root of a device payload: device, origin and components are
	// required; the shared options are inherited by every component that
	// does not set them.
	haDeviceRequired = []string{"device", "origin", "components"}
	haSharedOptions  = []string{"availability", "availability_mode", "availability_template", "availability_topic",
		"payload_available", "payload_not_available", "command_topic", "state_topic", "qos", "encoding"}
	haDeviceInfoOptions = []string{"identifiers", "connections", "name", "manufacturer", "model", "model_id",
		"sw_version", "hw_version", "serial_number", "suggested_area", "configuration_url", "via_device"}
	haOriginOptions = []string{"name", "sw_version", "support_url"}

	// Options every entity platform has, and each platform's own.
	haEntityOptions = []string{"platform", "availability", "availability_mode", "availability_template",
		"availability_topic", "payload_available", "payload_not_available", "default_entity_id", "device",
		"enabled_by_default", "encoding", "entity_category", "entity_picture", "icon", "json_attributes_template",
		"json_attributes_topic", "name", "origin", "qos", "unique_id"}
	haPlatformOptions = map[string][]string{
		"sensor": {"state_topic", "value_template", "device_class", "state_class", "unit_of_measurement",
			"suggested_display_precision", "expire_after", "force_update", "last_reset_value_template", "options"},
		"binary_sensor": {"state_topic", "value_template", "device_class", "payload_on", "payload_off", "off_delay",
			"expire_after", "force_update"},
		"text":   {"command_topic", "command_template", "max", "min", "mode", "pattern", "retain", "state_topic", "value_template"},
		"button": {"command_topic", "command_template", "payload_press", "retain", "device_class"},
	}
	haPlatformRequired = map[string][]string{
		"sensor":        {"state_topic"},
		"binary_sensor": {"state_topic"},
		"text":          {"command_topic"},
		"button":        {"command_topic"},
	}
	haEntityCategories = []string{"config", "diagnostic"}
	haStateClasses     = []string{"measurement", "measurement_angle", "total", "total_increasing"}
	haSensorClasses    = []string{"apparent_power", "aqi", "area", "atmospheric_pressure", "battery",
		"blood_glucose_concentration", "carbon_dioxide", "carbon_monoxide", "conductivity", "current", "data_rate",
		"data_size", "date", "distance", "duration", "energy", "energy_distance", "energy_storage", "enum", "frequency",
		"gas", "humidity", "illuminance", "irradiance", "moisture", "monetary", "nitrogen_dioxide", "nitrogen_monoxide",
		"nitrous_oxide", "ozone", "ph", "pm1", "pm10", "pm25", "power", "power_factor", "precipitation",
		"precipitation_intensity", "pressure", "reactive_energy", "reactive_power", "signal_strength", "sound_pressure",
		"speed", "sulphur_dioxide", "temperature", "timestamp", "volatile_organic_compounds",
		"volatile_organic_compounds_parts", "voltage", "volume", "volume_flow_rate", "volume_storage", "water", "weight",
		"wind_direction", "wind_speed"}
	haBinarySensorClasses = []string{"battery", "battery_charging", "carbon_monoxide", "cold", "connectivity", "door",
		"garage_door", "gas", "heat", "light", "lock", "moisture", "motion", "moving", "occupancy", "opening", "plug",
		"power", "presence", "problem", "running", "safety", "smoke", "sound", "tamper", "update", "vibration", "window"}
	// Units HA accepts for the device classes used here.
	haUnits = map[string][]string{
		"data_size":   {"bit", "kbit", "Mbit", "Gbit", "B", "kB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"},
		"temperature": {"°C", "°F", "K"},
	}
	// HA's discovery topic pattern (homeassistant/components/mqtt/discovery.py).
	haTopicRE = regexp.MustCompile(`^homeassistant/(?P<component>\w+)/(?:(?P<node_id>[a-zA-Z0-9_-]+)/)?(?P<object_id>[a-zA-Z0-9_-]+)/config$`)
)

// expand replaces abbreviated keys by their full names, as HA does.
func expand(t *testing.T, m map[string]any, abbr map[string]string) {
	t.Helper()
	for k, v := range m {
		if full, ok := abbr[k]; ok && full != k {
			if _, dup := m[full]; dup {
				t.Errorf("both %q and its abbreviation %q", full, k)
			}
			delete(m, k)
			m[full] = v
		}
	}
}

func testDiscovery(t *testing.T, cpu, throttled bool) (Discovery, map[string]any) {
	t.Helper()
	tp, err := NewTopics("edgellm", "Kitchen-Pi")
	if err != nil {
		t.Fatal(err)
	}
	d := Discovery{Prefix: "homeassistant", Topics: tp, Version: "0.3.0", Model: "qwen2.5-0.5b",
		CPUTemperature: cpu, Throttled: throttled}
	msg, err := d.Config()
	if err != nil {
		t.Fatal(err)
	}
	if msg.Topic != "homeassistant/device/Kitchen-Pi/config" || !msg.Retain {
		t.Fatalf("config on %q, retained %v", msg.Topic, msg.Retain)
	}
	var p map[string]any
	if err := json.Unmarshal(msg.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return d, p
}

// haComponents checks a device payload the way HA reads it and returns its
// components with the shared options merged in, by key.
func haComponents(t *testing.T, p map[string]any) map[string]map[string]any {
	t.Helper()
	expand(t, p, haAbbreviations)
	for _, k := range haDeviceRequired {
		if _, ok := p[k]; !ok {
			t.Fatalf("device payload lacks %q", k)
		}
	}
	for k := range p {
		if !slices.Contains(haDeviceRequired, k) && !slices.Contains(haSharedOptions, k) {
			t.Errorf("root option %q is not a shared option of a device payload", k)
		}
	}
	block := func(name string, abbr map[string]string, allowed []string) map[string]any {
		m, _ := p[name].(map[string]any)
		expand(t, m, abbr)
		for k := range m {
			if !slices.Contains(allowed, k) {
				t.Errorf("%s option %q is not in HA's %s schema", name, k, name)
			}
		}
		return m
	}
	dev := block("device", haDeviceAbbreviations, haDeviceInfoOptions)
	if ids, _ := dev["identifiers"].([]any); len(ids) == 0 || dev["name"] == nil {
		t.Errorf("device needs identifiers and a name: %v", dev)
	}
	origin := block("origin", haOriginAbbreviations, haOriginOptions)
	if origin["name"] == nil {
		t.Errorf("origin needs a name: %v", origin)
	}

	cmps, _ := p["components"].(map[string]any)
	out := map[string]map[string]any{}
	uniqueIDs := map[string]bool{}
	for key, v := range cmps {
		c, _ := v.(map[string]any)
		expand(t, c, haAbbreviations)
		for _, k := range haSharedOptions {
			if _, ok := c[k]; !ok && p[k] != nil {
				c[k] = p[k]
			}
		}
		platform, _ := c["platform"].(string)
		own, known := haPlatformOptions[platform]
		if !known {
			t.Errorf("%s: platform %q", key, platform)
			continue
		}
		if len(c) < 2 {
			t.Errorf("%s: a component needs an option besides the platform", key)
		}
		for k := range c {
			// Shared options a platform does not have are ignored there.
			if !slices.Contains(haEntityOptions, k) && !slices.Contains(own, k) && !slices.Contains(haSharedOptions, k) {
				t.Errorf("%s: %q is not a %s option", key, k, platform)
			}
		}
		for _, k := range append([]string{"unique_id", "name", "default_entity_id"}, haPlatformRequired[platform]...) {
			if v, ok := c[k]; !ok || v == "" || v == nil {
				t.Errorf("%s: required %q missing", key, k)
			}
		}
		if _, ok := c["object_id"]; ok {
			t.Errorf("%s: object_id is gone since HA 2026.4; use default_entity_id", key)
		}
		if id, _ := c["unique_id"].(string); uniqueIDs[id] {
			t.Errorf("%s: unique_id %q reused", key, id)
		} else {
			uniqueIDs[id] = true
		}
		if cat, ok := c["entity_category"]; ok && !slices.Contains(haEntityCategories, cat.(string)) {
			t.Errorf("%s: entity_category %v", key, cat)
		}
		if q, ok := c["qos"]; ok && q != float64(0) && q != float64(1) && q != float64(2) {
			t.Errorf("%s: qos %v", key, q)
		}
		dc, _ := c["device_class"].(string)
		sc, _ := c["state_class"].(string)
		unit, _ := c["unit_of_measurement"].(string)
		switch platform {
		case "sensor":
			if dc != "" && !slices.Contains(haSensorClasses, dc) {
				t.Errorf("%s: sensor device_class %q", key, dc)
			}
			if sc != "" && !slices.Contains(haStateClasses, sc) {
				t.Errorf("%s: state_class %q", key, sc)
			}
			if units, ok := haUnits[dc]; ok && !slices.Contains(units, unit) {
				t.Errorf("%s: %q is not a %s unit", key, unit, dc)
			}
			if dc == "temperature" && sc != "" && sc != "measurement" {
				t.Errorf("%s: temperature allows state_class measurement only", key)
			}
			// An enum has options and neither a state class nor a unit;
			// options need the enum class; a timestamp has no state class
			// or unit.
			_, hasOptions := c["options"]
			if dc == "enum" && (!hasOptions || sc != "" || unit != "") || hasOptions && dc != "enum" {
				t.Errorf("%s: device_class %q, options %v, state_class %q, unit %q", key, dc, c["options"], sc, unit)
			}
			if dc == "timestamp" && (sc != "" || unit != "") {
				t.Errorf("%s: a timestamp has no state_class or unit", key)
			}
			if prec, ok := c["suggested_display_precision"].(float64); ok && (prec < 0 || prec != float64(int(prec))) {
				t.Errorf("%s: suggested_display_precision %v", key, prec)
			}
		case "binary_sensor":
			if dc != "" && !slices.Contains(haBinarySensorClasses, dc) {
				t.Errorf("%s: binary_sensor device_class %q", key, dc)
			}
		case "text":
			if mode, ok := c["mode"]; ok && mode != "text" && mode != "password" {
				t.Errorf("%s: text mode %v", key, mode)
			}
			if max, ok := c["max"].(float64); ok && (max < 1 || max > HAMaxState) {
				t.Errorf("%s: text max %v", key, max)
			}
		case "button":
			if dc != "" && !slices.Contains([]string{"identify", "restart", "update"}, dc) {
				t.Errorf("%s: button device_class %q", key, dc)
			}
		}
		out[key] = c
	}
	return out
}

func TestDiscoveryConfigHasWhatHARequires(t *testing.T) {
	d, p := testDiscovery(t, true, true)
	cs := haComponents(t, p)

	dev := p["device"].(map[string]any)
	ids, _ := dev["identifiers"].([]any)
	if len(ids) != 1 || ids[0] != "edgellm_Kitchen-Pi" || dev["name"] != "edgellm Kitchen-Pi" || dev["model"] != "qwen2.5-0.5b" ||
		dev["manufacturer"] != "edgellm" || dev["sw_version"] != "0.3.0" {
		t.Errorf("device %v", dev)
	}
	if _, ok := dev["configuration_url"]; ok {
		t.Errorf("configuration_url without one configured: %v", dev)
	}
	origin := p["origin"].(map[string]any)
	if origin["name"] != "edgellm" || origin["sw_version"] != "0.3.0" || origin["support_url"] != DefaultSupportURL {
		t.Errorf("origin %v", origin)
	}

	statusFields := map[string]bool{}
	st := reflect.TypeOf(Status{})
	for i := 0; i < st.NumField(); i++ {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		statusFields[name] = true
	}
	for key, c := range cs {
		// Every entity is available with the node, and QoS 1 carries its
		// topics (a prompt typed while edgellm restarts waits in its
		// session).
		avail, _ := c["availability"].([]any)
		if len(avail) != 1 {
			t.Fatalf("%s: availability %v", key, c["availability"])
		}
		a := avail[0].(map[string]any)
		if a["topic"] != d.Topics.Availability() || a["payload_available"] != Online || a["payload_not_available"] != Offline {
			t.Errorf("%s: availability %v", key, a)
		}
		if c["qos"] != float64(1) {
			t.Errorf("%s: qos %v, want 1", key, c["qos"])
		}
		if want := c["platform"].(string) + ".edgellm_kitchen_pi_" + key; c["default_entity_id"] != want {
			t.Errorf("%s: default_entity_id %v, want %s", key, c["default_entity_id"], want)
		}
		if c["unique_id"] != "edgellm_Kitchen-Pi_"+key {
			t.Errorf("%s: unique_id %v", key, c["unique_id"])
		}
		// Templates on the status topic read fields the status has.
		if c["state_topic"] == d.Topics.Status() {
			tmpl, _ := c["value_template"].(string)
			for _, f := range regexp.MustCompile(`value_json\.(\w+)`).FindAllStringSubmatch(tmpl, -1) {
				if !statusFields[f[1]] {
					t.Errorf("%s: template reads value_json.%s, which Status does not have", key, f[1])
				}
			}
		}
	}

	want := func(key string, fields map[string]any) {
		t.Helper()
		c := cs[key]
		if c == nil {
			t.Errorf("no %s component", key)
			return
		}
		for k, v := range fields {
			if !reflect.DeepEqual(c[k], v) {
				t.Errorf("%s: %s = %v, want %v", key, k, c[k], v)
			}
		}
	}
	status := d.Topics.Status()
	diag := "diagnostic"
	want("state", map[string]any{"platform": "sensor", "state_topic": status, "value_template": "{{ value_json.state }}",
		"device_class": "enum", "options": []any{"starting", "loading", "idle", "busy", "reloading", "stopping"}})
	want("decode_tps", map[string]any{"platform": "sensor", "unit_of_measurement": "tok/s", "state_class": "measurement",
		"value_template": "{{ value_json.decode_tps if value_json.decode_tps is defined else none }}"})
	want("queue_depth", map[string]any{"value_template": "{{ value_json.queue_depth }}", "state_class": "measurement"})
	want("memory_used", map[string]any{"unit_of_measurement": "MiB", "device_class": "data_size", "state_class": "measurement", "entity_category": diag})
	want("memory_limit", map[string]any{"unit_of_measurement": "MiB", "device_class": "data_size", "entity_category": diag,
		"value_template": "{{ (value_json.memory_limit / 1048576) | round(1) }}"})
	for _, k := range []string{"jobs_ok", "jobs_failed", "jobs_cancelled", "tokens_generated"} {
		want(k, map[string]any{"state_class": "total_increasing", "entity_category": diag, "value_template": "{{ value_json." + k + " }}"})
	}
	want("started", map[string]any{"device_class": "timestamp", "entity_category": diag, "value_template": "{{ value_json.started }}"})
	want("cpu_temp", map[string]any{"unit_of_measurement": "°C", "device_class": "temperature", "entity_category": diag,
		"value_template": "{{ value_json.cpu_temp_c }}"})
	want("throttled", map[string]any{"platform": "binary_sensor", "device_class": "problem",
		"value_template": "{{ 'ON' if value_json.throttled else 'OFF' }}"})
	want("last_response", map[string]any{"state_topic": "edgellm/Kitchen-Pi/last_response", "json_attributes_topic": "edgellm/Kitchen-Pi/last_response",
		"value_template": "{{ (value_json.text if value_json.status == 'ok' else 'error: ' ~ value_json.error.code)[:255] }}"})
	want("prompt", map[string]any{"platform": "text", "command_topic": "edgellm/Kitchen-Pi/request", "max": float64(255), "mode": "text", "qos": float64(1)})
	want("cancel", map[string]any{"platform": "button", "command_topic": "edgellm/Kitchen-Pi/cancel", "payload_press": `{"id":"*"}`})
	want("jobs_http", map[string]any{"entity_category": diag, "state_class": "total_increasing", "value_template": "{{ value_json.jobs_http }}"})
	want("active_slots", map[string]any{"state_class": "measurement", "value_template": "{{ value_json.active_slots }}"})
	if len(cs) != 17 {
		t.Errorf("%d components, want 17", len(cs))
	}
	// Components on the status topic set it themselves: a shared
	// state_topic would give the prompt text entity the status as its state.
	if _, ok := p["state_topic"]; ok {
		t.Errorf("state_topic shared at the root")
	}

	// What the button sends is a cancel the daemon accepts.
	if id, err := ParseCancel([]byte(cs["cancel"]["payload_press"].(string))); err != nil || id != CancelRunning {
		t.Errorf("button payload parses as %q, %v", id, err)
	}
}

func TestDiscoveryEntitiesOnlyForWhatTheBoardHas(t *testing.T) {
	_, p := testDiscovery(t, false, false)
	cs := haComponents(t, p)
	if cs["cpu_temp"] != nil || cs["throttled"] != nil || len(cs) != 15 {
		t.Errorf("a board without a thermal zone or firmware flags has %d components: cpu_temp %v, throttled %v",
			len(cs), cs["cpu_temp"], cs["throttled"])
	}
	_, p = testDiscovery(t, true, false)
	if cs := haComponents(t, p); cs["cpu_temp"] == nil || cs["throttled"] != nil {
		t.Errorf("with a CPU temperature only: %v", cs)
	}
}

// TestStatesAreEveryStateConstant keeps the enum's options complete: every
// State constant of response.go is in States, once.
func TestStatesAreEveryStateConstant(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "response.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			for _, id := range vs.Names {
				if strings.HasPrefix(id.Name, "State") {
					lit := vs.Values[0].(*ast.BasicLit)
					names = append(names, strings.Trim(lit.Value, `"`))
				}
			}
		}
		return true
	})
	if len(names) < 6 || len(names) != len(States) {
		t.Fatalf("State constants %v, States %v", names, States)
	}
	for _, n := range names {
		if !slices.Contains(States, n) {
			t.Errorf("state %q is not among the enum options %v", n, States)
		}
	}
}

func TestDiscoveryMigrationFromPerEntityConfigs(t *testing.T) {
	d, _ := testDiscovery(t, false, true)
	msgs, err := d.Migration()
	if err != nil {
		t.Fatal(err)
	}
	// HA's documented order: a marker (or a deletion for an entity that is
	// gone) on every per-entity topic, the device config, then an empty
	// retained payload on every per-entity topic.
	legacy := []string{"sensor/state", "sensor/decode_tps", "sensor/queue_depth", "sensor/memory_used",
		"sensor/cpu_temp", "sensor/last_response", "text/prompt", "button/cancel"}
	if len(msgs) != 2*len(legacy)+1 {
		t.Fatalf("%d messages", len(msgs))
	}
	cfg, _ := d.Config()
	if !reflect.DeepEqual(msgs[len(legacy)], cfg) {
		t.Errorf("message %d is %s, want the device config", len(legacy), msgs[len(legacy)].Topic)
	}
	for i, e := range legacy {
		component, object, _ := strings.Cut(e, "/")
		topic := "homeassistant/" + component + "/Kitchen-Pi/" + object + "/config"
		m := haTopicRE.FindStringSubmatch(topic)
		if m == nil || m[1] != component || m[2] != "Kitchen-Pi" || m[3] != object {
			t.Fatalf("%s does not parse as HA's discovery topic", topic)
		}
		first, last := msgs[i], msgs[len(legacy)+1+i]
		if first.Topic != topic || last.Topic != topic {
			t.Errorf("%s: topics %s, %s", e, first.Topic, last.Topic)
		}
		if e == "sensor/cpu_temp" { // this board has none: deleted
			if len(first.Payload) != 0 || !first.Retain {
				t.Errorf("%s: %q retained %v, want a deletion", e, first.Payload, first.Retain)
			}
		} else if string(first.Payload) != `{"migrate_discovery":true}` || first.Retain {
			t.Errorf("%s: %q retained %v, want the migration marker", e, first.Payload, first.Retain)
		}
		if len(last.Payload) != 0 || !last.Retain {
			t.Errorf("%s: clean-up %q retained %v", e, last.Payload, last.Retain)
		}
		if !d.IsLegacyTopic(topic) {
			t.Errorf("IsLegacyTopic(%s) = false", topic)
		}
	}

	// Only an earlier edgellm's config of this node starts a migration.
	old := `{"name":"State","unique_id":"edgellm_Kitchen-Pi_state","origin":{"name":"edgellm","sw_version":"0.2.0"}}`
	for _, c := range []struct {
		topic, payload string
		want           bool
	}{
		{"homeassistant/sensor/Kitchen-Pi/state/config", old, true},
		{"homeassistant/sensor/Kitchen-Pi/state/config", `{"migrate_discovery":true}`, false},
		{"homeassistant/sensor/Kitchen-Pi/state/config", "", false},
		{"homeassistant/sensor/Kitchen-Pi/state/config", `{"unique_id":"other_state","origin":{"name":"other"}}`, false},
		{"homeassistant/sensor/Kitchen-Pi/other/config", old, false},
		{"homeassistant/device/Kitchen-Pi/config", old, false},
	} {
		if got := d.IsLegacyConfig(c.topic, []byte(c.payload)); got != c.want {
			t.Errorf("IsLegacyConfig(%s, %s) = %v", c.topic, c.payload, got)
		}
	}
	if d.LegacyFilter() != "homeassistant/+/Kitchen-Pi/+/config" || d.IsLegacyTopic("homeassistant/device/Kitchen-Pi/config") ||
		d.IsLegacyTopic("homeassistant/sensor/pi2/state/config") {
		t.Errorf("legacy filter %s", d.LegacyFilter())
	}
}

func TestDiscoveryRemovalAndErrors(t *testing.T) {
	d, _ := testDiscovery(t, false, false)
	if rm := d.Removal(); rm.Topic != "homeassistant/device/Kitchen-Pi/config" || len(rm.Payload) != 0 || !rm.Retain {
		t.Errorf("removal %+v", rm)
	}
	if got := HAStatusTopic("homeassistant"); got != "homeassistant/status" {
		t.Errorf("HAStatusTopic = %q", got)
	}

	d.Prefix = "home/#"
	if _, err := d.Config(); err == nil || !strings.Contains(err.Error(), "mqtt: discovery prefix") {
		t.Errorf("bad prefix: %v", err)
	}
	if _, err := d.Migration(); err == nil {
		t.Errorf("bad prefix: migration without an error")
	}
	d.Prefix = "homeassistant"
	d.Topics.Node = "a/b"
	if _, err := d.Config(); err == nil || !strings.Contains(err.Error(), "node id") {
		t.Errorf("bad node: %v", err)
	}

	// Defaults for an unnamed model and support URL; a configuration URL
	// when one is set.
	tp, _ := NewTopics("edgellm", "pi")
	msg, err := (Discovery{Prefix: "ha", Topics: tp, ConfigurationURL: "http://pi.local:8080/"}).Config()
	if err != nil {
		t.Fatal(err)
	}
	if msg.Topic != "ha/device/pi/config" || !strings.Contains(string(msg.Payload), `"model":"edgellm"`) ||
		!strings.Contains(string(msg.Payload), `"configuration_url":"http://pi.local:8080/"`) {
		t.Errorf("defaults: %s %s", msg.Topic, msg.Payload)
	}
}
