package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/daemon"
	"github.com/edgellm/edgellm/mqtt"
)

// cmdSend is `edgellm send [flags] PROMPT`: a convenience client and smoke
// test. It publishes the prompt as a streamed request to a node, prints the
// answer on stdout as it streams in, then the token counts and speeds on
// stderr. A node that answers with an error makes it exit 1 with that
// error; so does no answer within --timeout (the request is then
// cancelled). With no PROMPT argument the prompt is read from stdin.
func cmdSend(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	broker := fs.String("broker", daemon.DefaultBroker, "broker `URL` (tcp://, ssl://, ws:// or wss://)")
	node := fs.String("node", "", "`NODE` id to ask (default: this host's name, as the daemon's mqtt.node_id)")
	base := fs.String("base", daemon.DefaultBaseTopic, "`BASE` topic (the daemon's mqtt.base_topic)")
	maxTokens := fs.Int("n", 0, "generate at most `N` tokens (default: the node's limits.max_tokens)")
	temp := fs.Float64("t", 0, "temperature `TEMP`, 0 for greedy (default: the node's sampling.temperature)")
	think := fs.Bool("think", false, "let a thinking model reason first; its reasoning is printed on stderr (default: the node's sampling.think)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up, and cancel the request, after `DURATION`")
	user := fs.String("username", "", "broker user `NAME`")
	pwFile := fs.String("password-file", "", "`FILE` holding the broker password")
	ca := fs.String("ca", "", "`FILE` of the CA certificate (PEM) of an ssl:// or wss:// broker (default: the system's)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	prompt := strings.Join(pos, " ")
	if len(pos) == 0 {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("reading the prompt from stdin: %w", err)
		}
		prompt = string(b)
	}
	if strings.TrimSpace(prompt) == "" {
		return usagef("want a PROMPT, as arguments or on stdin")
	}
	brokerURL, err := mqtt.NormalizeBrokerURL(*broker)
	if err != nil {
		return usagef("--broker: %v", err)
	}
	if *node == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("no --node given and no host name: %w", err)
		}
		*node = daemon.NodeIDFromHostname(host)
	}
	topics, err := mqtt.NewTopics(*base, *node)
	if err != nil {
		return usagef("%v", err)
	}
	if *timeout <= 0 {
		return usagef("--timeout must be positive")
	}
	req := mqtt.Request{Request: api.Request{Prompt: prompt}}
	if set["n"] {
		if *maxTokens < 1 {
			return usagef("-n must be at least 1")
		}
		req.MaxTokens = maxTokens
	}
	if set["t"] {
		req.Temperature = temp
	}
	if set["think"] {
		req.Think = think
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var last string
	cfg := mqtt.SendConfig{
		Broker: brokerURL, Username: *user, PasswordFile: *pwFile, CAFile: *ca, Topics: topics,
		OnText: func(s string) { io.WriteString(stdout, s); last = s },
		OnOffline: func() {
			fmt.Fprintf(stderr, "node %s is offline; the request waits in the broker until it is back (up to --timeout %v)\n", *node, *timeout)
		},
	}
	f, err := mqtt.Send(ctx, cfg, req)
	if last != "" && !strings.HasSuffix(last, "\n") {
		fmt.Fprintln(stdout)
	}
	if err != nil {
		return err
	}
	printAnswerStats(stderr, f)
	if f.Status == mqtt.StatusError {
		if f.Error != nil {
			return fmt.Errorf("node %s answered %s: %s", *node, f.Error.Code, f.Error.Message)
		}
		return fmt.Errorf("node %s answered with an error", *node)
	}
	return nil
}

// printAnswerStats writes the final answer's tool calls, token counts and
// speeds.
func printAnswerStats(w io.Writer, f *mqtt.Final) {
	if f.Reasoning != "" {
		fmt.Fprintf(w, "reasoning: %s\n", f.Reasoning)
	}
	for _, tc := range f.ToolCalls {
		fmt.Fprintf(w, "tool call: %s(%s)\n", tc.Name, tc.Arguments)
	}
	var parts []string
	if f.FinishReason != "" {
		parts = append(parts, "finish "+f.FinishReason)
	}
	if u := f.Usage; u != nil {
		s := fmt.Sprintf("%d prompt tokens", u.PromptTokens)
		if u.CachedTokens > 0 {
			s += fmt.Sprintf(" (%d cached)", u.CachedTokens)
		}
		if u.DroppedTokens > 0 {
			s += fmt.Sprintf(" (%d dropped to fit)", u.DroppedTokens)
		}
		gen := fmt.Sprintf("%d generated", u.CompletionTokens)
		if u.ReasoningTokens > 0 {
			gen += fmt.Sprintf(" (%d reasoning)", u.ReasoningTokens)
		}
		parts = append(parts, s, gen)
	}
	if tm := f.Timings; tm != nil {
		parts = append(parts, fmt.Sprintf("first token after %.0f ms", tm.TTFTMs),
			fmt.Sprintf("prefill %.1f tok/s", tm.PrefillTPS), fmt.Sprintf("decode %.1f tok/s", tm.DecodeTPS))
	}
	if len(parts) > 0 {
		fmt.Fprintln(w, strings.Join(parts, "; "))
	}
}
