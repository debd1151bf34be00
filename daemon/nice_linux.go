package daemon

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// setNice sets the scheduling priority of every thread of the process.
// Linux keeps a nice value per thread and a new thread inherits its
// creator's, so setting all current threads covers the ones the Go runtime
// starts later.
func setNice(nice int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("daemon: nice: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice); err != nil {
			return fmt.Errorf("daemon: nice %d: %w", nice, err)
		}
	}
	return nil
}
