package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

func cmdEval(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	model := fs.String("m", "", "`MODEL` file (GGUF)")
	idList := fs.String("ids", "", "comma-separated token `IDS` to feed")
	text := fs.String("text", "", "`TEXT` to tokenize (as 'tokenize --special') and feed")
	out := fs.String("logits", "", "output `FILE`: one row of float32 logits per position")
	threads := fs.Int("j", 0, "use `THREADS` threads (default: the CPUs this process may use)")
	kvName := kvTypeFlag(fs)
	repack := repackFlag(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef("unexpected argument %q", pos[0])
	case *model == "":
		return usagef("-m MODEL is required")
	case *out == "":
		return usagef("--logits OUT.f32 is required")
	case flagSet(fs, "ids") == flagSet(fs, "text"):
		return usagef("give exactly one of --ids and --text")
	case *threads < 0:
		return usagef("-j must not be negative")
	}
	kv, err := kvTypeOf(*kvName)
	if err != nil {
		return err
	}
	var ids []int32
	if flagSet(fs, "ids") {
		if ids, err = parseIDs(*idList); err != nil {
			return usageError{err.Error()}
		}
	}
	m, err := loadModel(*model, *repack, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	if flagSet(fs, "text") {
		if ids, err = m.Tokenizer.Encode(*text, true); err != nil {
			return err
		}
		if len(ids) == 0 {
			return fmt.Errorf("--text gives no tokens")
		}
	}
	for i, id := range ids {
		if id < 0 || int(id) >= m.Config.NVocab {
			return fmt.Errorf("id %d (position %d) is out of the vocabulary [0, %d)", id, i, m.Config.NVocab)
		}
	}
	s, err := m.NewStateKV(len(ids), *threads, kv)
	if err != nil {
		return err
	}
	defer s.Close()

	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	row := make([]byte, 4*m.Config.NVocab)
	err = s.Eval(ids, func(_ int, logits []float32) error {
		for i, v := range logits {
			binary.LittleEndian.PutUint32(row[4*i:], math.Float32bits(v))
		}
		_, err := w.Write(row)
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(*out)
		return err
	}
	return json.NewEncoder(stdout).Encode(struct {
		IDs []int32 `json:"ids"`
	}{ids})
}

// parseIDs parses "1,2,3" (spaces allowed).
func parseIDs(s string) ([]int32, error) {
	var ids []int32
	for i, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--ids: item %d %q is not a token id", i+1, f)
		}
		ids = append(ids, int32(v))
	}
	return ids, nil
}
