"""--tolerate-missing (docs/tolerate.md): consumers built by real Cython
against a newer real cuda-bindings than the one they meet. Unpatched, each
fails at import under the older release as check --release says; patched,
it imports there, the function the release lacks answers its stand-in's
error, and every other call reaches the installed release. Under a release
that has the function, the real one answers. check --release on the
patched file says what importing does, and what cannot be stood in for is
refused with one line, the input untouched and nothing written.
"""
import base64
import hashlib
import json
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import CORPUS, MANIFEST, ROOT, cypatch

sys.path.insert(0, os.path.join(ROOT, "samples"))
import build_corpus as bc  # noqa: E402

SITES = os.path.join(CORPUS, "provider-releases", "site")
SKEW = os.path.join(ROOT, "samples", "skew")
# Cython 0.29 cannot cimport cuda.bindings (a namespace package from 12.9)
CYTHONS = ["3.0.12", "3.1.8", "3.3.1"]
SUFFIX = ".cpython-311-x86_64-linux-gnu.so"
CUDA_ERROR_NOT_SUPPORTED = 801
NVVM_ERROR_INVALID_INPUT = 4


def site(release):
    return os.path.join(SITES, "cuda_bindings-" + release)


def build(name, cython, release):
    """samples/skew/NAME.pyx built by Cython against cuda-bindings RELEASE's
    .pxd files (cached under the corpus by its source and Cython)."""
    src = open(os.path.join(SKEW, name + ".pyx")).read()
    so, _, err = bc.build_ext(os.path.abspath(CORPUS), os.path.join(os.path.abspath(CORPUS), "skew", cython, release),
                              name, src, cython, [site(release)], [bc.CUDA_INCLUDE])
    assert not err, err
    return so


OUTCOME = r"""
import json, sys
out = {}
try:
    m = __import__(sys.argv[1])
except BaseException as e:
    print(json.dumps({"import": "%s: %s" % (type(e).__name__, e)}))
    raise SystemExit(0)
out["import"] = "ok"
for f in sys.argv[2:]:
    try:
        out[f] = getattr(m, f)()
    except BaseException as e:
        out[f] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
"""


def run(so, release, module, *calls):
    """What importing module (the file so, alone in its folder) does under
    the release's files, then each call."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(so), site(release),
                                                       os.path.join(SITES, "deps")]), PYTHONNOUSERSITE="1")
    p = subprocess.run([sys.executable, "-c", OUTCOME, module] + list(calls), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def patched(so, tmp_path, layout, spec, module):
    out = tmp_path / layout / (module + SUFFIX)
    out.parent.mkdir(parents=True, exist_ok=True)
    cypatch("-t", layout, "--tolerate-missing", spec, "-o", str(out), so, check=0)
    return str(out)


def cells(path, spec):
    """check --release SPEC's verdicts: {version: (binds, stood_in, first failure)}."""
    p = cypatch("check", "--json", "--release", spec, path)
    assert p.returncode in (0, 1), p.stderr
    out = {}
    for r in json.loads(p.stdout)["releases"]:
        (e,) = r["extensions"]
        out[r["version"]] = (r["ok"], e.get("stood_in", []), (e["failures"] or [None])[0])
    return out


@pytest.mark.parametrize("cython", CYTHONS)
def test_a_function_an_older_release_lacks_fails_unpatched_as_check_says(cython):
    so = build("skew", cython, "13.0.3")
    seen = run(so, "13.0.0", "skew")
    assert seen["import"] == "ImportError: cuda.bindings.cydriver does not export expected C function " \
                             "cuCheckpointProcessRestore", seen
    said = cells(so, "cuda-bindings==13.0.0")["13.0.0"]
    assert not said[0] and seen["import"] == said[2], said


@pytest.mark.parametrize("layout", ["bindings", "fallback"])
@pytest.mark.parametrize("cython", CYTHONS)
def test_the_stand_in_answers_where_the_release_lacks_the_function(cython, layout, tmp_path):
    so = patched(build("skew", cython, "13.0.3"), tmp_path, layout, "cuda-bindings>=13.0", "skew")
    calls = ("checkpoint_restore", "init", "runtime_device_count")
    old, new = run(so, "13.0.0", "skew", *calls), run(so, "13.0.3", "skew", *calls)
    assert old["import"] == new["import"] == "ok", (old, new)
    # the stand-in under 13.0.0; the real function, which needs the driver
    # this machine lacks, under 13.0.3
    assert old["checkpoint_restore"] == CUDA_ERROR_NOT_SUPPORTED, old
    assert new["checkpoint_restore"] == "RuntimeError: Failed to dlopen libcuda.so.1", new
    # every other call reaches the installed release, as the unpatched
    # module's do where it imports
    plain = run(build("skew", cython, "13.0.3"), "13.0.3", "skew", *calls[1:])
    for f in calls[1:]:
        assert old[f] == new[f] == plain[f], (f, old, new, plain)
    said = cells(so, "cuda-bindings>=13.0,<13.1")
    assert all(binds for binds, _, _ in said.values()), said
    stood = {v: s for v, (_, s, _) in said.items() if s}
    assert stood == {v: ["cuda.bindings.cydriver.cuCheckpointProcessRestore"] for v in ("13.0.0", "13.0.1")}, said
    # verify proves the others bound and names the one stood in for, only
    # where the release lacks it
    old, new = verified(so, "13.0.0", tmp_path), verified(so, "13.0.3", tmp_path)
    assert old.returncode == new.returncode == 0, (old.stdout, new.stdout)
    assert "3 of 4 bindings proven, 1 stood in for" in old.stdout, old.stdout
    assert "4 of 4 bindings proven\n" in new.stdout, new.stdout


def verified(path, release, tmp_path):
    """cypatch verify of path under an interpreter that sees the release."""
    wrapper = tmp_path / ("python-" + release)
    wrapper.write_text('#!/bin/sh\nPYTHONPATH=%s PYTHONNOUSERSITE=1 exec %s "$@"\n' % (
        os.pathsep.join([site(release), os.path.join(SITES, "deps")]), sys.executable))
    wrapper.chmod(0o755)
    return cypatch("verify", "--python", str(wrapper), path)


@pytest.mark.parametrize("cython", CYTHONS)
def test_a_whole_module_the_release_lacks_is_stood_in_for(cython, tmp_path):
    so = build("nvvm_skew", cython, "12.9.4")
    before = run(so, "12.8.0", "nvvm_skew")
    assert before["import"] == "ModuleNotFoundError: No module named 'cuda.bindings.cynvvm'", before
    assert cells(so, "cuda-bindings==12.8.0")["12.8.0"][2] == before["import"]
    out = patched(so, tmp_path, "bindings", "cuda-bindings>=12.8,<13", "nvvm_skew")
    old, new = run(out, "12.8.0", "nvvm_skew", "version", "init"), run(out, "12.9.4", "nvvm_skew", "version", "init")
    assert old["version"] == NVVM_ERROR_INVALID_INPUT and new["version"] != NVVM_ERROR_INVALID_INPUT, (old, new)
    assert old["init"] == new["init"] == "RuntimeError: Failed to dlopen libcuda.so.1", (old, new)
    said = cells(out, "cuda-bindings==12.8.0")["12.8.0"]
    assert said[0] and sorted(said[1]) == ["cuda.bindings.cynvvm", "cuda.bindings.cynvvm.nvvmVersion"], said
    shown = cypatch("show", out, check=0).stdout
    assert "stands in for the module cuda.bindings.cynvvm" in shown
    assert "stands in for the function nvvmVersion" in shown


def test_cpython_313_builds_look_capsules_up_by_reference(tmp_path):
    """Cython 3.1+ builds for CPython 3.13 call PyDict_GetItemStringRef
    where older ones call PyDict_GetItemString: the stub stands in there
    too, against cuda-bindings' own cp313 wheels."""
    from build_pythons import find
    python = find("3.13")
    if not python:
        pytest.skip("no CPython 3.13 on this machine (pyenv's or python3.13 on PATH)")
    sites = MANIFEST["cp313_releases"]
    so, _, err = bc.build_ext(os.path.abspath(CORPUS), os.path.join(os.path.abspath(CORPUS), "skew", "cp313"), "skew",
                              open(os.path.join(SKEW, "skew.pyx")).read(), "3.3.1", [sites["13.0.3"]],
                              [bc.CUDA_INCLUDE], target=bc.target_of(python))
    assert not err, err
    assert "PyDict_GetItemStringRef" in subprocess.run(["nm", "-D", so], stdout=subprocess.PIPE, text=True).stdout
    out = tmp_path / os.path.basename(so)
    cypatch("-t", "bindings", "--tolerate-missing", "cuda-bindings>=13.0,<13.1", "-o", str(out), so, check=0)
    deps = os.path.join(SITES, "deps")

    def outcome(path, release):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(path), sites[release], deps]),
                   PYTHONNOUSERSITE="1")
        p = subprocess.run([python, "-c", OUTCOME, "skew", "checkpoint_restore", "runtime_device_count"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=300)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.strip().splitlines()[-1])
    assert outcome(so, "13.0.0")["import"].endswith("does not export expected C function cuCheckpointProcessRestore")
    old, new = outcome(str(out), "13.0.0"), outcome(str(out), "13.0.3")
    assert old["checkpoint_restore"] == CUDA_ERROR_NOT_SUPPORTED, old
    assert new["checkpoint_restore"] == "RuntimeError: Failed to dlopen libcuda.so.1", new
    assert old["runtime_device_count"] == new["runtime_device_count"] == outcome(so, "13.0.3")["runtime_device_count"]


def untouched_refusal(args, path, tmp_path, status=2):
    """cypatch ARGS refused with one line naming the file; the input as it
    was and nothing written beside the output."""
    before = open(path, "rb").read()
    p = cypatch(*args)
    assert p.returncode == status, (p.returncode, p.stdout, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert open(path, "rb").read() == before
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".cypatch")]
    return p.stderr


def test_a_function_whose_type_has_no_error_is_refused(tmp_path):
    so = build("nvvm_message", "3.3.1", "12.9.4")
    out = str(tmp_path / ("nvvm_message" + SUFFIX))
    err = untouched_refusal(["-t", "bindings", "--tolerate-missing", "cuda-bindings>=12.8", "-o", out, so], so,
                            tmp_path)
    assert "cannot stand in for cuda.bindings.cynvvm.nvvmGetErrorString, which cuda-bindings 12.8.0 lacks" in err
    assert "char const *(nvvmResult)" in err and not os.path.exists(out)


def test_a_variable_is_refused(tmp_path):
    corpus = [e for e in MANIFEST["entries"] if e["kind"] == "corpus" and e["module"] == "cimports" and
              e["cython"] == "3.3.1" and e["layout"] == "bindings" and "variant" not in e and
              "compression" not in e]
    so = corpus[0]["so"]
    out = str(tmp_path / os.path.basename(so))
    err = untouched_refusal(["-t", "bindings", "--tolerate-missing", "cuda-python==12.6.2.post1", "-o", out, so], so,
                            tmp_path)
    assert "cannot stand in for the variable cuda.bindings.cydriver.cudaCorpusLayout, which cuda-python " \
           "12.6.2.post1 lacks" in err


def test_a_patch_that_still_fails_in_the_range_is_refused(tmp_path):
    """cuda-core 0.6.0's cuda_utils also imports cuda.bindings.nvvm at
    Python level, which 12.8.0 lacks: no stand-in serves that, and the
    patch says so instead of writing a file that fails there."""
    (wheel,) = [w["wheel"] for w in MANIFEST["real_corpus"] if (w["name"], w["version"]) == ("cuda-core", "0.6.0")]
    member = "cuda/core/cu12/_utils/cuda_utils" + SUFFIX
    with zipfile.ZipFile(wheel) as z:
        so = z.extract(member, str(tmp_path / "in"))
    out = str(tmp_path / os.path.basename(member))
    err = untouched_refusal(["-t", "bindings", "--tolerate-missing", "cuda-bindings>=12.8,<13", "-o", out, so], so,
                            tmp_path)
    assert "under cuda-bindings 12.8.0, it still fails, where no stand-in serves: ModuleNotFoundError: No module " \
           "named 'cuda.bindings.nvvm'" in err and not os.path.exists(out)
    # the wheel: repair refuses it the same way, and writes nothing
    p = cypatch("repair", "-w", str(tmp_path / "w"), "-t", "bindings", "--tolerate-missing", "cuda-bindings>=12.8,<13",
                wheel)
    assert p.returncode == 2 and "No module named 'cuda.bindings.nvvm'" in p.stderr, p.stderr
    assert not os.listdir(str(tmp_path / "w"))


def test_real_cuda_core_survives_the_release_before_its_floor(tmp_path):
    """cuda-core 1.0.0 (cu13 tree: cuDevSmResourceSplit, 13.1.1 on) fails to
    import under cuda-bindings 13.0.0; repaired with the range, it imports
    there, Requires-Dist admits 13.0.0 and check --release agrees."""
    (wheel,) = [w["wheel"] for w in MANIFEST["real_corpus"] if (w["name"], w["version"]) == ("cuda-core", "1.0.0")]
    out = tmp_path / "w"
    cypatch("repair", "-w", str(out), "-t", "bindings", "--tolerate-missing", "cuda-bindings>=13.0,<14", wheel, check=0)
    (repaired,) = [str(p) for p in out.iterdir()]
    seen = {}
    for form, w in (("shipped", wheel), ("repaired", repaired)):
        tree = tmp_path / form
        with zipfile.ZipFile(w) as z:
            z.extractall(str(tree))
        for release in ("13.0.0", "13.5.0"):
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), site(release), os.path.join(SITES, "deps")]),
                       PYTHONNOUSERSITE="1")
            p = subprocess.run([sys.executable, "-c", "from cuda.core import Device, Stream; print('ok')"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=300)
            seen[form, release] = "ok" if p.returncode == 0 else p.stderr.strip().splitlines()[-1]
    assert seen == {("shipped", "13.0.0"): "ImportError: cuda.bindings.cydriver does not export expected C function "
                                           "cuDevSmResourceSplit",
                    ("shipped", "13.5.0"): "ok", ("repaired", "13.0.0"): "ok", ("repaired", "13.5.0"): "ok"}, seen
    said = cells_of_wheel(repaired, "cuda-bindings>=13.0,<13.1")
    assert all(said.values()), said
    with zipfile.ZipFile(repaired) as z:
        meta = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")][0]
        assert 'cuda-bindings[all]>=13.0.0,<14 ; extra == "cu13"' in z.read(meta).decode()


def cells_of_wheel(path, spec):
    """check --release SPEC on a wheel: {version: binds}."""
    p = cypatch("check", "--json", "--release", spec, path)
    assert p.returncode in (0, 1), p.stderr
    return {r["version"]: r["ok"] for r in json.loads(p.stdout)["releases"]}


def test_a_stub_without_the_stand_ins_is_not_taken_for_one(tmp_path):
    so = build("skew", "3.3.1", "13.0.3")
    plain = str(tmp_path / ("plain" + SUFFIX))
    cypatch("-t", "fallback", "-o", plain, so, check=0)
    err = untouched_refusal(["-t", "bindings", "--tolerate-missing", "cuda-bindings>=13.0", "--in-place", plain],
                            plain, tmp_path)
    assert "already patched by cypatch's stub, without the stand-ins" in err


def test_a_bad_range_is_a_usage_error(tmp_path):
    so = build("skew", "3.3.1", "13.0.3")
    err = untouched_refusal(["-t", "bindings", "--tolerate-missing", "cuda-bindings>>13", "-o",
                             str(tmp_path / "x.so"), so], so, tmp_path, status=64)
    assert "--tolerate-missing wants 'all' or cuda-python/cuda-bindings with PEP 440 specifiers, not " \
           "'cuda-bindings>>13'" in err


def test_repair_writes_the_range_into_requires_dist(tmp_path):
    """A wheel of the skew consumer that claims cuda-bindings>=13.0.2 (its
    true floor unpatched): repaired with the range, it binds from 13.0.0,
    and Requires-Dist says so; cypatch.json records the stand-ins."""
    so = build("skew", "3.3.1", "13.0.3")
    dist = "skewdemo-1.0.dist-info"
    files = {"skew" + SUFFIX: open(so, "rb").read(),
             dist + "/METADATA": b"Metadata-Version: 2.1\nName: skewdemo\nVersion: 1.0\n"
                                 b"Requires-Dist: cuda-bindings>=13.0.2,<14\n",
             dist + "/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n"}
    wheel = str(tmp_path / "skewdemo-1.0-cp311-cp311-linux_x86_64.whl")
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files.items():
            z.writestr(n, d)
        z.writestr(dist + "/RECORD", "".join("%s,sha256=%s,%d\n" % (n, base64.urlsafe_b64encode(
            hashlib.sha256(d).digest()).rstrip(b"=").decode(), len(d)) for n, d in files.items()) + dist + "/RECORD,,\n")
    cypatch("repair", "-w", str(tmp_path / "w"), "-t", "bindings", "--tolerate-missing", "cuda-bindings>=13.0,<14",
            wheel, check=0)
    with zipfile.ZipFile(str(tmp_path / "w" / os.path.basename(wheel))) as z:
        meta = z.read(dist + "/METADATA").decode()
        note = json.loads(z.read(dist + "/cypatch.json"))
    assert "Requires-Dist: cuda-bindings>=13.0.0,<14" in meta, meta
    assert note["tolerate_missing"] == "cuda-bindings>=13.0,<14"
    assert note["extensions"][0]["stand_ins"] == {"functions": 1, "modules": 0}, note
