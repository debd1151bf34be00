package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/edgellm/edgellm/daemon"
)

func cmdServe(args []string, _ io.Reader, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	config := fs.String("config", "/etc/edgellm/config.yaml", "configuration `FILE`")
	check := fs.Bool("check", false, "validate the configuration and the files it names, then exit")
	debug := fs.Bool("debug", false, "log debug messages")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *check {
		summary, err := daemon.Check(*config)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, summary)
		return nil
	}
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	return daemon.Run(daemon.Options{ConfigPath: *config, Version: version, Logger: daemon.NewLogger(level),
		TemplateProbe: templateProber()})
}
