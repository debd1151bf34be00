//go:build unix && !linux

package daemon

import "golang.org/x/sys/unix"

// setNice sets the process's scheduling priority.
func setNice(nice int) error {
	return unix.Setpriority(unix.PRIO_PROCESS, 0, nice)
}
