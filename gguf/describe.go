package gguf

import (
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Shortening of metadata values in Describe.
const (
	describeMaxString = 60 // bytes of a string shown before "…"
	describeMaxArray  = 8  // elements of an array shown; longer arrays show their length
	describeKeyWidth  = 40 // width of the key column
)

// TypeHistogram counts the tensors of each type, by the type's name.
func (f *File) TypeHistogram() map[string]int {
	h := map[string]int{}
	for _, t := range f.Tensors {
		h[t.Type.String()]++
	}
	return h
}

// Describe writes what the file holds, for people: every metadata key with
// its value on one line (long strings and arrays shortened), then a line with
// the number of tensors, their bytes and a histogram of their types, and with
// listTensors one line per tensor (name, type, shape, bytes). It needs nothing
// but the file, so it describes files of any architecture.
func (f *File) Describe(w io.Writer, listTensors bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "metadata:        %d keys\n", len(f.KVs))
	width := 0
	for _, kv := range f.KVs {
		width = max(width, min(len(kv.Key), describeKeyWidth))
	}
	for _, kv := range f.KVs {
		fmt.Fprintf(&b, "  %-*s %s\n", width, kv.Key, FormatValue(kv.Value))
	}
	var bytes uint64
	for _, t := range f.Tensors {
		bytes += uint64(len(t.Data))
	}
	hist := f.TypeHistogram()
	types := make([]string, 0, len(hist))
	for t := range hist {
		types = append(types, t)
	}
	sort.Strings(types)
	fmt.Fprintf(&b, "tensors:         %d, %s:", len(f.Tensors), FormatBytes(bytes))
	for _, t := range types {
		fmt.Fprintf(&b, " %s×%d", t, hist[t])
	}
	b.WriteString("\n")
	if listTensors {
		width = 0
		for _, t := range f.Tensors {
			width = max(width, min(len(t.Name), describeKeyWidth))
		}
		for _, t := range f.Tensors {
			fmt.Fprintf(&b, "  %-*s %-5s %-16s %s\n", width, t.Name, t.Type, fmt.Sprint(t.Dims), FormatBytes(uint64(len(t.Data))))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FormatValue formats a metadata value (a Go value as in KV) on one line:
// strings quoted and cut after 60 bytes with their length, arrays of up to 8
// values in full, longer ones as their length and element type.
func FormatValue(v any) string {
	switch v := v.(type) {
	case string:
		if len(v) <= describeMaxString {
			return strconv.Quote(v)
		}
		cut := describeMaxString
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(v[:cut]), len(v))
	case float32:
		return strconv.FormatFloat(float64(v), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return fmt.Sprint(v)
	}
	n := rv.Len()
	if n > describeMaxArray {
		elem := rv.Type().Elem()
		switch elem.Kind() {
		case reflect.String:
			return fmt.Sprintf("[%d strings]", n)
		case reflect.Interface:
			return fmt.Sprintf("[%d arrays]", n)
		}
		return fmt.Sprintf("[%d × %s]", n, elem)
	}
	parts := make([]string, n)
	for i := range n {
		parts[i] = FormatValue(rv.Index(i).Interface())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// FormatBytes formats a size in B, KiB, MiB or GiB with one decimal.
func FormatBytes(n uint64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
