package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// pyJSON rewrites the JSON value raw the way Python's json.dumps(value,
// ensure_ascii=False, indent=indent) writes it after json.loads, which is
// what chat templates' tojson filter produces under transformers: object keys
// in their order, ", " and ": " separators on one line (indent 0), or one
// item per line indented by indent spaces per level; strings with only '"',
// '\' and control characters escaped; numbers as Python prints them.
func pyJSON(raw []byte, indent int) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	if err := pyValue(dec, &b, indent, 0); err != nil {
		return "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", errors.New("data after the JSON value")
	}
	return b.String(), nil
}

// pyValue writes the next value of dec.
func pyValue(dec *json.Decoder, b *strings.Builder, indent, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		return pyContainer(dec, b, v, indent, depth)
	case string:
		writePyString(b, v)
	case json.Number:
		return writePyNumber(b, string(v))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case nil:
		b.WriteString("null")
	}
	return nil
}

// pyContainer writes the object or array opened by open.
func pyContainer(dec *json.Decoder, b *strings.Builder, open json.Delim, indent, depth int) error {
	b.WriteByte(byte(open))
	n := 0
	for ; dec.More(); n++ {
		if n > 0 {
			b.WriteByte(',')
			if indent == 0 {
				b.WriteByte(' ')
			}
		}
		newline(b, indent, depth+1)
		if open == '{' {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			writePyString(b, key.(string)) // the decoder only returns string keys
			b.WriteString(": ")
		}
		if err := pyValue(dec, b, indent, depth+1); err != nil {
			return err
		}
	}
	end, err := dec.Token()
	if err != nil {
		return err
	}
	if n > 0 {
		newline(b, indent, depth)
	}
	b.WriteByte(byte(end.(json.Delim)))
	return nil
}

// newline starts a line indented for depth, when indenting.
func newline(b *strings.Builder, indent, depth int) {
	if indent > 0 {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(" ", indent*depth))
	}
}

// pyJSONString returns s as Python's json.dumps(s, ensure_ascii=False).
func pyJSONString(s string) string {
	var b strings.Builder
	writePyString(&b, s)
	return b.String()
}

// writePyString writes s quoted as Python's json.dumps with
// ensure_ascii=False: only '"', '\' and characters below U+0020 escaped.
func writePyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// writePyNumber writes a JSON number as Python prints what json.loads makes
// of it: integers as they are, others as the shortest float repr ("1.0",
// "0.0001", "1e-05", "1e+16").
func writePyNumber(b *strings.Builder, num string) error {
	if !strings.ContainsAny(num, ".eE") {
		if num == "-0" {
			num = "0"
		}
		b.WriteString(num)
		return nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil && !math.IsInf(f, 0) {
		return err
	}
	switch {
	case math.IsInf(f, 1):
		b.WriteString("Infinity")
	case math.IsInf(f, -1):
		b.WriteString("-Infinity")
	default:
		b.WriteString(pyFloatRepr(f))
	}
	return nil
}

// pyFloatRepr returns Python's repr of a finite float: the shortest digits
// that round-trip, positional for decimal exponents -4 … 15, scientific
// otherwise.
func pyFloatRepr(f float64) string {
	e := strconv.FormatFloat(f, 'e', -1, 64) // like -1.2345e+06
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
