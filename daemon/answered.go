package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// AnsweredFile is the file in state_dir that lists the ids of recently
// answered requests, one per line.
const AnsweredFile = "answered-ids"

// Answered remembers the ids of the most recent answered requests, in
// memory and (when it has a directory) in a file that survives restarts, so
// that a QoS 1 request the broker delivers again — because the daemon
// stopped after answering it but before acknowledging it — is answered once.
// It is safe for concurrent use.
type Answered struct {
	mu    sync.Mutex
	keep  int
	order []string
	set   map[string]struct{}
	path  string   // "" = memory only
	f     *os.File // append handle
	lines int      // lines in the file
}

// OpenAnswered loads the list from dir (created if missing) and keeps the
// newest keep ids. With dir "" the list lives in memory only.
func OpenAnswered(dir string, keep int) (*Answered, error) {
	a := &Answered{keep: max(keep, 1), set: map[string]struct{}{}}
	if dir == "" {
		return a, nil
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("daemon: state dir: %w", err)
	}
	a.path = filepath.Join(dir, AnsweredFile)
	f, err := os.Open(a.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("daemon: answered ids: %w", err)
	default:
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if id := sc.Text(); id != "" {
				a.add(id)
			}
		}
		err := sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("daemon: answered ids: %s: %w", a.path, err)
		}
	}
	if err := a.rewrite(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *Answered) add(id string) {
	if _, ok := a.set[id]; ok {
		return
	}
	a.set[id] = struct{}{}
	a.order = append(a.order, id)
	if len(a.order) > a.keep {
		delete(a.set, a.order[0])
		a.order = append(a.order[:0], a.order[1:]...)
	}
}

// rewrite replaces the file with the ids in memory (atomically) and reopens
// it for appending.
func (a *Answered) rewrite() error {
	if a.f != nil {
		a.f.Close()
		a.f = nil
	}
	tmp := a.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return fmt.Errorf("daemon: answered ids: %w", err)
	}
	w := bufio.NewWriter(f)
	for _, id := range a.order {
		w.WriteString(id)
		w.WriteByte('\n')
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
		return fmt.Errorf("daemon: answered ids: %w", err)
	}
	a.f, err = os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("daemon: answered ids: %w", err)
	}
	a.lines = len(a.order)
	return nil
}

// Has reports whether id was answered.
func (a *Answered) Has(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.set[id]
	return ok
}

// Add records id as answered and, with a file, appends and syncs it before
// returning (the caller acknowledges the request after that).
func (a *Answered) Add(id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.set[id]; ok {
		return nil
	}
	a.add(id)
	if a.f == nil {
		return nil
	}
	if a.lines >= 2*a.keep {
		return a.rewrite()
	}
	if _, err := a.f.WriteString(id + "\n"); err != nil {
		return fmt.Errorf("daemon: answered ids: %w", err)
	}
	a.lines++
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("daemon: answered ids: %w", err)
	}
	return nil
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
