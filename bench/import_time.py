#!/usr/bin/env python3
"""Import time of fallback-patched extensions against unpatched ones.

For each consumer, in fresh interpreters, interleaved, median of RUNS:
  native      the unpatched file under the layout it was built for
  patched     the fallback-patched file under the same layout (target: 1.00)
  fallback    the patched file under the other layout, against the
              unpatched build of the other layout under that layout (what a
              rebuild would cost)
Each time is `import MODULE` alone (its providers included), measured in the
child with perf_counter. Prints one Markdown table.

usage: bench/import_time.py [RUNS]    (after scripts/test built the corpus)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CYPATCH = os.path.join(ROOT, "build", "cypatch")
CORPUS = os.path.join(ROOT, "build", "corpus")
PY = os.path.join(ROOT, ".venv", "bin", "python")
CHILD = "import time, importlib, sys; t = time.perf_counter(); importlib.import_module(sys.argv[1]); " \
        "print(time.perf_counter() - t)"
CASES = [("corpus", "cimports", "3.3.1"), ("corpus", "cimports", "0.29.37"),
         ("corpus", "pyfrom", "3.1.8"), ("realcuda", "rmm_like", "3.3.1")]


def site(manifest, kind, layout):
    if kind == "realcuda":
        return manifest["cuda_python"][layout]["tree"]
    return manifest["providers"][layout]


def once(so, module, path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(so), path]),
               PYTHONNOUSERSITE="1", PYTHONWARNINGS="ignore", PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([PY, "-c", CHILD, module], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 41
    manifest = json.load(open(os.path.join(CORPUS, "manifest.json")))
    entries = {(e["kind"], e["module"], e["cython"], e["layout"]): e for e in manifest["entries"]
               if not e["skipped"] and "variant" not in e and "compression" not in e}
    tmp = tempfile.mkdtemp(prefix="cypatch-bench-")
    print("| consumer | built | native | patched | ratio | fallback path | rebuilt for it | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, module, cy in CASES:
        for layout, other in (("bindings", "legacy"), ("legacy", "bindings")):
            orig = entries[(kind, module, cy, layout)]["so"]
            rebuilt = entries[(kind, module, cy, other)]["so"]
            d = os.path.join(tmp, "%s-%s-%s" % (module, cy, layout))
            os.makedirs(d)
            patched = os.path.join(d, os.path.basename(orig))
            subprocess.run([CYPATCH, "--target-layout", "fallback", "-o", patched, orig], check=True,
                           capture_output=True)
            t = {k: [] for k in ("native", "patched", "fallback", "rebuilt")}
            for _ in range(runs):  # interleaved, so drift hits all alike
                t["native"].append(once(orig, module, site(manifest, kind, layout)))
                t["patched"].append(once(patched, module, site(manifest, kind, layout)))
                t["fallback"].append(once(patched, module, site(manifest, kind, other)))
                t["rebuilt"].append(once(rebuilt, module, site(manifest, kind, other)))
            m = {k: statistics.median(v) * 1e3 for k, v in t.items()}
            print("| %s %s (Cython %s) | %s | %.2f ms | %.2f ms | %.3f | %.2f ms | %.2f ms | %.3f |" % (
                kind, module, cy, layout, m["native"], m["patched"], m["patched"] / m["native"],
                m["fallback"], m["rebuilt"], m["fallback"] / m["rebuilt"]), flush=True)
    print("\nmedians of %d interleaved runs; %s" % (runs, sys.version.split()[0]))


if __name__ == "__main__":
    main()
