#!/usr/bin/env python3
"""Writes the small valid safetensors files that seed the fuzz_safetensors corpus.

Built from the format description (8-byte little-endian header length, JSON
header, data). Run from anywhere: python3 tests/safetensors/make_fuzz_seeds.py
"""
import json
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus", "safetensors")


def st(header, data):
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the reference writer pads the header to 8 bytes
    return struct.pack("<Q", len(text)) + text + data


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {
        "empty.safetensors": st({}, b""),
        "two.safetensors": st({
            "__metadata__": {"format": "pt"},
            "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
            "b": {"dtype": "BF16", "shape": [3], "data_offsets": [16, 22]},
        }, struct.pack("<4f", 1, 2, 3, 4) + struct.pack("<3H", 0x3F80, 0x4000, 0xBF80)),
        "kinds.safetensors": st({
            "s": {"dtype": "F64", "shape": [], "data_offsets": [0, 8]},
            "e": {"dtype": "I32", "shape": [0, 4], "data_offsets": [8, 8]},
            "m": {"dtype": "U8", "shape": [1, 2, 3], "data_offsets": [8, 14]},
        }, struct.pack("<d", 0.5) + bytes(range(6))),
    }
    for name, blob in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(blob)
        print(f"{name}: {len(blob)} bytes")


if __name__ == "__main__":
    main()
