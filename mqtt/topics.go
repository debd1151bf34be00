// Package mqtt is edgellm's MQTT side: topic names, request payloads parsed
// into the transport-neutral api.Request (with MQTT's id and reply_to),
// final answers encoded from api.Answer, Home Assistant discovery, and a
// client over Eclipse Paho that keeps a persistent session. It never imports
// the inference engine.
package mqtt

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/edgellm/edgellm/api"
)

// Length limits for the ids that appear in topics.
const (
	// MaxIDLen bounds node ids and pool names.
	MaxIDLen = api.MaxNameLen
	// MaxRequestIDLen bounds request ids.
	MaxRequestIDLen = 128
	// maxTopicLen is MQTT's limit on a topic name's length in bytes.
	maxTopicLen = 65535
)

// Topics names every topic of one node: they all live under <base>/<node>/.
// Build it with NewTopics, which validates both parts.
type Topics struct {
	// Base is the base topic (mqtt.base_topic), one or more levels.
	Base string
	// Node is the node id (mqtt.node_id), a single level.
	Node string
}

// NewTopics validates base and node and returns their topics.
func NewTopics(base, node string) (Topics, error) {
	if err := ValidateTopicPrefix(base); err != nil {
		return Topics{}, fmt.Errorf("mqtt: base topic: %w", err)
	}
	if err := ValidateID(node); err != nil {
		return Topics{}, fmt.Errorf("mqtt: node id: %w", err)
	}
	return Topics{Base: base, Node: node}, nil
}

func (t Topics) prefix() string { return t.Base + "/" + t.Node + "/" }

// Request is where requests to this node arrive: <base>/<node>/request.
func (t Topics) Request() string { return t.prefix() + "request" }

// Response is where answers to plain-text requests go:
// <base>/<node>/response.
func (t Topics) Response() string { return t.prefix() + "response" }

// LastResponse carries the latest final answer, whatever the request
// (JSON or plain text), as JSON and retained: <base>/<node>/last_response.
func (t Topics) LastResponse() string { return t.prefix() + "last_response" }

// ResponseFor is where the final answer to request id goes unless the
// request names reply_to: <base>/<node>/response/<id>.
func (t Topics) ResponseFor(id string) string { return t.prefix() + "response/" + id }

// Stream is where the streamed chunks of request id go:
// <base>/<node>/response/<id>/stream.
func (t Topics) Stream(id string) string { return t.ResponseFor(id) + "/stream" }

// ReasoningStream is where the streamed reasoning of request id goes (a
// thinking model's text before its answer, never part of Stream):
// <base>/<node>/response/<id>/reasoning.
func (t Topics) ReasoningStream(id string) string { return t.ResponseFor(id) + "/reasoning" }

// Error is where the error answer to a request goes when the request
// gives no usable id and no reply_to (so no response topic of its own):
// <base>/<node>/error.
func (t Topics) Error() string { return t.prefix() + "error" }

// Cancel is where cancellations arrive: <base>/<node>/cancel.
func (t Topics) Cancel() string { return t.prefix() + "cancel" }

// Availability carries the retained "online"/"offline" (also the will):
// <base>/<node>/availability.
func (t Topics) Availability() string { return t.prefix() + "availability" }

// Status carries the retained status JSON: <base>/<node>/status.
func (t Topics) Status() string { return t.prefix() + "status" }

// ToolCall is where tool calls the model makes are published:
// <base>/<node>/tool_call.
func (t Topics) ToolCall() string { return t.prefix() + "tool_call" }

// PoolRequest is the topic publishers send fleet requests to:
// <base>/pool/request. Nodes receive it through PoolSubscription.
func (t Topics) PoolRequest() string { return t.Base + "/pool/request" }

// PoolSubscription is the shared subscription of pool group for this base
// topic: $share/<group>/<base>/pool/request. The broker hands each message
// to one subscriber of the group.
func (t Topics) PoolSubscription(group string) string {
	return "$share/" + group + "/" + t.PoolRequest()
}

// Availability payloads.
const (
	Online  = "online"
	Offline = "offline"
)

// ValidateID checks a node id or pool name: 1 to MaxIDLen characters from
// [A-Za-z0-9_-], so it is a single topic level and also valid in Home
// Assistant discovery topics and MQTT client ids. The rule is a tool name's
// (api.ValidateName), MaxIDLen being api.MaxNameLen.
func ValidateID(id string) error {
	return api.ValidateName(id)
}

func isIDRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// ValidateRequestID checks a request id, which becomes a topic level:
// 1 to MaxRequestIDLen characters from [A-Za-z0-9_.:-].
func ValidateRequestID(id string) error {
	if id == "" {
		return errors.New("must not be empty")
	}
	if len(id) > MaxRequestIDLen {
		return fmt.Errorf("is longer than %d characters", MaxRequestIDLen)
	}
	for i, r := range id {
		if !isIDRune(r) && r != '.' && r != ':' {
			return fmt.Errorf("has %q at offset %d; use only letters, digits and _ . : -", r, i)
		}
	}
	return nil
}

// ValidateTopicPrefix checks a base topic or discovery prefix: one or more
// non-empty levels separated by '/', no wildcards, no leading '$' (reserved
// for the broker), no NUL, valid UTF-8.
func ValidateTopicPrefix(p string) error {
	if p == "" {
		return errors.New("must not be empty")
	}
	if err := validateTopicChars(p); err != nil {
		return err
	}
	if strings.HasPrefix(p, "$") {
		return fmt.Errorf("%q starts with '$', which is reserved for the broker", p)
	}
	for _, level := range strings.Split(p, "/") {
		if level == "" {
			return fmt.Errorf("%q has an empty level (leading, trailing or doubled '/')", p)
		}
	}
	return nil
}

// ValidatePublishTopic checks that t can be published to (a reply_to): not
// empty, no wildcards, no leading '$', no NUL, valid UTF-8, at most 65535
// bytes.
func ValidatePublishTopic(t string) error {
	if t == "" {
		return errors.New("must not be empty")
	}
	if err := validateTopicChars(t); err != nil {
		return err
	}
	if strings.HasPrefix(t, "$") {
		return fmt.Errorf("%q starts with '$', which is reserved for the broker", t)
	}
	return nil
}

func validateTopicChars(t string) error {
	if len(t) > maxTopicLen {
		return fmt.Errorf("is longer than %d bytes", maxTopicLen)
	}
	if !utf8.ValidString(t) {
		return errors.New("is not valid UTF-8")
	}
	if i := strings.IndexAny(t, "+#\x00"); i >= 0 {
		if t[i] == 0 {
			return fmt.Errorf("%q has a NUL character", t)
		}
		return fmt.Errorf("%q has the wildcard %q; a topic to publish to cannot have wildcards", t, t[i])
	}
	return nil
}
