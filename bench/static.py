"""The wheel's static cypatch against the CMake build, in one run: size and
speed on the real inputs of bench/run.py, and what each library of the
static build costs (scripts/static_build's build-times).

usage: .venv/bin/python bench/static.py [--runs N]   (after scripts/wheel and bench/run)

Both binaries run the same commands, interleaved (run 1 of each, then run 2
of each...); a ratio is the median of the rounds' ratios. Each command's
output is compared between the two: a speed figure of an executable that
wrote other bytes would mean nothing.
"""

import argparse
import glob
import hashlib
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402  (measure_each, ratio, remove, warm, the corpus paths)

WHEEL_BUILD = os.path.join(run.ROOT, "build-wheel")


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def cases(binaries, inputs, scratch):
    """name -> (cmd, before) for each binary and input, and the output each writes."""
    out = {}
    for bname, binary in binaries.items():
        os.makedirs(os.path.join(scratch, bname))
        for label, kind, path in inputs:
            dest = os.path.join(scratch, bname, label.replace(" ", "_"))
            if kind == "wheel":
                cmd = [binary, "repair", "-t", "legacy", "--no-fsync", "-w", dest, path]
                target = os.path.join(dest, os.path.basename(path))
            else:
                target = dest + ".so"
                cmd = [binary, "--target-layout", kind, "--no-fsync", "-o", target, path]
            out[(bname, label)] = (cmd, run.remove(dest, target), target)
    return out


def build_times(arch):
    path = os.path.join(WHEEL_BUILD, arch, "build-times")
    if not os.path.exists(path):
        return {}
    return {k: int(v) for k, v in (line.split() for line in open(path) if line.strip())}


def symbols(path, sized):
    """name -> size (sized) or the set of names nm lists as defined in PATH."""
    args = ["nm", "--defined-only"] + (["-S"] if sized else []) + [path]
    out = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    got = {}
    for line in out.splitlines():
        f = line.split()
        if sized and len(f) == 4:
            got[f[3]] = got.get(f[3], 0) + int(f[1], 16)
        elif not sized and len(f) == 3:
            got[f[2]] = 0
    return got


def library_bytes(arch):
    """Bytes of the x86_64 executable's symbols that each static library
    defines (nm of the unstripped link against nm of each archive; a name
    two archives define counts for the first); the rest: cypatch, musl, the
    compiler's runtime."""
    top = os.path.join(WHEEL_BUILD, arch)
    linked = symbols(os.path.join(top, "cypatch-build", "cypatch"), True)
    per, seen = {}, set()
    for lib in sorted(glob.glob(os.path.join(top, "prefix", "lib", "*.a"))):
        names = set(symbols(lib, False)) - seen
        seen |= names
        per[os.path.basename(lib)] = sum(linked.get(n, 0) for n in names)
    per["cypatch, musl and the runtime"] = sum(v for n, v in linked.items() if n not in seen)
    return per


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    binaries = {"cmake": run.CYPATCH, "static": os.path.join(WHEEL_BUILD, "x86_64", "cypatch")}
    driver = max(glob.glob(os.path.join(run.CORPUS, "site", "cuda_python-12.6.2.post1", "**", "*.so"),
                           recursive=True), key=os.path.getsize)
    rmm = glob.glob(os.path.join(run.CORPUS, "wheels", "rmm_cu12-25.2.0-*.whl"))[0]
    consumer = glob.glob(os.path.join(run.CORPUS, "realcuda", "3.3.1", "bindings", "rmm_like.*.so"))[0]
    inputs = [("driver legacy", "legacy", driver), ("driver fallback", "fallback", driver),
              ("rmm_like legacy", "legacy", consumer), ("rmm-cu12 25.2.0 repair", "wheel", rmm)]
    for _, _, p in inputs:
        run.warm(p)
    scratch = tempfile.mkdtemp(prefix="static-", dir=run.WORK if os.path.isdir(run.WORK) else None)
    try:
        c = cases(binaries, inputs, scratch)
        r = run.measure_each({k: v[:2] for k, v in c.items()}, a.runs)
        for label, _, _ in inputs:  # the same bytes, or the figures mean nothing
            got = {b: sha(c[(b, label)][2]) for b in binaries if os.path.exists(c[(b, label)][2])}
            if len(got) != 2 or len(set(got.values())) != 1:
                raise SystemExit("bench/static: %s: the two builds wrote different outputs" % label)
    finally:
        subprocess.run(["rm", "-rf", scratch])
    print("### The static executable (wheel) against the CMake build\n")
    print("| executable | bytes | linked |\n|---|---|---|")
    print("| CMake build (`build/cypatch`, RelWithDebInfo, Debian's shared libraries) | %d | dynamic |"
          % os.path.getsize(binaries["cmake"]))
    for arch in ("x86_64", "aarch64"):
        p = os.path.join(WHEEL_BUILD, arch, "cypatch")
        if os.path.exists(p):
            print("| wheel's %s (zig cc -O2, musl, stripped) | %d | static |" % (arch, os.path.getsize(p)))
    print("\n| input | CMake s | static s | static/CMake |\n|---|---|---|---|")
    for label, _, _ in inputs:
        ka, kb = ("cmake", label), ("static", label)
        print("| %s | %s | %s | %.2f |" % (label, run.fmt_s(r[ka][0]), run.fmt_s(r[kb][0]), run.ratio(r, kb, ka)))
    print("\n| x86_64: library | bytes of its symbols in the executable |\n|---|---|")
    for lib, n in library_bytes("x86_64").items():
        print("| %s | %d |" % (lib, n))
    for arch in ("x86_64", "aarch64"):
        t = build_times(arch)
        if t:
            print("\nBuild seconds, %s (scripts/static_build, this machine): %s; total %d"
                  % (arch, ", ".join("%s %d" % kv for kv in t.items()), sum(t.values())))


if __name__ == "__main__":
    main()
