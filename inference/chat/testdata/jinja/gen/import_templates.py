#!/usr/bin/python3
"""Copies the published chat templates into ../templates/ and writes
../templates.json. Run once by hand; kept to record where each file came from.

    /usr/bin/python3 import_templates.py LLAMA_CPP_GIT_DIR HF_JS_GIT_DIR

LLAMA_CPP_GIT_DIR is a clone of ggml-org/llama.cpp (read at the commit below:
models/templates/*.jinja, the templates llama.cpp's scripts/get_chat_template.py
took from each model's tokenizer_config.json); HF_JS_GIT_DIR a clone of
huggingface/huggingface.js (read at the commit below:
packages/ollama-utils/src/chat-template-automap.ts, whose "gguf" strings are the
tokenizer.chat_template of the Ollama library's GGUF files). The older
templates come from ../../templates/ (see its README) and the original
Phi-3-mini template from the GGUF testdata/vocab/ggml-vocab-phi-3.gguf.
"""

import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)
REPO = os.path.abspath(os.path.join(DATA, "..", "..", "..", ".."))
LLAMA_CPP_COMMIT = "3f545beccee69d9975f466ec7e45fd9aacd8ba90"
HF_JS_COMMIT = "fe42e68017ffc76d09922ea8f9b38a6964345710"

QWEN = ("<|endoftext|>", "<|im_end|>")
LLAMA3 = ("<|begin_of_text|>", "<|eot_id|>")
MISTRAL = ("<s>", "</s>")
DEEPSEEK = ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>")
GEMMA = ("<bos>", "<eos>")
GRANITE = ("<|end_of_text|>", "<|end_of_text|>")
LFM = ("<|startoftext|>", "<|im_end|>")

# (file, model, tokens, llama.cpp models/templates name)
LLAMA_CPP = [
    ("Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen/Qwen2.5-7B-Instruct (the Qwen2.5 0.5B-72B Instruct template)", QWEN),
    ("Qwen-Qwen3-0.6B.jinja", "Qwen/Qwen3-0.6B (the Qwen3 0.6B-32B template)", QWEN),
    ("Qwen3.5-4B.jinja", "Qwen/Qwen3.5-4B", QWEN),
    ("Qwen-QwQ-32B.jinja", "Qwen/QwQ-32B", QWEN),
    ("Qwen3-Coder.jinja", "Qwen/Qwen3-Coder-30B-A3B-Instruct", QWEN),
    ("HuggingFaceTB-SmolLM3-3B.jinja", "HuggingFaceTB/SmolLM3-3B", ("<|begin_of_text|>", "<|im_end|>")),
    ("LFM2-8B-A1B.jinja", "LiquidAI/LFM2-8B-A1B", LFM),
    ("LFM2.5-Instruct.jinja", "LiquidAI/LFM2.5-1.2B-Instruct", LFM),
    ("LFM2.5-8B-A1B.jinja", "LiquidAI/LFM2.5-8B-A1B", LFM),
    ("ibm-granite-granite-3.3-2B-Instruct.jinja", "ibm-granite/granite-3.3-2b-instruct", GRANITE),
    ("ibm-granite-granite-4.0.jinja", "ibm-granite/granite-4.0-h-micro (the Granite 4.0 template, also granite-4.0-350m)", GRANITE),
    ("ibm-granite-granite-4.1.jinja", "ibm-granite/granite-4.1", GRANITE),
    ("meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama/Llama-3.1-8B-Instruct (Llama-3.3-70B-Instruct ships the same bytes)", LLAMA3),
    ("meta-llama-Llama-3.2-3B-Instruct.jinja", "meta-llama/Llama-3.2-3B-Instruct (same for 1B)", LLAMA3),
    ("microsoft-Phi-3.5-mini-instruct.jinja", "microsoft/Phi-3.5-mini-instruct", ("<s>", "<|endoftext|>")),
    ("mistralai-Mistral-Nemo-Instruct-2407.jinja", "mistralai/Mistral-Nemo-Instruct-2407", MISTRAL),
    ("Mistral-Small-3.2-24B-Instruct-2506.jinja", "mistralai/Mistral-Small-3.2-24B-Instruct-2506", MISTRAL),
    ("unsloth-mistral-Devstral-Small-2507.jinja", "unsloth/Devstral-Small-2507 (mistralai/Devstral-Small-2507)", MISTRAL),
    ("mistralai-Ministral-3-14B-Reasoning-2512.jinja", "mistralai/Ministral-3-14B-Reasoning-2512", MISTRAL),
    ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B (same family as the 1.5B/7B distills)", DEEPSEEK),
    ("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", "deepseek-ai/DeepSeek-R1-Distill-Llama-8B", DEEPSEEK),
    ("deepseek-ai-DeepSeek-V3.1.jinja", "deepseek-ai/DeepSeek-V3.1", DEEPSEEK),
    ("NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", "NousResearch/Hermes-3-Llama-3.1-8B, tool_use template (Hermes-2-Pro-Llama-3-8B's is the same)", ("<|begin_of_text|>", "<|im_end|>")),
    ("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", "CohereForAI/c4ai-command-r7b-12-2024, tool_use template", ("<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>")),
    ("meetkai-functionary-medium-v3.2.jinja", "meetkai/functionary-medium-v3.2", LLAMA3),
    ("google-gemma-2-2b-it.jinja", "google/gemma-2-2b-it", GEMMA),
    ("google-gemma-4-31B-it.jinja", "google/gemma-4-31B-it (the Gemma 4 template)", GEMMA),
    ("openai-gpt-oss-120b.jinja", "openai/gpt-oss-120b (same for gpt-oss-20b)", ("<|startoftext|>", "<|return|>")),
]

# (file, model, tokens, Ollama library name in the automap)
OLLAMA = [
    ("google-gemma-3-270m-it.gguf.jinja", "google/gemma-3-270m-it (Gemma 3; GGUF of Ollama library/gemma3:270m)", GEMMA, "library/gemma3:270m"),
    ("google-gemma-3-1b-it.gguf.jinja", "google/gemma-3-1b-it (Gemma 3, the first published template; GGUF of Ollama library/gemma3:1b)", GEMMA, "library/gemma3:1b"),
    ("microsoft-Phi-4-mini-instruct.gguf.jinja", "microsoft/Phi-4-mini-instruct (GGUF of Ollama library/phi4-mini:3.8b)", ("<|endoftext|>", "<|endoftext|>"), "library/phi4-mini:3.8b"),
    ("HuggingFaceTB-SmolLM2-135M-Instruct.gguf.jinja", "HuggingFaceTB/SmolLM2-135M-Instruct (GGUF of Ollama library/smollm2:135m)", ("<|im_start|>", "<|im_end|>"), "library/smollm2:135m"),
    ("TinyLlama-1.1B-Chat-v1.0.gguf.jinja", "TinyLlama/TinyLlama-1.1B-Chat-v1.0 (GGUF of Ollama library/tinyllama:1.1b)", MISTRAL, "library/tinyllama:1.1b"),
    ("Qwen-Qwen2.5-0.5B-Instruct.gguf.jinja", "Qwen/Qwen2.5-0.5B-Instruct (an earlier Qwen2.5 template; GGUF of Ollama library/qwen2.5:0.5b)", QWEN, "library/qwen2.5:0.5b"),
    ("NousResearch-Hermes-3-Llama-3.1-70B.gguf.jinja", "NousResearch/Hermes-3-Llama-3.1-70B, default template (GGUF of Ollama library/hermes3:70b)", ("<|begin_of_text|>", "<|im_end|>"), "library/hermes3:70b"),
    ("mistralai-Mistral-7B-Instruct-v0.3.gguf.jinja", "mistralai/Mistral-7B-Instruct-v0.3 (GGUF of Ollama library/mistral:7b-instruct-fp16)", MISTRAL, "library/mistral:7b-instruct-fp16"),
    ("ibm-granite-granite-3.3-2b-instruct.gguf.jinja", "ibm-granite/granite-3.3-2b-instruct (an earlier template; GGUF of Ollama library/granite3.3:2b)", GRANITE, "library/granite3.3:2b"),
    ("meta-llama-Meta-Llama-3-8B-Instruct.gguf.jinja", "meta-llama/Meta-Llama-3-8B-Instruct (GGUF of Ollama library/llama3:8b)", LLAMA3, "library/llama3:8b"),
    ("LGAI-EXAONE-EXAONE-Deep-2.4B.gguf.jinja", "LGAI-EXAONE/EXAONE-Deep-2.4B (GGUF of Ollama library/exaone-deep:2.4b)", ("[BOS]", "[|endofturn|]"), "library/exaone-deep:2.4b"),
    ("allenai-OLMo-2-1124-7B-Instruct.gguf.jinja", "allenai/OLMo-2-1124-7B-Instruct (GGUF of Ollama library/olmo2:7b)", ("<|endoftext|>", "<|endoftext|>"), "library/olmo2:7b"),
    ("internlm-internlm2-chat-1_8b.gguf.jinja", "internlm/internlm2-chat-1_8b (GGUF of Ollama library/internlm2:1.8b)", ("<s>", "</s>"), "library/internlm2:1.8b"),
]

# (file, model, tokens, file in ../../templates)
OLDER = [
    ("meta-llama-Llama-2-7b-chat-hf.jinja", "meta-llama/Llama-2-7b-chat-hf", MISTRAL, "llama-2-chat.jinja"),
    ("teknium-OpenHermes-2.5-Mistral-7B.jinja", "teknium/OpenHermes-2.5-Mistral-7B (plain ChatML)", ("<s>", "<|im_end|>"), "openhermes-2.5-chatml.jinja"),
    ("Qwen-Qwen2-7B-Instruct.jinja", "Qwen/Qwen2-7B-Instruct", QWEN, "qwen2-instruct.jinja"),
    ("microsoft-Phi-3-mini-4k-instruct.jinja", "microsoft/Phi-3-mini-4k-instruct (2024 update, with a system role)", ("<s>", "<|endoftext|>"), "phi-3-mini-4k-instruct.jinja"),
    ("mistralai-Mistral-7B-Instruct-v0.2.jinja", "mistralai/Mistral-7B-Instruct-v0.2", MISTRAL, "mistral-7b-instruct-v0.2.jinja"),
]


def git_show(gitdir, commit, path):
    return subprocess.run(["git", "-C", gitdir, "show", "%s:%s" % (commit, path)],
                          check=True, capture_output=True).stdout


def ollama_templates(hf_js):
    """The automap is a TypeScript array literal of {model, gguf, ollama}; node
    evaluates it (its strings are JavaScript string literals)."""
    ts = git_show(hf_js, HF_JS_COMMIT, "packages/ollama-utils/src/chat-template-automap.ts").decode()
    ts = re.sub(r"^import type .*$", "", ts, flags=re.M)
    ts = ts.replace("export const OLLAMA_CHAT_TEMPLATE_MAPPING: OllamaChatTemplateMapEntry[] =", "module.exports =")
    js = "const m = (function(){ const module = {}; %s; return module.exports; })();" \
         "process.stdout.write(JSON.stringify(Object.fromEntries(m.map(e => [e.model, e.gguf]))));" % ts
    out = subprocess.run(["node", "-"], input=js.encode(), check=True, capture_output=True).stdout
    return json.loads(out)


def main():
    llama_cpp, hf_js = sys.argv[1], sys.argv[2]
    sys.path.insert(0, HERE)
    import gguf_meta
    out = os.path.join(DATA, "templates")
    os.makedirs(out, exist_ok=True)
    entries = []

    def add(name, data, model, tokens, source):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        entries.append({"file": name, "model": model, "source": source,
                        "bos_token": tokens[0], "eos_token": tokens[1]})

    for name, model, tokens in LLAMA_CPP:
        add(name, git_show(llama_cpp, LLAMA_CPP_COMMIT, "models/templates/" + name), model, tokens,
            "llama.cpp models/templates/%s at %s (from the model's tokenizer_config.json)" % (name, LLAMA_CPP_COMMIT[:12]))
    automap = ollama_templates(hf_js)
    for name, model, tokens, key in OLLAMA:
        add(name, automap[key].encode(), model, tokens,
            "tokenizer.chat_template of the GGUF of Ollama %s, as huggingface.js packages/ollama-utils/src/chat-template-automap.ts records it at %s" % (key, HF_JS_COMMIT[:12]))
    for name, model, tokens, old in OLDER:
        with open(os.path.join(DATA, "..", "templates", old), "rb") as f:
            add(name, f.read(), model, tokens,
                "inference/chat/testdata/templates/%s (the model's tokenizer_config.json; see that folder's README)" % old)
    vocab = os.path.join(REPO, "testdata", "vocab", "ggml-vocab-phi-3.gguf")
    kv = gguf_meta.metadata(vocab)
    toks = kv["tokenizer.ggml.tokens"]
    add("microsoft-Phi-3-mini-4k-instruct-original.gguf.jinja", kv["tokenizer.chat_template"].encode(),
        "microsoft/Phi-3-mini-4k-instruct (the first published template, no system role)",
        (toks[kv["tokenizer.ggml.bos_token_id"]], toks[kv["tokenizer.ggml.eos_token_id"]]),
        "tokenizer.chat_template of testdata/vocab/ggml-vocab-phi-3.gguf (llama.cpp models/ggml-vocab-phi-3.gguf)")
    with open(os.path.join(DATA, "templates.json"), "w", encoding="utf-8") as f:
        json.dump(entries, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(len(entries), "templates")


if __name__ == "__main__":
    main()
