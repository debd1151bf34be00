#!/usr/bin/env python3
"""Generate pretok-golden.jsonl: reference splits of the byte-level BPE
pre-tokenizers, computed with a real backtracking regex engine (the `regex`
module, which supports \\p{..} classes and look-ahead like the original Hugging
Face tokenizers).

Each pre-tokenizer is a list of regular expressions applied one after the
other; each one splits every piece produced so far into its matches and the
text between them (Hugging Face's Split with the "Isolated" behaviour).

Strings are random mixes of characters assigned long ago (Unicode <= 14), so
that the character categories of Go's unicode tables agree with the ones here.
The output is deterministic for a given seed.

usage: python3 gen_pretok_golden.py > pretok-golden.jsonl
"""
import json
import random
import sys

import regex


def cls(ranges):
    out = []
    for a, b in ranges:
        out.append(regex.escape(chr(a)) if a == b else regex.escape(chr(a)) + "-" + regex.escape(chr(b)))
    return "".join(out)


DS_LETTERS = cls([
    (0x41, 0x5A), (0x61, 0x7A), (0xB5, 0xB5), (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x1BA), (0x1BC, 0x1BF),
    (0x1C4, 0x293), (0x295, 0x2AF), (0x370, 0x373), (0x376, 0x377), (0x37B, 0x37D), (0x37F, 0x37F), (0x386, 0x386),
    (0x388, 0x38A), (0x38C, 0x38C), (0x38E, 0x3A1), (0x3A3, 0x3F5), (0x3F7, 0x481), (0x48A, 0x52F), (0x531, 0x556),
    (0x10A0, 0x10C5), (0x13A0, 0x13F5), (0x13F8, 0x13FD), (0x1C90, 0x1CBA), (0x1CBD, 0x1CBF), (0x1D00, 0x1D2B),
    (0x1D6B, 0x1D77), (0x1D79, 0x1D9A), (0x1E00, 0x1F15), (0x1F18, 0x1F1D), (0x1F20, 0x1F45), (0x1F48, 0x1F4D),
    (0x1F50, 0x1F57), (0x1F59, 0x1F59), (0x1F5B, 0x1F5B), (0x1F5D, 0x1F5D), (0x1F5F, 0x1F7D), (0x1F80, 0x1FB4),
    (0x1FB6, 0x1FBC), (0x1FBE, 0x1FBE), (0x1FC2, 0x1FC4), (0x1FC6, 0x1FCC), (0x1FD0, 0x1FD3), (0x1FD6, 0x1FDB),
    (0x1FE0, 0x1FEC), (0x1FF2, 0x1FF4), (0x1FF6, 0x1FFC), (0x2102, 0x2102), (0x2107, 0x2107), (0x210A, 0x2113),
    (0x2115, 0x2115), (0x2119, 0x211D), (0x2124, 0x2124), (0x2126, 0x2126), (0x2128, 0x2128), (0x212A, 0x212D),
    (0x212F, 0x2134), (0x2139, 0x2139), (0x213C, 0x213F), (0x2145, 0x2149), (0x214E, 0x214E), (0x2183, 0x2184),
    (0x2C00, 0x2C7B), (0x2C7E, 0x2CE4), (0x2CEB, 0x2CEE), (0x2CF2, 0x2CF3), (0xA640, 0xA66D), (0xA680, 0xA69B),
    (0xA722, 0xA76F), (0xA771, 0xA787), (0xA78B, 0xA78E), (0xAB70, 0xABBF), (0xFB00, 0xFB06), (0xFB13, 0xFB17),
    (0xFF21, 0xFF3A), (0xFF41, 0xFF5A), (0x10400, 0x1044F), (0x104B0, 0x104D3), (0x104D8, 0x104FB),
    (0x10C80, 0x10CB2), (0x10CC0, 0x10CF2), (0x118A0, 0x118DF), (0x1E900, 0x1E943)])
DS_PUNCT = cls([(0x21, 0x2F), (0x3A, 0x7E), (0xFF01, 0xFF0F), (0xFF1A, 0xFF5E), (0x2018, 0x201F), (0x3000, 0x3002)])
DS_CJK = cls([(0x4E00, 0x9FA5), (0x800, 0x4E00), (0xAC00, 0xD7FF)])
DS_V3_CJK = cls([(0x4E00, 0x9FA5), (0x3040, 0x309F), (0x30A0, 0x30FF)])

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")
BLOOM = r" ?[^(\s|.,!?…。，、।۔،)]+"

PRE = {
    "gpt-2": [GPT2],
    "llama-bpe": [LLAMA3],
    "qwen2": [QWEN2],
    "starcoder": [r"\p{N}", GPT2],
    "falcon": [r"[\p{P}\$\+<=>\^~\|`]+", GPT2, r"[0-9][0-9][0-9]"],
    "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"],
    "deepseek-llm": [r"[\r\n]", r"\s?[" + DS_LETTERS + r"]+", r"\s?[" + DS_PUNCT + r"]+", r"\s+\Z",
                     "[" + DS_CJK + "]+", r"\p{N}+"],
    "deepseek-coder": [r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", "[" + DS_CJK + "]+", r"\p{N}"],
    "deepseek-v3": [r"\p{N}{1,3}", "[" + DS_V3_CJK + "]+",
                    r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "tekken": [r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "chameleon": [r"<sentinel:[0-9]+>", r"(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\t\n]|    |  )", r"\p{N}",
                  r"[\p{P}!-/:-@\[-`{-~]", GPT2],
    "bloom": [BLOOM],
    "viking": [BLOOM, r"\p{N}"],
}


def split(text, exprs):
    pieces = [text] if text else []
    for e in exprs:
        rx = regex.compile(e)
        out = []
        for p in pieces:
            last = 0
            for m in rx.finditer(p):
                if m.start() > last:
                    out.append(p[last:m.start()])
                if m.end() > m.start():
                    out.append(m.group())
                last = m.end()
            if last < len(p):
                out.append(p[last:])
        pieces = out
    return pieces


POOL_WEIGHTED = [
    (" ", 12), ("a", 3), ("e", 3), ("t", 2), ("H", 1), ("Z", 1), ("x", 1), ("0", 1), ("1", 1), ("3", 2), ("9", 1),
    ("'", 3), ("s", 2), ("S", 1), ("l", 1), ("L", 1), ("r", 1), ("v", 1), ("E", 1), ("m", 1), ("D", 1), ("d", 1),
    ("\n", 3), ("\r", 1), ("\t", 2), (".", 2), (",", 2), ("!", 1), ("?", 1), ("(", 1), (")", 1), ("|", 1),
    ("$", 1), ("+", 1), ("<", 1), ("=", 1), ("^", 1), ("`", 1), ("~", 1), ("_", 1), ("-", 1), ("/", 1), ("@", 1),
    ("é", 1), ("ü", 1), ("ß", 1), ("µ", 1), ("Ö", 1), ("ø", 1), ("ƻ", 1), ("ʔ", 1), ("ω", 1), ("Ж", 1), ("д", 1),
    ("Ա", 1), ("Ⴀ", 1), ("Ꭰ", 1), ("ǅ", 1), ("ﬁ", 1),
    ("我", 2), ("想", 1), ("龥", 1), ("龦", 1), ("あ", 1), ("カ", 1), ("ー", 1), ("한", 1), ("ࠀ", 1),
    ("ก", 1), ("ក", 1), ("ា", 1), ("क", 1), ("्", 1), ("ع", 1), ("،", 1), ("۔", 1), ("।", 1),
    ("²", 1), ("½", 1), ("٣", 1), ("Ⅻ", 1), ("①", 1), ("１", 1),
    ("…", 1), ("。", 1), ("，", 1), ("、", 1), ("“", 1), ("”", 1), ("‘", 1), ("’", 1), ("‟", 1), ("！", 1),
    ("～", 1), ("Ａ", 1), ("ｚ", 1), ("\u3000", 1), ("\u00a0", 1), ("\u2028", 1), ("\u2009", 1), ("\u0085", 1),
    ("\u0301", 1), ("€", 1), ("©", 1), ("™", 1), ("🦙", 1), ("😀", 1), ("\u200d", 1), ("\ufe0f", 1), ("\x00", 1),
    ("\x1c", 1), ("\ufffd", 1),
]
CHARS = [c for c, w in POOL_WEIGHTED for _ in range(w)]
FRAGMENTS = ["'s", "'re", "'VE", "'ll", "'D", " Hello", "  world", "1234567", "\r\n", " \n ", "   ", "\n\n",
             "don't", "I'M", "3.14", "  \t\n", "...", "!!!", " 我想", "ÀÖ", "Ⴀა", "<sentinel:12>", "<sentinel:>",
             "IMGIMGABCZ", "IMGIMGABCDEZ", "IMGIMGZ", "    ", "ÖlçekHTMLParser", "McDonald", "ǅa", "ʰʰa", "a/b\n/",
             "ABCdef", "x\u0301Y\u0301z"]


def random_text(rng):
    n = rng.randint(1, 24)
    out = []
    for _ in range(n):
        if rng.random() < 0.2:
            out.append(rng.choice(FRAGMENTS))
        else:
            out.append(rng.choice(CHARS))
    return "".join(out)


def main():
    rng = random.Random(20250221)
    per_pre = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    texts = [random_text(rng) for _ in range(per_pre)]
    for name, exprs in PRE.items():
        for t in texts:
            print(json.dumps({"pre": name, "text": t, "pieces": split(t, exprs)}, ensure_ascii=True))


if __name__ == "__main__":
    main()
