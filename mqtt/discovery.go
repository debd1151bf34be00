package mqtt

import (
	"encoding/json"
	"fmt"
	"strings"
)

// HAOnline is what Home Assistant publishes on HAStatusTopic when it
// (re)starts; the daemon then sends its discovery configs again.
const HAOnline = "online"

// HAStatusTopic is Home Assistant's birth and will topic under the discovery
// prefix: <prefix>/status.
func HAStatusTopic(prefix string) string { return prefix + "/status" }

// DefaultSupportURL is the origin's support_url unless Discovery sets one.
const DefaultSupportURL = "https://github.com/edgellm/edgellm"

// HAMaxState is the longest state Home Assistant keeps (and the longest
// value of a text entity).
const HAMaxState = 255

// Discovery describes one node for Home Assistant MQTT discovery.
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
}

// DiscoveryMessage is one retained discovery config to publish (QoS 1,
// retained). An empty Payload deletes the entity.
type DiscoveryMessage struct {
	Topic   string // <prefix>/<component>/<node>/<object>/config
	Payload []byte // the JSON config, or empty to delete
}

// haAvailability is one entry of an entity's availability list.
type haAvailability struct {
	Topic               string `json:"topic"`
	PayloadAvailable    string `json:"payload_available"`
	PayloadNotAvailable string `json:"payload_not_available"`
}

// haDevice ties entities to one device in Home Assistant's registry.
type haDevice struct {
	Identifiers  []string `json:"identifiers"`
	Name         string   `json:"name"`
	Model        string   `json:"model"`
	Manufacturer string   `json:"manufacturer"`
	SWVersion    string   `json:"sw_version,omitempty"`
}

// haOrigin names the software that published the config.
type haOrigin struct {
	Name       string `json:"name"`
	SWVersion  string `json:"sw_version,omitempty"`
	SupportURL string `json:"support_url,omitempty"`
}

// haEntity is a discovery config. Full option names are used (no
// abbreviations); options a platform does not have are left empty.
type haEntity struct {
	Name            string           `json:"name"`
	UniqueID        string           `json:"unique_id"`
	DefaultEntityID string           `json:"default_entity_id"`
	Icon            string           `json:"icon,omitempty"`
	EntityCategory  string           `json:"entity_category,omitempty"`
	Availability    []haAvailability `json:"availability"`
	Device          haDevice         `json:"device"`
	Origin          haOrigin         `json:"origin"`

	// sensor
	StateTopic                string `json:"state_topic,omitempty"`
	ValueTemplate             string `json:"value_template,omitempty"`
	UnitOfMeasurement         string `json:"unit_of_measurement,omitempty"`
	DeviceClass               string `json:"device_class,omitempty"`
	StateClass                string `json:"state_class,omitempty"`
	SuggestedDisplayPrecision *int   `json:"suggested_display_precision,omitempty"`
	JSONAttributesTopic       string `json:"json_attributes_topic,omitempty"`
	JSONAttributesTemplate    string `json:"json_attributes_template,omitempty"`

	// text and button
	CommandTopic string `json:"command_topic,omitempty"`
	Max          int    `json:"max,omitempty"`
	Mode         string `json:"mode,omitempty"`
	PayloadPress string `json:"payload_press,omitempty"`
}

// entitySpec is one entity before the common blocks are added.
type entitySpec struct {
	component, object string
	entity            haEntity
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

func (d Discovery) specs() []entitySpec {
	t := d.Topics
	one := 1
	statusField := func(field string) string { return "{{ value_json." + field + " }}" }
	return []entitySpec{
		{"sensor", "state", haEntity{Name: "State", Icon: "mdi:robot", StateTopic: t.Status(), ValueTemplate: statusField("state")}},
		{"sensor", "decode_tps", haEntity{Name: "Tokens per second", Icon: "mdi:speedometer", StateTopic: t.Status(),
			ValueTemplate: statusField("decode_tps"), UnitOfMeasurement: "tok/s", StateClass: "measurement", SuggestedDisplayPrecision: &one}},
		{"sensor", "queue_depth", haEntity{Name: "Queue depth", Icon: "mdi:tray-full", StateTopic: t.Status(),
			ValueTemplate: statusField("queue_depth"), StateClass: "measurement"}},
		{"sensor", "memory_used", haEntity{Name: "Memory used", EntityCategory: "diagnostic", StateTopic: t.Status(),
			ValueTemplate: "{{ (value_json.memory_used / 1048576) | round(1) }}", UnitOfMeasurement: "MiB",
			DeviceClass: "data_size", StateClass: "measurement", SuggestedDisplayPrecision: &one}},
		{"sensor", "cpu_temp", haEntity{Name: "CPU temperature", EntityCategory: "diagnostic", StateTopic: t.Status(),
			ValueTemplate:     "{{ value_json.cpu_temp_c if value_json.cpu_temp_c is defined else none }}",
			UnitOfMeasurement: "°C", DeviceClass: "temperature", StateClass: "measurement", SuggestedDisplayPrecision: &one}},
		// Answers to plain-text prompts (what the text entity sends) arrive
		// on the response topic as plain text. A state is cut at 255
		// characters, so the whole answer goes in the "text" attribute.
		{"sensor", "last_response", haEntity{Name: "Last response", Icon: "mdi:message-text", StateTopic: t.Response(),
			ValueTemplate:          fmt.Sprintf("{{ value[:%d] }}", HAMaxState),
			JSONAttributesTopic:    t.Response(),
			JSONAttributesTemplate: "{{ {'text': value} | tojson }}"}},
		{"text", "prompt", haEntity{Name: "Prompt", Icon: "mdi:message-question", CommandTopic: t.Request(), Max: HAMaxState, Mode: "text"}},
		{"button", "cancel", haEntity{Name: "Cancel", Icon: "mdi:stop-circle", CommandTopic: t.Cancel(),
			PayloadPress: `{"id":"` + CancelRunning + `"}`}},
	}
}

func (d Discovery) topic(component, object string) string {
	return d.Prefix + "/" + component + "/" + d.Topics.Node + "/" + object + "/config"
}

// Configs returns the retained discovery configs: one device (with
// availability on the node's availability topic) with sensors for state,
// tokens/s, queue depth, memory and CPU temperature, a last-response sensor,
// a text entity that sends a prompt and a button that cancels the running
// job. Topics are <prefix>/<component>/<node>/<object>/config.
func (d Discovery) Configs() ([]DiscoveryMessage, error) {
	if err := ValidateTopicPrefix(d.Prefix); err != nil {
		return nil, fmt.Errorf("mqtt: discovery prefix: %w", err)
	}
	if _, err := NewTopics(d.Topics.Base, d.Topics.Node); err != nil {
		return nil, err
	}
	support := d.SupportURL
	if support == "" {
		support = DefaultSupportURL
	}
	model := d.Model
	if model == "" {
		model = "edgellm"
	}
	origin := haOrigin{Name: "edgellm", SWVersion: d.Version, SupportURL: support}
	device := haDevice{
		Identifiers:  []string{"edgellm_" + d.Topics.Node},
		Name:         "edgellm " + d.Topics.Node,
		Model:        model,
		Manufacturer: "edgellm",
		SWVersion:    d.Version,
	}
	avail := []haAvailability{{Topic: d.Topics.Availability(), PayloadAvailable: Online, PayloadNotAvailable: Offline}}
	var out []DiscoveryMessage
	for _, s := range d.specs() {
		e := s.entity
		e.UniqueID = "edgellm_" + d.Topics.Node + "_" + s.object
		e.DefaultEntityID = s.component + ".edgellm_" + slug(d.Topics.Node) + "_" + s.object
		e.Availability, e.Device, e.Origin = avail, device, origin
		payload, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("mqtt: discovery %s/%s: %w", s.component, s.object, err)
		}
		out = append(out, DiscoveryMessage{Topic: d.topic(s.component, s.object), Payload: payload})
	}
	return out, nil
}

// Removals returns the same topics as Configs with empty payloads, which
// make Home Assistant delete the entities (for when discovery is turned
// off).
func (d Discovery) Removals() []DiscoveryMessage {
	var out []DiscoveryMessage
	for _, s := range d.specs() {
		out = append(out, DiscoveryMessage{Topic: d.topic(s.component, s.object)})
	}
	return out
}
