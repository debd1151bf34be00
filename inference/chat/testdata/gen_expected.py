#!/usr/bin/env python3
"""Writes expected.json: the prompts the published chat templates in
templates/ produce for fixed conversations, rendered with Jinja2 configured
the way Hugging Face transformers renders chat templates (trim_blocks,
lstrip_blocks, loop controls, raise_exception, a tojson that keeps non-ASCII
text and Python's separators, strftime_now at a fixed date).

    cd inference/chat/testdata && python3 gen_expected.py > expected.json

Needs only jinja2. The Go tests read expected.json; they never run Python.
"""

import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

# The date strftime_now reports, so templates that print today's date
# (Llama 3.2) render the same text every time.
FIXED_NOW = datetime(2025, 3, 14)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                      separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return FIXED_NOW.strftime(fmt)


ENV = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                    extensions=[loopcontrols])
ENV.filters["tojson"] = tojson
ENV.globals["raise_exception"] = raise_exception
ENV.globals["strftime_now"] = strftime_now

CONVERSATIONS = {
    # The conversation the acceptance test names: system, user, assistant, user.
    "basic": [
        {"role": "system", "content": "You are a helpful assistant"},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there"},
        {"role": "user", "content": "Who are you"},
    ],
    # No system message (default system prompts), padded user text (trimming).
    "nosystem": [
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "  What is 2+2?  "},
    ],
    # llama.cpp's tests/test-chat-template.cpp conversation.
    "llamacpp": [
        {"role": "system", "content": "You are a helpful assistant"},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there"},
        {"role": "user", "content": "Who are you"},
        {"role": "assistant", "content": "   I am an assistant   "},
        {"role": "user", "content": "Another question"},
    ],
    # A tool round trip: the assistant calls a tool and its result comes back.
    "toolcall": [
        {"role": "system", "content": "You are a weather bot."},
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {
                "name": "get_weather",
                "arguments": {"location": "Paris, France", "unit": "celsius", "days": 1}}}]},
        {"role": "tool", "content": "{\"temperature\": 22.5, \"sky\": \"clear\"}"},
    ],
    "toolcall-nosystem": [
        {"role": "user", "content": "Weather in Paris and Zürich?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [
            {"type": "function", "function": {
                "name": "get_weather", "arguments": {"location": "Paris"}}},
            {"type": "function", "function": {
                "name": "get_weather", "arguments": {"location": "Zürich"}}}]},
        {"role": "tool", "content": "sunny"},
        {"role": "tool", "content": "rain"},
    ],
}

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather for a location.",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City, e.g. \"Paris, France\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7.5},
            },
            "required": ["location"],
        }}},
    {"type": "function", "function": {
        "name": "get_time",
        "description": "Current time <in> a zone & more.",
        "parameters": {"type": "object", "properties": {}}}},
]

# template file, bos_token, eos_token, the date string Template.Date must be
# set to (empty: the template's default), cases as (conversation, add
# generation prompt, with tools).
PLAIN = [("basic", True, False), ("basic", False, False),
         ("nosystem", True, False), ("llamacpp", True, False)]
MODELS = [
    ("tinyllama-1.1b-chat-v1.0.jinja", "<s>", "</s>", "", PLAIN),
    ("qwen2.5-instruct.jinja", "", "<|im_end|>", "", PLAIN + [
        ("toolcall", True, True), ("toolcall-nosystem", True, True),
        ("toolcall-nosystem", False, False)]),
    ("qwen2-instruct.jinja", "", "<|im_end|>", "", PLAIN),
    ("smollm2-instruct.jinja", "<|im_start|>", "<|im_end|>", "", PLAIN),
    ("openhermes-2.5-chatml.jinja", "<s>", "<|im_end|>", "", PLAIN),
    ("llama-2-chat.jinja", "<s>", "</s>", "", PLAIN),
    ("llama-3-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>", "", PLAIN),
    ("llama-3.1-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>", "", PLAIN + [
        ("toolcall", True, True)]),
    ("llama-3.2-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>",
     FIXED_NOW.strftime("%d %b %Y"), PLAIN + [("toolcall", True, True)]),
    ("phi-3-mini-4k-instruct.jinja", "<s>", "<|endoftext|>", "", PLAIN),
    ("phi-3.5-mini-instruct.jinja", "<s>", "<|endoftext|>", "", PLAIN),
]


def main():
    cases = []
    for name, bos, eos, date, runs in MODELS:
        with open("templates/" + name, encoding="utf-8") as f:
            tmpl = ENV.from_string(f.read())
        for conv, gen, with_tools in runs:
            ctx = dict(messages=CONVERSATIONS[conv], add_generation_prompt=gen,
                       bos_token=bos, eos_token=eos)
            if with_tools:
                ctx["tools"] = TOOLS
            cases.append({"template": name, "conversation": conv,
                          "add_generation_prompt": gen, "tools": with_tools,
                          "bos": bos, "eos": eos, "date": date,
                          "output": tmpl.render(**ctx)})
    json.dump({"generator": "gen_expected.py, jinja2 " + jinja2.__version__,
               "conversations": CONVERSATIONS, "tools": TOOLS, "cases": cases},
              sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
