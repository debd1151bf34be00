#!/usr/bin/python3
"""Joins out/python.json (gen.py) and out/js.json (gen.mjs) into
../expected.json, which keeps only the cases where both renderers agree byte
for byte (or both fail), and ../disagreements.json, which lists the others.

    /usr/bin/python3 combine.py
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)

# Why the renderers disagree, where it was read off the template; keyed by
# template file, then by conversation ("*" for every conversation).
REASONS = {
    "HuggingFaceTB-SmolLM3-3B.jinja": {
        "spaces": "`content.lstrip(\"\\n\")`: @huggingface/jinja's lstrip ignores its argument and strips all leading whitespace (the assistant's \"  4\" becomes \"4\"); Python strips only newlines"},
    "Qwen-QwQ-32B.jinja": {
        "spaces": "`content.split('</think>')[-1].lstrip('\\n')`: @huggingface/jinja's lstrip ignores its argument and strips all leading whitespace (the assistant's \"  4\" becomes \"4\"); Python strips only newlines"},
    "LFM2.5-8B-A1B.jinja": {
        "tool_round_trip": "`arg_value | string` on the list argument domain=['light']: Jinja2 prints Python's repr ['light'], @huggingface/jinja JSON [\"light\"]"},
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": {
        "*": "json_to_python_type(json_spec|items) for the array parameter 'domain' then indexes basic_type_map with the undefined json_spec.type: Jinja2 goes on (the undefined type is an empty iterable, so it prints list[Union[]]), @huggingface/jinja throws"},
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": {
        "content_parts": "a list of content parts printed as a string: Jinja2 prints Python's repr [{'type': 'text', ...}], @huggingface/jinja JSON [{\"type\": \"text\", ...}]"},
    "meetkai-functionary-medium-v3.2.jinja": {
        "*": "`{% for field, field_name in [(\"maximum\", \"Maximum\"), ...] %}` unpacks tuples in a for loop, which @huggingface/jinja cannot (\"Cannot unpack non-iterable type: TupleValue\")"},
}


# Why, by what the renderers say, for causes that recur across templates.
PATTERNS = [
    (lambda py, js: 'can only concatenate str (not "list") to str' in py.get("error", "") and "output" in js,
     "string + list (the content given as a list of parts): Jinja2 raises TypeError, @huggingface/jinja concatenates the parts' JSON text"),
    (lambda py, js: 'can only concatenate str (not "dict") to str' in py.get("error", "") and "output" in js,
     "string + object (tool-call arguments given as an object): Jinja2 raises TypeError, @huggingface/jinja concatenates \"[object Map]\""),
    (lambda py, js: "Unknown ArrayValue filter: trim" in js.get("error", "") and "output" in py,
     "`| trim` on a list (the content given as a list of parts): Jinja2 trims the list's Python repr, @huggingface/jinja has no trim for arrays and throws"),
    (lambda py, js: 'Cannot apply filter "trim" to type: NullValue' in js.get("error", "") and "output" in py,
     "`| trim` on a null content: Jinja2 prints None, @huggingface/jinja throws"),
]


def first_difference(a, b):
    n = min(len(a), len(b))
    i = next((k for k in range(n) if a[k] != b[k]), n)
    return i, a[max(0, i - 20):i + 20], b[max(0, i - 20):i + 20]


def reason_for(tpl, conv, py, js):
    for test, why in PATTERNS:
        if test(py, js):
            return why
    r = REASONS.get(tpl, {})
    if conv in r:
        return r[conv]
    if "*" in r:
        return r["*"]
    if "error" in py:
        return "only Jinja2 fails: " + py["error"]
    if "error" in js:
        return "only @huggingface/jinja fails: " + js["error"]
    i, a, b = first_difference(py["output"], js["output"])
    return "outputs differ from character %d: Jinja2 %r, @huggingface/jinja %r" % (i, a, b)


def main():
    with open(os.path.join(HERE, "out", "python.json"), encoding="utf-8") as f:
        py = json.load(f)
    with open(os.path.join(HERE, "out", "js.json"), encoding="utf-8") as f:
        js = json.load(f)
    with open(os.path.join(DATA, "templates.json"), encoding="utf-8") as f:
        templates = [t["file"] for t in json.load(f)]
    with open(os.path.join(DATA, "conversations.json"), encoding="utf-8") as f:
        conversations = list(json.load(f))
    cases, disagreements = [], []
    for tpl in templates:
        for conv in conversations:
            a, b = py["results"][tpl][conv], js["results"][tpl][conv]
            if "error" in a and "error" in b:
                cases.append({"template": tpl, "conversation": conv, "error": True})
            elif "output" in a and "output" in b and a["output"] == b["output"]:
                cases.append({"template": tpl, "conversation": conv, "output": a["output"]})
            else:
                disagreements.append({"template": tpl, "conversation": conv,
                                      "reason": reason_for(tpl, conv, a, b),
                                      "jinja2": a, "huggingface_jinja": b})
    generator = "%s; %s; transformers' chat-template set-up (see README.md)" % (py["generator"], js["generator"])
    with open(os.path.join(DATA, "expected.json"), "w", encoding="utf-8") as f:
        json.dump({"generator": generator, "date": "2025-03-14", "cases": cases},
                  f, ensure_ascii=False, indent=1)
        f.write("\n")
    with open(os.path.join(DATA, "disagreements.json"), "w", encoding="utf-8") as f:
        json.dump({"generator": generator, "date": "2025-03-14", "disagreements": disagreements},
                  f, ensure_ascii=False, indent=1)
        f.write("\n")
    outputs = sum(1 for c in cases if "output" in c)
    print("%d templates x %d conversations: %d agreeing cases (%d outputs, %d errors), %d disagreements"
          % (len(templates), len(conversations), len(cases), outputs, len(cases) - outputs, len(disagreements)))


if __name__ == "__main__":
    main()
