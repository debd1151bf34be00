#!/usr/bin/env python3
"""Prints a GGUF file's string metadata (or one key's value with -k KEY).

    /usr/bin/python3 gguf_meta.py FILE.gguf [-k tokenizer.chat_template]

Used to see which chat template a GGUF file carries; reads only the header.
"""
import struct
import sys

SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f",
          7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def read_value(f, t):
    if t in SCALAR:
        fmt = SCALAR[t]
        return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]
    if t == 8:
        (n,) = struct.unpack("<Q", f.read(8))
        return f.read(n).decode("utf-8")
    if t == 9:
        (et, n) = struct.unpack("<IQ", f.read(12))
        return [read_value(f, et) for _ in range(n)]
    raise ValueError("unknown GGUF type %d" % t)


def metadata(path):
    with open(path, "rb") as f:
        magic, version, _ntensors, nkv = struct.unpack("<4sIQQ", f.read(24))
        if magic != b"GGUF":
            raise ValueError("not a GGUF file")
        kv = {}
        for _ in range(nkv):
            (n,) = struct.unpack("<Q", f.read(8))
            key = f.read(n).decode("utf-8")
            (t,) = struct.unpack("<I", f.read(4))
            kv[key] = read_value(f, t)
        return kv


def main():
    path = sys.argv[1]
    kv = metadata(path)
    if len(sys.argv) > 3 and sys.argv[2] == "-k":
        v = kv.get(sys.argv[3])
        if isinstance(v, str):
            sys.stdout.write(v)
        else:
            print(v)
        return
    for k, v in kv.items():
        if isinstance(v, list):
            v = "[%d items]" % len(v)
        elif isinstance(v, str) and len(v) > 80:
            v = repr(v[:80]) + "... (%d chars)" % len(v)
        print(k, "=", v)


if __name__ == "__main__":
    main()
