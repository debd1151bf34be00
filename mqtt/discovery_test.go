package mqtt

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func testDiscovery(t *testing.T) (Discovery, []DiscoveryMessage) {
	t.Helper()
	tp, err := NewTopics("edgellm", "Kitchen-Pi")
	if err != nil {
		t.Fatal(err)
	}
	d := Discovery{Prefix: "homeassistant", Topics: tp, Version: "0.3.0", Model: "qwen2.5-0.5b"}
	msgs, err := d.Configs()
	if err != nil {
		t.Fatal(err)
	}
	return d, msgs
}

func TestDiscoveryConfigsHaveWhatHARequires(t *testing.T) {
	// The options Home Assistant's MQTT docs list per platform (full names, as
	// we publish no abbreviations), the ones every entity shares, and the ones
	// each platform requires. Discovery payloads may use nothing else.
	haCommonOptions := []string{"availability", "availability_mode", "availability_template", "availability_topic",
		"default_entity_id", "device", "enabled_by_default", "encoding", "entity_category", "entity_picture", "icon",
		"json_attributes_template", "json_attributes_topic", "name", "origin", "qos", "unique_id"}
	haPlatformOptions := map[string][]string{
		"sensor": {"state_topic", "value_template", "unit_of_measurement", "device_class", "state_class",
			"suggested_display_precision", "expire_after", "force_update", "last_reset_value_template", "options"},
		"text":   {"command_topic", "command_template", "max", "min", "mode", "pattern", "retain", "state_topic", "value_template"},
		"button": {"command_topic", "command_template", "payload_press", "retain", "device_class"},
	}
	haRequired := map[string][]string{
		"sensor": {"state_topic"},
		"text":   {"command_topic"},
		"button": {"command_topic"},
	}
	// HA's discovery topic pattern (homeassistant/components/mqtt/discovery.py).
	haTopicRE := regexp.MustCompile(`^homeassistant/(?P<component>\w+)/(?:(?P<node_id>[a-zA-Z0-9_-]+)/)?(?P<object_id>[a-zA-Z0-9_-]+)/config$`)
	d, msgs := testDiscovery(t)
	if len(msgs) != 8 {
		t.Fatalf("%d configs, want 8", len(msgs))
	}
	statusFields := map[string]bool{}
	st := reflect.TypeOf(Status{})
	for i := 0; i < st.NumField(); i++ {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		statusFields[name] = true
	}
	uniqueIDs := map[string]bool{}
	objects := map[string]map[string]any{}
	for _, m := range msgs {
		match := haTopicRE.FindStringSubmatch(m.Topic)
		if match == nil {
			t.Errorf("topic %q does not match HA's discovery pattern", m.Topic)
			continue
		}
		component, node, object := match[1], match[2], match[3]
		if node != "Kitchen-Pi" {
			t.Errorf("%s: node_id %q", m.Topic, node)
		}
		var p map[string]any
		if err := json.Unmarshal(m.Payload, &p); err != nil {
			t.Fatalf("%s: %v", m.Topic, err)
		}
		objects[component+"/"+object] = p

		allowed := map[string]bool{}
		for _, k := range append(append([]string{}, haCommonOptions...), haPlatformOptions[component]...) {
			allowed[k] = true
		}
		if haPlatformOptions[component] == nil {
			t.Errorf("%s: unexpected platform %s", m.Topic, component)
		}
		for k := range p {
			if !allowed[k] {
				t.Errorf("%s: option %q is not a %s option in HA's docs", m.Topic, k, component)
			}
		}
		for _, k := range append([]string{"unique_id", "device", "availability", "origin", "name", "default_entity_id"}, haRequired[component]...) {
			if v, ok := p[k]; !ok || v == "" || v == nil {
				t.Errorf("%s: required %q missing", m.Topic, k)
			}
		}
		if _, ok := p["object_id"]; ok {
			t.Errorf("%s: object_id is gone since HA 2026.4; use default_entity_id", m.Topic)
		}
		if want := component + ".edgellm_kitchen_pi_" + object; p["default_entity_id"] != want {
			t.Errorf("%s: default_entity_id %v, want %s", m.Topic, p["default_entity_id"], want)
		}
		if id, _ := p["unique_id"].(string); uniqueIDs[id] {
			t.Errorf("%s: unique_id %q reused", m.Topic, id)
		} else {
			uniqueIDs[id] = true
		}

		dev, _ := p["device"].(map[string]any)
		ids, _ := dev["identifiers"].([]any)
		if len(ids) != 1 || ids[0] != "edgellm_Kitchen-Pi" || dev["name"] != "edgellm Kitchen-Pi" || dev["model"] != "qwen2.5-0.5b" ||
			dev["manufacturer"] != "edgellm" || dev["sw_version"] != "0.3.0" {
			t.Errorf("%s: device %v", m.Topic, dev)
		}
		origin, _ := p["origin"].(map[string]any)
		if origin["name"] != "edgellm" || origin["sw_version"] != "0.3.0" || origin["support_url"] != DefaultSupportURL {
			t.Errorf("%s: origin %v", m.Topic, origin)
		}
		avail, _ := p["availability"].([]any)
		if len(avail) != 1 {
			t.Fatalf("%s: availability %v", m.Topic, p["availability"])
		}
		a := avail[0].(map[string]any)
		if a["topic"] != d.Topics.Availability() || a["payload_available"] != Online || a["payload_not_available"] != Offline {
			t.Errorf("%s: availability %v", m.Topic, a)
		}

		// Templates on the status topic read fields the status has.
		if p["state_topic"] == d.Topics.Status() {
			tmpl, _ := p["value_template"].(string)
			for _, f := range regexp.MustCompile(`value_json\.(\w+)`).FindAllStringSubmatch(tmpl, -1) {
				if !statusFields[f[1]] {
					t.Errorf("%s: template reads value_json.%s, which Status does not have", m.Topic, f[1])
				}
			}
		}
	}

	want := func(key string, fields map[string]any) {
		t.Helper()
		p := objects[key]
		if p == nil {
			t.Errorf("no %s entity", key)
			return
		}
		for k, v := range fields {
			if p[k] != v {
				t.Errorf("%s: %s = %v, want %v", key, k, p[k], v)
			}
		}
	}
	want("sensor/state", map[string]any{"state_topic": "edgellm/Kitchen-Pi/status", "value_template": "{{ value_json.state }}"})
	want("sensor/decode_tps", map[string]any{"unit_of_measurement": "tok/s", "state_class": "measurement"})
	want("sensor/queue_depth", map[string]any{"value_template": "{{ value_json.queue_depth }}", "state_class": "measurement"})
	want("sensor/memory_used", map[string]any{"unit_of_measurement": "MiB", "device_class": "data_size"})
	want("sensor/cpu_temp", map[string]any{"unit_of_measurement": "°C", "device_class": "temperature"})
	want("sensor/last_response", map[string]any{"state_topic": "edgellm/Kitchen-Pi/response", "value_template": "{{ value[:255] }}",
		"json_attributes_topic": "edgellm/Kitchen-Pi/response", "json_attributes_template": "{{ {'text': value} | tojson }}"})
	want("text/prompt", map[string]any{"command_topic": "edgellm/Kitchen-Pi/request", "max": float64(255), "mode": "text"})
	want("button/cancel", map[string]any{"command_topic": "edgellm/Kitchen-Pi/cancel", "payload_press": `{"id":"*"}`})

	// What the button sends is a cancel the daemon accepts.
	if id, err := ParseCancel([]byte(objects["button/cancel"]["payload_press"].(string))); err != nil || id != CancelRunning {
		t.Errorf("button payload parses as %q, %v", id, err)
	}
}

func TestDiscoveryRemovalsAndErrors(t *testing.T) {
	d, msgs := testDiscovery(t)
	rm := d.Removals()
	if len(rm) != len(msgs) {
		t.Fatalf("%d removals for %d configs", len(rm), len(msgs))
	}
	for i := range rm {
		if rm[i].Topic != msgs[i].Topic || len(rm[i].Payload) != 0 {
			t.Errorf("removal %d: %q %q", i, rm[i].Topic, rm[i].Payload)
		}
	}
	if got := HAStatusTopic("homeassistant"); got != "homeassistant/status" {
		t.Errorf("HAStatusTopic = %q", got)
	}

	d.Prefix = "home/#"
	if _, err := d.Configs(); err == nil || !strings.Contains(err.Error(), "mqtt: discovery prefix") {
		t.Errorf("bad prefix: %v", err)
	}
	d.Prefix = "homeassistant"
	d.Topics.Node = "a/b"
	if _, err := d.Configs(); err == nil || !strings.Contains(err.Error(), "node id") {
		t.Errorf("bad node: %v", err)
	}

	// Defaults for an unnamed model and support URL.
	tp, _ := NewTopics("edgellm", "pi")
	msgs, err := (Discovery{Prefix: "ha", Topics: tp}).Configs()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(msgs[0].Topic, "ha/sensor/pi/") || !strings.Contains(string(msgs[0].Payload), `"model":"edgellm"`) {
		t.Errorf("defaults: %s %s", msgs[0].Topic, msgs[0].Payload)
	}
}
