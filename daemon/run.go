package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Run is `edgellm serve`: Serve with the process's signals wired in —
// SIGTERM and SIGINT stop the daemon gracefully, SIGHUP reloads the
// configuration.
func Run(opts Options) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reload := make(chan struct{}, 1)
	go func() {
		for range hup {
			select {
			case reload <- struct{}{}:
			default:
			}
		}
	}()
	opts.Reload = reload
	return Serve(ctx, opts)
}

// Check is `edgellm serve --check`: it validates the configuration file and
// the files it names, and returns a one-line summary of what would run.
func Check(path string) (string, error) {
	cfg, err := LoadConfig(path)
	if err != nil {
		return "", err
	}
	if err := cfg.CheckFiles(); err != nil {
		return "", err
	}
	slots := "auto (what the memory budget holds)"
	if cfg.Queue.Slots > 0 {
		slots = fmt.Sprint(cfg.Queue.Slots)
	}
	return fmt.Sprintf("%s: OK (model %s, context %d, slots %s, broker %s, topics %s/%s/…)",
		path, cfg.Model.Path, cfg.Model.Context, slots, cfg.MQTT.Broker, cfg.MQTT.BaseTopic, cfg.MQTT.NodeID), nil
}

// NewLogger returns the daemon's logger on stderr: text lines, without
// timestamps under systemd (the journal adds its own).
func NewLogger(level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if os.Getenv("JOURNAL_STREAM") != "" {
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}
