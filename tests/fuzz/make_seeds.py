#!/usr/bin/env python3
"""Seed corpora for the libFuzzer harnesses, taken from the sample corpus.

usage: make_seeds.py CORPUS_DIR OUT_DIR
Writes OUT_DIR/{elf,patch,rules,blob,wheel,zip_fields}/. The ELF seeds are corpus
builds (every Cython version, several variants, a provider, a non-Cython
library); blob seeds are real streams of each algorithm (LZSS from
Cython's own compressor); wheel seeds are real small wheels and one built
here around a corpus extension.
"""
import base64
import bz2
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
import zlib

MAX_SEED = 256 * 1024
# Harness byte 0 picks the algorithm by index: none, zlib, bz2, zstd, lzss.
ALGOS = ["none", "zlib", "bz2", "zstd", "lzss"]


def small_sos(corpus, per_version):
    with open(os.path.join(corpus, "manifest.json")) as f:
        entries = json.load(f)["entries"]
    picked, seen = [], {}
    for e in entries:
        so = e.get("so")
        if not so or not os.path.exists(so) or os.path.getsize(so) > MAX_SEED:
            continue
        key = e["id"].split("/")[0]
        if seen.get(key, 0) < per_version:
            seen[key] = seen.get(key, 0) + 1
            picked.append(so)
    return picked


def copy_seeds(paths, out):
    os.makedirs(out, exist_ok=True)
    for i, p in enumerate(paths):
        shutil.copyfile(p, os.path.join(out, "%02d-%s" % (i, os.path.basename(p))))


def elf_seeds(corpus, out):
    sos = small_sos(corpus, 5)
    sos += sorted(glob.glob(os.path.join(corpus, "providers", "*", "cuda", "**", "*.so"), recursive=True))[:2]
    sos += sorted(glob.glob(os.path.join(corpus, "foreign", "*", "*.so")))
    copy_seeds(sos, os.path.join(out, "elf"))
    copy_seeds(small_sos(corpus, 2), os.path.join(out, "patch"))
    copy_seeds(small_sos(corpus, 2), os.path.join(out, "elf_fields"))


def rules_seeds(out):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    copy_seeds(sorted(glob.glob(os.path.join(root, "rules", "*.rules"))), os.path.join(out, "rules"))


def blob_raw():
    names = "".join("cuda.bindings.cydriver__pyx_t_4cuda_8bindings_8cydriver_cuInit%dcuDeviceGetCount" % i
                    for i in range(12))
    yield names.encode()
    yield b"cuda.ccudart\x00cudaGetDeviceCount\x00int (int *)\x00" * 20
    yield bytes(range(256))


def encode(algo, raw, corpus):
    if algo == "none":
        return raw
    if algo == "zlib":
        return zlib.compress(raw, 9)
    if algo == "bz2":
        return bz2.compress(raw, 9)
    if algo == "zstd":
        if not shutil.which("zstd"):
            return None
        return subprocess.run(["zstd", "-19", "-q", "-c"], input=raw, capture_output=True, check=True).stdout
    sys.path.insert(0, os.path.join(corpus, "cython", "3.3.1"))
    from Cython.LZSS import lzss_compress
    return lzss_compress(raw)


def blob_seeds(corpus, out):
    d = os.path.join(out, "blob")
    os.makedirs(d, exist_ok=True)
    for k, raw in enumerate(blob_raw()):
        for i, algo in enumerate(ALGOS):
            enc = encode(algo, raw, corpus)
            if enc is None:
                continue
            with open(os.path.join(d, "%s-%d" % (algo, k)), "wb") as f:
                f.write(bytes([i, len(raw) & 0xff, len(raw) >> 8]) + enc)


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def made_wheel(so, path, method=zipfile.ZIP_DEFLATED):
    members = {
        "pkg/__init__.py": b"",
        "pkg/" + os.path.basename(so): open(so, "rb").read(),
        "pkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n",
        "pkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n",
    }
    record = [record_line(n, d) for n, d in members.items()] + ["pkg-1.0.dist-info/RECORD,,"]
    with zipfile.ZipFile(path, "w", method) as z:
        for n, d in members.items():
            z.writestr(n, d)
        z.writestr("pkg-1.0.dist-info/RECORD", "\n".join(record) + "\n")


def wheel_seeds(corpus, out):
    d = os.path.join(out, "wheel")
    os.makedirs(d, exist_ok=True)
    real = sorted(glob.glob(os.path.join(corpus, "foreign", "*", "*.whl")))
    real += sorted(glob.glob(os.path.join(corpus, "wheels", "cuda_pathfinder-*.whl")))
    copy_seeds([p for p in real if os.path.getsize(p) <= MAX_SEED], d)
    made_wheel(small_sos(corpus, 1)[0], os.path.join(d, "made.whl"))


def zip_fields_seeds(corpus, out):
    """Small wheels of real corpus modules for the field mutator: deflated
    and stored, plus the small real wheels (all under max_len 262144)."""
    d = os.path.join(out, "zip_fields")
    os.makedirs(d, exist_ok=True)
    sos = [p for p in small_sos(corpus, 1) if os.path.getsize(p) <= 200000][:3]
    for k, so in enumerate(sos):
        made_wheel(so, os.path.join(d, "deflated-%d.whl" % k))
        made_wheel(so, os.path.join(d, "stored-%d.whl" % k), zipfile.ZIP_STORED)
    real = sorted(glob.glob(os.path.join(corpus, "foreign", "*", "*.whl")))
    real += sorted(glob.glob(os.path.join(corpus, "wheels", "cuda_pathfinder-*.whl")))
    copy_seeds([p for p in real if os.path.getsize(p) <= 262144], d)


def main(corpus, out):
    shutil.rmtree(out, ignore_errors=True)
    elf_seeds(corpus, out)
    rules_seeds(out)
    blob_seeds(corpus, out)
    wheel_seeds(corpus, out)
    zip_fields_seeds(corpus, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
