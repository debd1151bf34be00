#!/usr/bin/python3
"""Renders every template in ../templates.json with every conversation in
../conversations.json using Python's Jinja2 set up the way Hugging Face
transformers sets it up for apply_chat_template, and writes the results to
out/python.json as {"generator": ..., "results": {FILE: {CONVERSATION:
{"output": TEXT} | {"error": MESSAGE}}}}.

    /usr/bin/python3 gen.py [DATA_DIR]

The set-up, as transformers' _compile_jinja_template does it:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the
loopcontrols extension and a {% generation %} block that only renders its
body; a tojson filter that is json.dumps(x, ensure_ascii=False, indent=None,
separators=None, sort_keys=False); raise_exception raising TemplateError; and
strftime_now, here fixed to 2025-03-14 so the outputs do not change with the
day. The render call gets messages, tools (None without tools), documents
(None), add_generation_prompt, bos_token, eos_token and the conversation's
kwargs, like apply_chat_template with the tokenizer's special tokens.
"""

import json
import os
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

# raise_exception, tojson and strftime_now (at 2025-03-14 00:00:00) are the
# ones the older fixtures' generator defines, two folders up.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from gen_expected import raise_exception, strftime_now, tojson  # noqa: E402


class GenerationBlock(Extension):
    """{% generation %}...{% endgeneration %}: renders its body unchanged
    (transformers uses it to mark assistant tokens)."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationBlock, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, tpl, conv):
    template = env.from_string(source)
    ctx = dict(conv.get("kwargs", {}))
    ctx.update(
        messages=conv["messages"],
        tools=conv.get("tools"),
        documents=None,
        add_generation_prompt=conv["add_generation_prompt"],
        bos_token=tpl["bos_token"],
        eos_token=tpl["eos_token"],
    )
    return template.render(**ctx)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    data = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(here)
    with open(os.path.join(data, "templates.json"), encoding="utf-8") as f:
        templates = json.load(f)
    with open(os.path.join(data, "conversations.json"), encoding="utf-8") as f:
        conversations = json.load(f)
    env = environment()
    results = {}
    for tpl in templates:
        with open(os.path.join(data, "templates", tpl["file"]), encoding="utf-8", newline="") as f:
            source = f.read()
        per = results[tpl["file"]] = {}
        for name, conv in conversations.items():
            try:
                per[name] = {"output": render(env, source, tpl, conv)}
            except Exception as e:  # a template error, a raise_exception, an undefined call
                per[name] = {"error": "%s: %s" % (type(e).__name__, e)}
    out = {
        "generator": "Python %s, Jinja2 %s (%s)" % (
            sys.version.split()[0], jinja2.__version__, jinja2.__file__),
        "results": results,
    }
    os.makedirs(os.path.join(here, "out"), exist_ok=True)
    with open(os.path.join(here, "out", "python.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
