package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/storage"
	"github.com/mochi-mqtt/server/v2/hooks/storage/bolt"
	"go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
)

// store is mochi's bbolt storage hook with two corrections:
//
//   - it does not save the $SYS statistics, which mochi hands it at every
//     $SYS refresh: that would be a write (and an fsync) every few seconds
//     on the Pi's SD card for counters nobody needs after a restart;
//   - it restores the packet ids of stored in-flight messages. The hook
//     (v2.7.9) saves those messages without their packet id, and mochi then
//     refuses to resend them after a restart ("missing packet id"), losing
//     the QoS 1 messages queued for offline clients. The id is still part
//     of each message's storage key, "IFM_<client>:<packet id>".
type store struct {
	*bolt.Hook
}

// Provides reports the hook methods the store implements: the bolt hook's,
// minus the $SYS statistics.
func (s store) Provides(b byte) bool {
	return b != mochi.OnSysInfoTick && b != mochi.StoredSysInfo && s.Hook.Provides(b)
}

// StoredInflightMessages returns the stored in-flight messages with their
// packet ids, dropping any whose id cannot be recovered.
func (s store) StoredInflightMessages() ([]storage.Message, error) {
	msgs, err := s.Hook.StoredInflightMessages()
	if err != nil {
		return nil, err
	}
	kept := msgs[:0]
	for _, m := range msgs {
		if m.PacketID == 0 {
			i := strings.LastIndexByte(m.ID, ':')
			id, err := strconv.ParseUint(m.ID[i+1:], 10, 16)
			if i < 0 || err != nil || id == 0 {
				s.Log.Warn("dropping a stored in-flight message without a packet id", "key", m.ID)
				continue
			}
			m.PacketID = uint16(id)
		}
		kept = append(kept, m)
	}
	return kept, nil
}

// addStore adds the persistence hook with its file in dir.
func addStore(srv *mochi.Server, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("broker: state directory: %w", err)
	}
	path := filepath.Join(dir, StoreFile)
	err := srv.AddHook(store{new(bolt.Hook)}, &bolt.Options{
		Path:    path,
		Options: &bbolt.Options{Timeout: storeLockTimeout},
	})
	if errors.Is(err, bberrors.ErrTimeout) {
		return fmt.Errorf("broker: store %s is locked by another process (is another edgellm or broker running?)", path)
	}
	if err != nil {
		return fmt.Errorf("broker: store %s: %w", path, err)
	}
	return nil
}
