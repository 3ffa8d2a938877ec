#!/usr/bin/env python3
"""Builds the small corpus (build_corpus.py --small) under every other
CPython this machine has, for the fallback stub's ABI matrix, and writes
OUTDIR/index.json: per version, the interpreter and its manifest, or why
there is none. Interpreters are looked up under pyenv's root ($PYENV_ROOT or ~/.pyenv),
then as python3.X on PATH.

usage: build_pythons.py OUTDIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# 3.11 is this project's own interpreter: the main corpus covers it
VERSIONS = ["3.9", "3.10", "3.12", "3.13"]


def find(version):
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = sorted(glob.glob(os.path.join(root, "versions", version + ".*", "bin", "python" + version)))
    if found:
        return found[-1]
    exe = shutil.which("python" + version)
    # pyenv's shims answer only for the selected version
    return exe if exe and "/shims/" not in exe else None


def main(argv):
    if len(argv) != 2:
        raise SystemExit(__doc__.strip().splitlines()[-1])
    out = os.path.abspath(argv[1])
    os.makedirs(out, exist_ok=True)
    index = {}
    for v in VERSIONS:
        exe = find(v)
        if not exe:
            index[v] = {"missing": "no python%s on PATH or under pyenv" % v}
            continue
        print("pythons: building the small corpus with %s" % exe, flush=True)
        proc = subprocess.run([exe, os.path.join(HERE, "build_corpus.py"), "--small", os.path.join(out, v)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode:
            index[v] = {"missing": "python%s could not build it: %s" % (v, proc.stdout.strip().splitlines()[-1])}
            print("pythons: " + index[v]["missing"], flush=True)
            continue
        index[v] = {"python": exe, "manifest": os.path.join(out, v, "manifest.json")}
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)


if __name__ == "__main__":
    main(sys.argv)
