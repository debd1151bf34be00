package daemon

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// AnsweredFile is the file in state_dir that lists the recently answered
// deliveries, one per line: "<packet id> <sha256 of the payload, hex>
// <request id>".
const AnsweredFile = "answered-deliveries"

// legacyAnsweredFile is the list of bare request ids older versions kept. A
// bare id cannot tell a redelivery from a new request that reuses the id, so
// it is not read: OpenAnswered removes it.
const legacyAnsweredFile = "answered-ids"

// answeredHeader is the first line of AnsweredFile.
const answeredHeader = "edgellm answered deliveries v2"

// Delivery identifies one delivery of a request by what a broker keeps when
// it delivers the same message again: the MQTT packet identifier and the
// payload (its SHA-256).
type Delivery struct {
	PacketID uint16
	Digest   [sha256.Size]byte
}

// DeliveryOf returns the Delivery of a message with this packet id and
// payload.
func DeliveryOf(packetID uint16, payload []byte) Delivery {
	return Delivery{PacketID: packetID, Digest: sha256.Sum256(payload)}
}

// Answered remembers the most recent answered deliveries, in memory and
// (when it has a directory) in a file that survives a crash, so that a QoS 1
// request the broker delivers again — because the daemon stopped after
// answering it but before its acknowledgement reached the broker — is
// answered once. Only a redelivery (the MQTT DUP flag) is checked against
// it: a new request is answered whatever its id and payload. It is safe for
// concurrent use.
type Answered struct {
	mu    sync.Mutex
	keep  int
	order []answeredEntry
	set   map[Delivery]int // how many entries of order have the key
	path  string           // "" = memory only
	f     *os.File         // append handle
	lines int              // entry lines in the file
}

type answeredEntry struct {
	key Delivery
	id  string // the request id, for the file's reader
}

// OpenAnswered loads the list from dir (created if missing) and keeps the
// newest keep deliveries. With dir "" the list lives in memory only.
func OpenAnswered(dir string, keep int) (*Answered, error) {
	a := &Answered{keep: max(keep, 1), set: map[Delivery]int{}}
	if dir == "" {
		return a, nil
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("daemon: state dir: %w", err)
	}
	if err := os.Remove(filepath.Join(dir, legacyAnsweredFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("daemon: answered ids: %w", err)
	}
	a.path = filepath.Join(dir, AnsweredFile)
	f, err := os.Open(a.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("daemon: answered deliveries: %w", err)
	default:
		err := a.read(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("daemon: answered deliveries: %s: %w", a.path, err)
		}
	}
	if err := a.rewrite(); err != nil {
		return nil, err
	}
	return a, nil
}

// read loads the entries of the file. A torn last line (a crash while
// appending) is skipped; any other malformed line is an error.
func (a *Answered) read(f *os.File) error {
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return sc.Err() // empty file
	}
	if sc.Text() != answeredHeader {
		return fmt.Errorf("first line %q is not %q", abbreviate(sc.Text()), answeredHeader)
	}
	var bad error
	for n := 2; sc.Scan(); n++ {
		if bad != nil {
			return bad // the malformed line was not the last one
		}
		e, err := parseAnswered(sc.Text())
		if err != nil {
			bad = fmt.Errorf("line %d: %w", n, err)
			continue
		}
		a.add(e)
	}
	return sc.Err()
}

func parseAnswered(line string) (answeredEntry, error) {
	fields := strings.Fields(line)
	if len(fields) != 3 {
		return answeredEntry{}, errors.New("want <packet id> <sha256> <request id>")
	}
	pid, err := strconv.ParseUint(fields[0], 10, 16)
	if err != nil {
		return answeredEntry{}, fmt.Errorf("packet id: %w", err)
	}
	e := answeredEntry{key: Delivery{PacketID: uint16(pid)}, id: fields[2]}
	if n, err := hex.Decode(e.key.Digest[:], []byte(fields[1])); err != nil || n != sha256.Size || len(fields[1]) != 2*sha256.Size {
		return answeredEntry{}, errors.New("digest is not 64 hex digits")
	}
	return e, nil
}

func (e answeredEntry) line() string {
	return strconv.Itoa(int(e.key.PacketID)) + " " + hex.EncodeToString(e.key.Digest[:]) + " " + e.id + "\n"
}

func abbreviate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func (a *Answered) add(e answeredEntry) {
	a.set[e.key]++
	a.order = append(a.order, e)
	if len(a.order) > a.keep {
		old := a.order[0].key
		if a.set[old]--; a.set[old] == 0 {
			delete(a.set, old)
		}
		a.order = append(a.order[:0], a.order[1:]...)
	}
}

// rewrite replaces the file with the entries in memory (atomically) and
// reopens it for appending.
func (a *Answered) rewrite() error {
	if a.f != nil {
		a.f.Close()
		a.f = nil
	}
	tmp := a.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("daemon: answered deliveries: %w", err)
	}
	w := bufio.NewWriter(f)
	w.WriteString(answeredHeader + "\n")
	for _, e := range a.order {
		w.WriteString(e.line())
	}
	err = w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, a.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("daemon: answered deliveries: %w", err)
	}
	a.f, err = os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("daemon: answered deliveries: %w", err)
	}
	a.lines = len(a.order)
	return nil
}

// Has reports whether delivery k was answered.
func (a *Answered) Has(k Delivery) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.set[k] > 0
}

// Len is the number of deliveries remembered.
func (a *Answered) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.order)
}

// Add records delivery k of request id as answered and, with a file, appends
// and syncs it before returning (the caller acknowledges the request after
// that).
func (a *Answered) Add(k Delivery, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := answeredEntry{key: k, id: id}
	a.add(e)
	if a.f == nil {
		return nil
	}
	if a.lines >= 2*a.keep {
		return a.rewrite()
	}
	if _, err := a.f.WriteString(e.line()); err != nil {
		return fmt.Errorf("daemon: answered deliveries: %w", err)
	}
	a.lines++
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("daemon: answered deliveries: %w", err)
	}
	return nil
}

// Clear forgets every delivery. The daemon calls it after a clean
// disconnection: the broker has every acknowledgement then, so none of them
// can be delivered again, and a broker that numbers packets anew after its
// own restart cannot make an old entry match a new message.
func (a *Answered) Clear() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.order, a.set = nil, map[Delivery]int{}
	if a.path == "" {
		return nil
	}
	return a.rewrite()
}

// Close closes the file.
func (a *Answered) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}
