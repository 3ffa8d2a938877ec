#!/usr/bin/env python3
"""Writes LZSS test vectors made by Cython's own compressor (Cython.LZSS,
Cython >= 3.3, importable from the Cython install given with PYTHONPATH).

usage: make_lzss_vectors.py OUTDIR
Each vector NAME gives NAME.raw and NAME.lzss.
"""
import os
import random
import sys

from Cython.LZSS import lzss_compress


def vectors():
    rng = random.Random(1234)
    names = "".join("cuda.bindings.cydriver__pyx_t_4cuda_8bindings_8cydriver_cuInit%dcuDeviceGetCount" % i
                    for i in range(40))
    yield "strings", names.encode()
    # long data: back-references beyond 0x80 and beyond 0x280 (the 3-byte form)
    words = [bytes(rng.choice(b"abcdefghij") for _ in range(rng.randint(3, 12))) for _ in range(300)]
    yield "long", b"".join(rng.choice(words) for _ in range(9000))
    yield "random", bytes(rng.randrange(256) for _ in range(5000))
    yield "runs", b"a" * 3000 + b"b" * 700 + bytes(range(256)) * 4
    yield "tiny", b"abcabcabcabc"


def main(out):
    os.makedirs(out, exist_ok=True)
    for name, raw in vectors():
        with open(os.path.join(out, name + ".raw"), "wb") as f:
            f.write(raw)
        with open(os.path.join(out, name + ".lzss"), "wb") as f:
            f.write(lzss_compress(raw))


if __name__ == "__main__":
    main(sys.argv[1])
