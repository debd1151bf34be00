package mqtt

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
)

// defaultPort is the port used when a broker URL names none, or "" for an
// unsupported scheme.
func defaultPort(scheme string) string {
	switch scheme {
	case "tcp":
		return "1883"
	case "ssl":
		return "8883"
	case "ws":
		return "80"
	case "wss":
		return "443"
	}
	return ""
}

// NormalizeBrokerURL validates a broker URL and returns it with the port made
// explicit. Accepted schemes are tcp:// and ssl:// (MQTT over TCP, plain or
// TLS) and ws:// and wss:// (MQTT over WebSocket, which may have a path such
// as /mqtt). Credentials in the URL are refused: they belong in
// mqtt.username and mqtt.password_file.
func NormalizeBrokerURL(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("must not be empty; e.g. tcp://localhost:1883")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL: %v", s, err)
	}
	def := defaultPort(u.Scheme)
	if def == "" {
		return "", fmt.Errorf("%q: scheme %q is not supported; use tcp://, ssl://, ws:// or wss://", s, u.Scheme)
	}
	if u.User != nil {
		return "", fmt.Errorf("%q has credentials in it; use mqtt.username and mqtt.password_file", s)
	}
	if u.Hostname() == "" {
		return "", fmt.Errorf("%q has no host; e.g. %s://localhost:%s", s, u.Scheme, def)
	}
	port := u.Port()
	if port == "" {
		port = def
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("%q: port %q is not a number from 1 to 65535", s, port)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q: a broker URL takes no query or fragment", s)
	}
	path := u.EscapedPath()
	if (u.Scheme == "tcp" || u.Scheme == "ssl") && path != "" && path != "/" {
		return "", fmt.Errorf("%q: a %s:// broker URL takes no path", s, u.Scheme)
	}
	if u.Scheme == "tcp" || u.Scheme == "ssl" {
		path = ""
	}
	return u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port) + path, nil
}
