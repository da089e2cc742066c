#!/usr/bin/env python3
"""Writes the small valid GGUF files that seed the fuzz_gguf corpus (no .gguf
extension: the repository ignores *.gguf outside tests/data).

Built from the format description with struct, independently of ember's
writer. Run from anywhere: python3 tests/gguf/make_fuzz_seeds.py
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus", "gguf")
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)


def s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return s(key) + struct.pack("<I", vtype) + payload


def tensor(name, ne, ttype, offset):
    return s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", ttype, offset)


def pad(b, align):
    return b + b"\0" * (-len(b) % align)


def gguf(version, kvs, infos, data, align=32):
    head = b"GGUF" + struct.pack("<IQQ", version, len(infos), len(kvs)) + b"".join(kvs) + b"".join(infos)
    return pad(head, align) + data


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {}
    seeds["empty"] = gguf(3, [], [], b"")
    seeds["values_v2"] = gguf(2, [
        kv("u8", U8, b"\x07"), kv("i8", I8, struct.pack("<b", -3)), kv("u16", U16, struct.pack("<H", 9)),
        kv("i16", I16, struct.pack("<h", -9)), kv("u32", U32, struct.pack("<I", 70000)),
        kv("i32", I32, struct.pack("<i", -70000)), kv("f32", F32, struct.pack("<f", 0.5)),
        kv("b", BOOL, b"\x01"), kv("s", STRING, s("qwen3")), kv("u64", U64, struct.pack("<Q", 1 << 40)),
        kv("i64", I64, struct.pack("<q", -(1 << 40))), kv("f64", F64, struct.pack("<d", 1e-6)),
        kv("toks", ARRAY, struct.pack("<IQ", STRING, 3) + s("a") + s("bc") + s("")),
        kv("nest", ARRAY, struct.pack("<IQ", ARRAY, 2) + struct.pack("<IQ", I32, 1) + struct.pack("<i", 5)
           + struct.pack("<IQ", U8, 0)),
    ], [], b"")
    f32_data = pad(struct.pack("<4f", 1, 2, 3, 4), 32)
    seeds["tensors"] = gguf(3, [kv("general.architecture", STRING, s("toy"))],
                                 [tensor("w", [2, 2], 0, 0), tensor("h", [3], 1, 32)],
                                 f32_data + struct.pack("<3H", 0x3C00, 0x4000, 0xC000))
    q8 = struct.pack("<H", 0x3C00) + bytes(range(32))
    seeds["align64_q8"] = gguf(3, [kv("general.alignment", U32, struct.pack("<I", 64))],
                                    [tensor("q", [32, 1], 8, 0), tensor("z", [4, 0], 0, 64)],
                                    pad(q8, 64), align=64)
    for name, blob in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(blob)
        print(f"{name}: {len(blob)} bytes")


if __name__ == "__main__":
    main()
