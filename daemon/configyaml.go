package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// decodeStrict decodes data into cfg with unknown keys rejected, and turns
// yaml's "line N: cannot unmarshal …" messages into errors naming the key.
func decodeStrict(data []byte, cfg *Config, valueLines map[int][]string) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(cfg)
	if err == nil {
		var extra yaml.Node
		if dec.Decode(&extra) != io.EOF {
			return &FieldError{Line: extra.Line, Msg: "more than one YAML document; the configuration is a single mapping"}
		}
		return nil
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return &FieldError{Msg: err.Error()}
	}
	var errs []error
	for _, msg := range te.Errors {
		fe := &FieldError{Msg: msg}
		if rest, ok := strings.CutPrefix(msg, "line "); ok {
			if n, after, ok := strings.Cut(rest, ": "); ok {
				if line, convErr := strconv.Atoi(n); convErr == nil {
					fe.Line = line
					fe.Msg = friendlyTypeError(after)
					if keys := valueLines[line]; len(keys) > 0 {
						fe.Key = keys[0]
					}
				}
			}
		}
		errs = append(errs, fe)
	}
	return errors.Join(errs...)
}

// friendlyTypeError rewrites yaml's Go type names into what to write instead.
func friendlyTypeError(msg string) string {
	i := strings.LastIndex(msg, " into ")
	if i < 0 {
		return msg
	}
	want := msg[i+len(" into "):]
	switch want {
	case "int", "int64":
		want = "an integer"
	case "float64":
		want = "a number"
	case "bool":
		want = "true or false"
	case "string":
		want = "a string"
	case "time.Duration":
		want = "a duration such as 30s, 5m or 1h"
	default:
		if strings.HasPrefix(want, "daemon.") {
			want = "a mapping of keys"
		}
	}
	got := strings.TrimPrefix(msg[:i], "cannot unmarshal ")
	return fmt.Sprintf("want %s, got %s", want, got)
}

// walkKeys checks every key of the mapping node n against the struct type t,
// recording the line of every key (lines) and of every value (valueLines).
func walkKeys(n *yaml.Node, prefix string, t reflect.Type, lines map[string]int, valueLines map[int][]string) []error {
	section := strings.TrimSuffix(prefix, ".")
	if n.Kind != yaml.MappingNode {
		key := section
		if key == "" {
			return []error{&FieldError{Line: n.Line, Msg: "the configuration must be a mapping of keys (model:, mqtt:, …)"}}
		}
		return []error{&FieldError{Line: n.Line, Key: key, Msg: "want a mapping of keys, got " + describeNode(n)}}
	}
	fields := yamlFields(t)
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		path := prefix + k.Value
		ft, ok := fields[k.Value]
		if !ok {
			errs = append(errs, &FieldError{Line: k.Line, Key: path,
				Msg: fmt.Sprintf("unknown key; the keys of %s are: %s", sectionName(section), strings.Join(sortedKeys(fields), ", "))})
			continue
		}
		lines[path] = k.Line
		isSection := ft.Kind() == reflect.Struct && ft != reflect.TypeOf(time.Duration(0))
		if !isSection || v.Kind != yaml.MappingNode {
			// A block mapping starts on its first key's line: record only
			// leaves, so a type error on that line names the leaf.
			valueLines[v.Line] = append(valueLines[v.Line], path)
		}
		if isSection {
			if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				continue // "model:" with nothing under it: defaults
			}
			errs = append(errs, walkKeys(v, path+".", ft, lines, valueLines)...)
		}
	}
	return errs
}

func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	default:
		return "something else"
	}
}

func sectionName(section string) string {
	if section == "" {
		return "the top level"
	}
	return section
}

// yamlField is an exported struct field with a yaml key.
type yamlField struct {
	name string
	typ  reflect.Type
}

// yamlFieldList lists the fields of t that have a yaml key, in struct order.
func yamlFieldList(t reflect.Type) []yamlField {
	var out []yamlField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		out = append(out, yamlField{name, f.Type})
	}
	return out
}

// yamlFields maps the yaml key of each exported field of t to its type.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for _, f := range yamlFieldList(t) {
		m[f.name] = f.typ
	}
	return m
}

func sortedKeys(m map[string]reflect.Type) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
