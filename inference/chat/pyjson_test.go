package chat

import "testing"

// The wants are Python's json.dumps(json.loads(in), ensure_ascii=False) and
// the same with indent=2 (Python 3), which is what the templates' tojson
// filter writes.
func TestPyJSON(t *testing.T) {
	cases := []struct {
		in, compact, indented string
	}{
		{
			`{"a": 1.0, "b": 0.1, "c": 1e-5, "d": 1e16, "e": 123456789012345678901, "f": 1.5e300, "g": -0.0, "h": -0, "i": 1E2, "j": 0.0001, "k": 1234567.0, "l": 2.5e-4}`,
			"{\"a\": 1.0, \"b\": 0.1, \"c\": 1e-05, \"d\": 1e+16, \"e\": 123456789012345678901, \"f\": 1.5e+300, \"g\": -0.0, \"h\": 0, \"i\": 100.0, \"j\": 0.0001, \"k\": 1234567.0, \"l\": 0.00025}",
			"{\n  \"a\": 1.0,\n  \"b\": 0.1,\n  \"c\": 1e-05,\n  \"d\": 1e+16,\n  \"e\": 123456789012345678901,\n  \"f\": 1.5e+300,\n  \"g\": -0.0,\n  \"h\": 0,\n  \"i\": 100.0,\n  \"j\": 0.0001,\n  \"k\": 1234567.0,\n  \"l\": 0.00025\n}",
		},
		{
			`["\u00e9\u2028<>&", "ctl\u0001\u001f\u007f", "q\"b\\s\/", "\n\r\t\b\f", "Zürich"]`,
			"[\"\u00e9\u2028<>&\", \"ctl\\u0001\\u001f\u007f\", \"q\\\"b\\\\s/\", \"\\n\\r\\t\\b\\f\", \"Z\u00fcrich\"]",
			"[\n  \"\u00e9\u2028<>&\",\n  \"ctl\\u0001\\u001f\u007f\",\n  \"q\\\"b\\\\s/\",\n  \"\\n\\r\\t\\b\\f\",\n  \"Z\u00fcrich\"\n]",
		},
		{ // json.loads turns an overflowing number into inf
			`[1e999, -1e999]`, "[Infinity, -Infinity]", "[\n  Infinity,\n  -Infinity\n]",
		},
		{
			`{"x": {}, "y": [], "z": [{"a": [1, {"b": null}]}, true, false]}`,
			"{\"x\": {}, \"y\": [], \"z\": [{\"a\": [1, {\"b\": null}]}, true, false]}",
			"{\n  \"x\": {},\n  \"y\": [],\n  \"z\": [\n    {\n      \"a\": [\n        1,\n        {\n          \"b\": null\n        }\n      ]\n    },\n    true,\n    false\n  ]\n}",
		},
	}
	for _, c := range cases {
		for _, w := range []struct {
			indent int
			want   string
		}{{0, c.compact}, {2, c.indented}} {
			got, err := pyJSON([]byte(c.in), w.indent)
			if err != nil {
				t.Fatalf("pyJSON(%s, %d): %v", c.in, w.indent, err)
			}
			if got != w.want {
				t.Errorf("pyJSON(%s, %d)\n got %q\nwant %q", c.in, w.indent, got, w.want)
			}
		}
	}
}

func TestPyJSONRejectsBadJSON(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a" 1}`, `[1,]`, `{"a": 1} x`, `{"a": 1}{}`, `nul`} {
		if got, err := pyJSON([]byte(in), 0); err == nil {
			t.Errorf("pyJSON(%q) = %q, want an error", in, got)
		}
	}
}
