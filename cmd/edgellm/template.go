package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/chat"
)

// templateTimeout bounds the rendering: a template that has not finished by
// then is not going to.
const templateTimeout = 30 * time.Second

func cmdTemplate(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("template", flag.ContinueOnError)
	model := fs.String("m", "", "render the chat template of the GGUF `MODEL` (its tokenizer.chat_template, BOS and EOS)")
	file := fs.String("template", "", "render the Jinja template in `FILE.jinja` instead")
	bos := fs.String("bos", "", "bos_token `TEXT` (default: the model's; none with --template)")
	eos := fs.String("eos", "", "eos_token `TEXT` (default: the model's; none with --template)")
	messages := fs.String("messages", "", "the conversation: a `FILE.json` with an OpenAI-style array of messages")
	tools := fs.String("tools", "", "the tools: a `FILE.json` with an OpenAI-style array of tools")
	noGen := fs.Bool("no-generation-prompt", false, "leave out the opening of the assistant's turn (add_generation_prompt false)")
	think := fs.Bool("think", false, "enable_thinking true (without it: false, as the daemon renders by default)")
	date := fs.String("date", "", "the date strftime_now reports, `YYYY-MM-DD` (default: today)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if (*model == "") == (*file == "") {
		return usagef("give one of -m MODEL and --template FILE.jinja")
	}
	if *messages == "" {
		return usagef("--messages FILE.json is required")
	}
	now := chat.Day(time.Now())
	if *date != "" {
		if now, err = time.ParseInLocation("2006-01-02", *date, time.Local); err != nil {
			return usagef("--date %q: want YYYY-MM-DD", *date)
		}
	}
	var f *chat.Format
	if *model != "" {
		f, err = inference.ChatFormatOf(*model, "")
	} else {
		f, err = chat.JinjaFile(*file)
	}
	if err != nil {
		return err
	}
	in := chat.Input{AddGenerationPrompt: !*noGen, Now: now, DecodeArguments: true,
		Kwargs: map[string]any{"enable_thinking": *think}, BOS: f.BOS, EOS: f.EOS}
	if flagSet(fs, "bos") {
		in.BOS = *bos
	}
	if flagSet(fs, "eos") {
		in.EOS = *eos
	}
	if in.Messages, err = readJSONArray(*messages, "--messages"); err != nil {
		return err
	}
	if *tools != "" {
		if in.Tools, err = readJSONArray(*tools, "--tools"); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), templateTimeout)
	defer cancel()
	text, err := f.Render(ctx, in)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, text)
	return err
}

// readJSONArray reads a file holding a JSON array, for flag name.
func readJSONArray(path, name string) (json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var probe []json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%s %s: not a JSON array: %w", name, path, err)
	}
	return data, nil
}
