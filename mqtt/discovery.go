package mqtt

import (
	"encoding/json"
	"fmt"
	"strings"
)

// HAOnline is what Home Assistant publishes on HAStatusTopic when it
// (re)starts; the daemon then sends its discovery config again.
const HAOnline = "online"

// HAStatusTopic is Home Assistant's birth and will topic under the discovery
// prefix: <prefix>/status.
func HAStatusTopic(prefix string) string { return prefix + "/status" }

// DefaultSupportURL is the origin's support_url unless Discovery sets one.
const DefaultSupportURL = "https://github.com/edgellm/edgellm"

// HAMaxState is the longest state Home Assistant keeps (and the longest
// value of a text entity).
const HAMaxState = 255

// States lists every value Status.State takes: the options of the state
// sensor, which Home Assistant rejects any other value of.
var States = []string{StateStarting, StateLoading, StateIdle, StateBusy, StateReloading, StateStopping}

// Discovery describes one node for Home Assistant's device-based MQTT
// discovery: one retained config on <prefix>/device/<node>/config that
// declares the device and all its entities.
type Discovery struct {
	// Prefix is the discovery prefix (mqtt.homeassistant.discovery_prefix).
	Prefix string
	// Topics are the node's topics; Topics.Node names the device.
	Topics Topics
	// Version is edgellm's version (origin and device sw_version).
	Version string
	// Model is the served model's name, shown as the device model; empty
	// shows "edgellm".
	Model string
	// SupportURL is the origin's support_url; empty uses DefaultSupportURL.
	SupportURL string
	// ConfigurationURL is the device's configuration_url (a link on Home
	// Assistant's device page); empty leaves it out.
	ConfigurationURL string
	// CPUTemperature and Throttled say whether the board reports a CPU
	// temperature and the Raspberry Pi firmware's throttling flags: their
	// entities exist only when it does.
	CPUTemperature, Throttled bool
}

// DiscoveryMessage is one discovery message to publish at QoS 1. An empty
// retained Payload deletes what the topic configured.
type DiscoveryMessage struct {
	Topic   string // <prefix>/device/<node>/config, or a legacy per-entity topic
	Payload []byte // the JSON config, a migration marker, or empty
	Retain  bool   // retained (configs and deletions); markers are not
}

// haAvailability is one entry of the availability list.
type haAvailability struct {
	Topic               string `json:"topic"`
	PayloadAvailable    string `json:"payload_available"`
	PayloadNotAvailable string `json:"payload_not_available"`
}

// haDevice ties the entities to one device in Home Assistant's registry.
type haDevice struct {
	Identifiers      []string `json:"identifiers"`
	Name             string   `json:"name"`
	Model            string   `json:"model"`
	Manufacturer     string   `json:"manufacturer"`
	SWVersion        string   `json:"sw_version,omitempty"`
	ConfigurationURL string   `json:"configuration_url,omitempty"`
}

// haOrigin names the software that published the config.
type haOrigin struct {
	Name       string `json:"name"`
	SWVersion  string `json:"sw_version,omitempty"`
	SupportURL string `json:"support_url,omitempty"`
}

// haDeviceConfig is the device discovery payload. The keys that only
// device-based discovery has are abbreviated as Home Assistant's docs write
// them (dev, o, cmps, and p in each component); every other option has its
// full name.
type haDeviceConfig struct {
	Device       haDevice               `json:"dev"`
	Origin       haOrigin               `json:"o"`
	Availability []haAvailability       `json:"availability"`
	QoS          int                    `json:"qos"`
	Components   map[string]haComponent `json:"cmps"`
}

// haComponent is one entity of the device; options a platform does not
// have are left empty.
type haComponent struct {
	Platform        string `json:"p"`
	Name            string `json:"name"`
	UniqueID        string `json:"unique_id"`
	DefaultEntityID string `json:"default_entity_id"`
	Icon            string `json:"icon,omitempty"`
	EntityCategory  string `json:"entity_category,omitempty"`

	// sensor and binary_sensor
	StateTopic                string   `json:"state_topic,omitempty"`
	ValueTemplate             string   `json:"value_template,omitempty"`
	DeviceClass               string   `json:"device_class,omitempty"`
	StateClass                string   `json:"state_class,omitempty"`
	UnitOfMeasurement         string   `json:"unit_of_measurement,omitempty"`
	SuggestedDisplayPrecision *int     `json:"suggested_display_precision,omitempty"`
	Options                   []string `json:"options,omitempty"`
	JSONAttributesTopic       string   `json:"json_attributes_topic,omitempty"`

	// text and button
	CommandTopic string `json:"command_topic,omitempty"`
	Max          int    `json:"max,omitempty"`
	Mode         string `json:"mode,omitempty"`
	PayloadPress string `json:"payload_press,omitempty"`
}

// component is one entity before the common fields are added.
type component struct {
	key string // its key under cmps, and the object id of its legacy topic
	haComponent
}

// slug makes s usable in an entity id: lower case, [a-z0-9_].
func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Units and classes the components use.
const (
	diagnostic      = "diagnostic"
	measurement     = "measurement"
	totalIncreasing = "total_increasing"
	mib             = "MiB"
)

func (d Discovery) components() []component {
	t := d.Topics
	zero, one := 0, 1
	field := func(f string) string { return "{{ value_json." + f + " }}" }
	mibField := func(f string) string { return "{{ (value_json." + f + " / 1048576) | round(1) }}" }
	status := func(key string, c haComponent) component {
		c.StateTopic = t.Status()
		if c.Platform == "" {
			c.Platform = "sensor"
		}
		return component{key, c}
	}
	cs := []component{
		status("state", haComponent{Name: "State", Icon: "mdi:robot", ValueTemplate: field("state"),
			DeviceClass: "enum", Options: States}),
		// decode_tps is absent from the status when no job finished in the
		// last few minutes: the sensor is then unknown, not 0.
		status("decode_tps", haComponent{Name: "Tokens per second", Icon: "mdi:speedometer",
			ValueTemplate:     "{{ value_json.decode_tps if value_json.decode_tps is defined else none }}",
			UnitOfMeasurement: "tok/s", StateClass: measurement, SuggestedDisplayPrecision: &one}),
		status("queue_depth", haComponent{Name: "Queue depth", Icon: "mdi:tray-full", ValueTemplate: field("queue_depth"),
			StateClass: measurement}),
		status("active_slots", haComponent{Name: "Active slots", Icon: "mdi:view-parallel", ValueTemplate: field("active_slots"),
			StateClass: measurement}),
		status("memory_used", haComponent{Name: "Memory used", EntityCategory: diagnostic, ValueTemplate: mibField("memory_used"),
			DeviceClass: "data_size", UnitOfMeasurement: mib, StateClass: measurement, SuggestedDisplayPrecision: &one}),
		status("memory_limit", haComponent{Name: "Memory limit", EntityCategory: diagnostic, ValueTemplate: mibField("memory_limit"),
			DeviceClass: "data_size", UnitOfMeasurement: mib, SuggestedDisplayPrecision: &zero}),
		status("jobs_ok", haComponent{Name: "Jobs answered", Icon: "mdi:check-circle", EntityCategory: diagnostic,
			ValueTemplate: field("jobs_ok"), StateClass: totalIncreasing}),
		status("jobs_http", haComponent{Name: "HTTP requests", Icon: "mdi:web", EntityCategory: diagnostic,
			ValueTemplate: field("jobs_http"), StateClass: totalIncreasing}),
		status("jobs_failed", haComponent{Name: "Jobs failed", Icon: "mdi:alert-circle", EntityCategory: diagnostic,
			ValueTemplate: field("jobs_failed"), StateClass: totalIncreasing}),
		status("jobs_cancelled", haComponent{Name: "Jobs cancelled", Icon: "mdi:cancel", EntityCategory: diagnostic,
			ValueTemplate: field("jobs_cancelled"), StateClass: totalIncreasing}),
		status("tokens_generated", haComponent{Name: "Tokens generated", Icon: "mdi:counter", EntityCategory: diagnostic,
			ValueTemplate: field("tokens_generated"), UnitOfMeasurement: "tokens", StateClass: totalIncreasing}),
		status("started", haComponent{Name: "Started", EntityCategory: diagnostic, ValueTemplate: field("started"),
			DeviceClass: "timestamp"}),
	}
	if d.CPUTemperature {
		cs = append(cs, status("cpu_temp", haComponent{Name: "CPU temperature", EntityCategory: diagnostic,
			ValueTemplate: field("cpu_temp_c"), DeviceClass: "temperature", UnitOfMeasurement: "°C",
			StateClass: measurement, SuggestedDisplayPrecision: &one}))
	}
	if d.Throttled {
		cs = append(cs, status("throttled", haComponent{Platform: "binary_sensor", Name: "Throttled",
			ValueTemplate: "{{ 'ON' if value_json.throttled else 'OFF' }}", DeviceClass: "problem"}))
	}
	return append(cs,
		// Every final answer, JSON or plain-text request alike, is also
		// retained on last_response. A state is cut at 255 characters; the
		// attributes hold the whole answer (id, status, text, …).
		component{"last_response", haComponent{Platform: "sensor", Name: "Last response", Icon: "mdi:message-text",
			StateTopic: t.LastResponse(), JSONAttributesTopic: t.LastResponse(),
			ValueTemplate: fmt.Sprintf("{{ (value_json.text if value_json.status == 'ok' else 'error: ' ~ value_json.error.code)[:%d] }}", HAMaxState)}},
		component{"prompt", haComponent{Platform: "text", Name: "Prompt", Icon: "mdi:message-question", CommandTopic: t.Request(),
			Max: HAMaxState, Mode: "text"}},
		component{"cancel", haComponent{Platform: "button", Name: "Cancel", Icon: "mdi:stop-circle", CommandTopic: t.Cancel(),
			PayloadPress: `{"id":"` + CancelRunning + `"}`}},
	)
}

// Topic is the device discovery topic: <prefix>/device/<node>/config.
func (d Discovery) Topic() string { return d.Prefix + "/device/" + d.Topics.Node + "/config" }

// Config returns the retained device discovery config: the device (with
// availability on the node's availability topic and QoS 1 for every topic)
// and its components — the state (an enum), tokens/s, queue depth, the last
// response, a text entity that sends a prompt, a button that cancels the
// running job, and diagnostic sensors for memory, jobs, tokens, start time
// and, where the board reports them, CPU temperature and throttling.
func (d Discovery) Config() (DiscoveryMessage, error) {
	if err := ValidateTopicPrefix(d.Prefix); err != nil {
		return DiscoveryMessage{}, fmt.Errorf("mqtt: discovery prefix: %w", err)
	}
	if _, err := NewTopics(d.Topics.Base, d.Topics.Node); err != nil {
		return DiscoveryMessage{}, err
	}
	support := d.SupportURL
	if support == "" {
		support = DefaultSupportURL
	}
	model := d.Model
	if model == "" {
		model = "edgellm"
	}
	cfg := haDeviceConfig{
		Device: haDevice{
			Identifiers:      []string{"edgellm_" + d.Topics.Node},
			Name:             "edgellm " + d.Topics.Node,
			Model:            model,
			Manufacturer:     "edgellm",
			SWVersion:        d.Version,
			ConfigurationURL: d.ConfigurationURL,
		},
		Origin:       haOrigin{Name: "edgellm", SWVersion: d.Version, SupportURL: support},
		Availability: []haAvailability{{Topic: d.Topics.Availability(), PayloadAvailable: Online, PayloadNotAvailable: Offline}},
		QoS:          1,
		Components:   map[string]haComponent{},
	}
	for _, c := range d.components() {
		e := c.haComponent
		e.UniqueID = "edgellm_" + d.Topics.Node + "_" + c.key
		e.DefaultEntityID = e.Platform + ".edgellm_" + slug(d.Topics.Node) + "_" + c.key
		cfg.Components[c.key] = e
	}
	payload, err := json.Marshal(cfg)
	if err != nil {
		return DiscoveryMessage{}, fmt.Errorf("mqtt: discovery: %w", err)
	}
	return DiscoveryMessage{Topic: d.Topic(), Payload: payload, Retain: true}, nil
}

// Removal is the empty retained payload on the device topic that makes Home
// Assistant delete the device and its entities (when discovery is turned
// off or the node moves).
func (d Discovery) Removal() DiscoveryMessage {
	return DiscoveryMessage{Topic: d.Topic(), Retain: true}
}

// legacyEntities are the per-entity discovery topics edgellm published
// before device-based discovery, as <component>/<object id>; the object ids
// are the component keys of the device config, so Home Assistant's
// discovery ids stay the same across the migration.
var legacyEntities = []string{"sensor/state", "sensor/decode_tps", "sensor/queue_depth", "sensor/memory_used",
	"sensor/cpu_temp", "sensor/last_response", "text/prompt", "button/cancel"}

func (d Discovery) legacyTopic(entity string) string {
	component, object, _ := strings.Cut(entity, "/")
	return d.Prefix + "/" + component + "/" + d.Topics.Node + "/" + object + "/config"
}

// LegacyFilter matches the per-entity discovery topics of this node
// (<prefix>/+/<node>/+/config), where configs of an earlier edgellm may
// still be retained.
func (d Discovery) LegacyFilter() string { return d.Prefix + "/+/" + d.Topics.Node + "/+/config" }

// IsLegacyTopic reports whether topic matches LegacyFilter.
func (d Discovery) IsLegacyTopic(topic string) bool {
	rest, ok := strings.CutPrefix(topic, d.Prefix+"/")
	if !ok {
		return false
	}
	parts := strings.Split(rest, "/")
	return len(parts) == 4 && parts[1] == d.Topics.Node && parts[3] == "config"
}

// IsLegacyConfig reports whether a message on topic is a per-entity config
// an earlier edgellm published for this node (and not a migration marker or
// a deletion).
func (d Discovery) IsLegacyConfig(topic string, payload []byte) bool {
	known := false
	for _, e := range legacyEntities {
		known = known || topic == d.legacyTopic(e)
	}
	if !known || len(payload) == 0 {
		return false
	}
	var cfg struct {
		UniqueID string `json:"unique_id"`
		Origin   struct {
			Name string `json:"name"`
		} `json:"origin"`
	}
	return json.Unmarshal(payload, &cfg) == nil && cfg.Origin.Name == "edgellm" &&
		strings.HasPrefix(cfg.UniqueID, "edgellm_"+d.Topics.Node+"_")
}

// migrateMarker asks Home Assistant to unload an entity discovered on a
// per-entity topic while keeping its registry entry (its entity id, name,
// area and history), so that the device config can take it over.
var migrateMarker = []byte(`{"migrate_discovery":true}`)

// Migration returns the messages that move this node from per-entity
// discovery to the device config the way Home Assistant documents it: the
// migration marker on each legacy topic whose entity the device config
// still has (an empty payload, which deletes it, on the others), the device
// config, then an empty retained payload on every legacy topic so nothing
// of the old configs stays on the broker. Home Assistant ignores markers
// and deletions on topics it has nothing discovered on, so the sequence is
// harmless when some legacy configs were never seen.
func (d Discovery) Migration() ([]DiscoveryMessage, error) {
	cfg, err := d.Config()
	if err != nil {
		return nil, err
	}
	kept := map[string]bool{}
	for _, c := range d.components() {
		kept[c.Platform+"/"+c.key] = true
	}
	var out []DiscoveryMessage
	for _, e := range legacyEntities {
		if kept[e] {
			out = append(out, DiscoveryMessage{Topic: d.legacyTopic(e), Payload: migrateMarker})
		} else {
			out = append(out, DiscoveryMessage{Topic: d.legacyTopic(e), Retain: true})
		}
	}
	out = append(out, cfg)
	for _, e := range legacyEntities {
		out = append(out, DiscoveryMessage{Topic: d.legacyTopic(e), Retain: true})
	}
	return out, nil
}
