package mqtt

import (
	"strings"
	"testing"
)

func TestTopics(t *testing.T) {
	tp, err := NewTopics("home/llm", "kitchen-pi")
	if err != nil {
		t.Fatal(err)
	}
	for got, want := range map[string]string{
		tp.Request():                 "home/llm/kitchen-pi/request",
		tp.Response():                "home/llm/kitchen-pi/response",
		tp.LastResponse():            "home/llm/kitchen-pi/last_response",
		tp.ResponseFor("abc"):        "home/llm/kitchen-pi/response/abc",
		tp.Stream("abc"):             "home/llm/kitchen-pi/response/abc/stream",
		tp.ReasoningStream("abc"):    "home/llm/kitchen-pi/response/abc/reasoning",
		tp.Cancel():                  "home/llm/kitchen-pi/cancel",
		tp.Availability():            "home/llm/kitchen-pi/availability",
		tp.Status():                  "home/llm/kitchen-pi/status",
		tp.ToolCall():                "home/llm/kitchen-pi/tool_call",
		tp.PoolRequest():             "home/llm/pool/request",
		tp.PoolSubscription("fleet"): "$share/fleet/home/llm/pool/request",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	for _, bad := range []struct{ base, node, want string }{
		{"", "pi", "base topic: must not be empty"},
		{"a//b", "pi", "empty level"},
		{"/a", "pi", "empty level"},
		{"a/+", "pi", "wildcard"},
		{"$SYS", "pi", "reserved"},
		{"edgellm", "", "node id: must not be empty"},
		{"edgellm", "a/b", "node id"},
		{"edgellm", "pi#", "node id"},
		{"edgellm", "pi.local", "node id"},
	} {
		if _, err := NewTopics(bad.base, bad.node); err == nil || !strings.Contains(err.Error(), bad.want) || !strings.HasPrefix(err.Error(), "mqtt: ") {
			t.Errorf("NewTopics(%q, %q) = %v, want error containing %q", bad.base, bad.node, err, bad.want)
		}
	}
}

func TestValidatePublishTopic(t *testing.T) {
	for _, ok := range []string{"a", "a/b/c", "a b/ü", "/leading/ok"} {
		if err := ValidatePublishTopic(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"":                         "empty",
		"a/#":                      "wildcard",
		"+":                        "wildcard",
		"a\x00b":                   "NUL",
		"$share/g/t":               "reserved",
		"a\xffb":                   "UTF-8",
		strings.Repeat("t", 65536): "longer than 65535",
	} {
		if err := ValidatePublishTopic(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidatePublishTopic(%.20q) = %v, want %q", bad, err, want)
		}
	}
}

func TestValidateRequestID(t *testing.T) {
	for _, ok := range []string{"a", "req-1", "2026-01-01T10:00:00.5", "A_b.c:d-e", NewID()} {
		if err := ValidateRequestID(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a b", "a/b", "a#", "é", strings.Repeat("x", 129)} {
		if err := ValidateRequestID(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if a, b := NewID(), NewID(); a == b || len(a) != 16 {
		t.Errorf("NewID gave %q and %q", a, b)
	}
}

func TestNormalizeBrokerURL(t *testing.T) {
	for in, want := range map[string]string{
		"tcp://localhost":          "tcp://localhost:1883",
		"tcp://10.0.0.2:1884":      "tcp://10.0.0.2:1884",
		"ssl://broker.lan":         "ssl://broker.lan:8883",
		"ws://broker.lan/mqtt":     "ws://broker.lan:80/mqtt",
		"wss://broker.lan:9443/mq": "wss://broker.lan:9443/mq",
		"tcp://[::1]":              "tcp://[::1]:1883",
		"tcp://h:1883/":            "tcp://h:1883",
	} {
		got, err := NormalizeBrokerURL(in)
		if err != nil || got != want {
			t.Errorf("NormalizeBrokerURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"":                 "must not be empty",
		"localhost:1883":   "not supported",
		"mqtts://h":        "not supported",
		"tcp://":           "no host",
		"tcp://u:p@h":      "credentials",
		"tcp://h:0":        "port",
		"tcp://h:x":        "not a URL",
		"tcp://h:1883?a=b": "no query",
		"ssl://h/path":     "no path",
	} {
		if _, err := NormalizeBrokerURL(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NormalizeBrokerURL(%q) error %v, want %q", in, err, want)
		}
	}
}
