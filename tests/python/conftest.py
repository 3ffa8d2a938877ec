"""Shared fixtures: the cypatch binary, the corpus manifest, the rules."""
import atexit
import configparser
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the build under test; with CYPATCH_SANITIZED (scripts/test sets it to the
# ASan/UBSan build), every command runs under that build too, through
# tests/sanitize/twin.py, and each test fails where the two disagree
MAIN = os.environ.get("CYPATCH", os.path.join(ROOT, "build", "cypatch"))
SANITIZED = os.environ.get("CYPATCH_SANITIZED") or None
BUILDS = [MAIN] + ([SANITIZED] if SANITIZED else [])
CORPUS = os.environ.get("CORPUS_DIR", os.path.join(ROOT, "build", "corpus"))
sys.path.insert(0, os.path.join(ROOT, "tests", "sanitize"))
from twin import SANITIZER_ENV  # noqa: E402


def build_env(build, **extra):
    """The environment to run one build in: the sanitizers' options for the
    sanitized one."""
    env = dict(os.environ, **(SANITIZER_ENV if build == SANITIZED else {}))
    env.update(extra)
    return env


def twin_command():
    """An executable that runs tests/sanitize/twin.py with the two builds
    and the log named in it (tests pass their own environments, so
    nothing is left to the environment)."""
    where = tempfile.mkdtemp(prefix="cypatch-twin-")
    atexit.register(shutil.rmtree, where, True)
    path, log = os.path.join(where, "cypatch"), os.path.join(where, "disagreements")
    open(log, "w").close()
    # tests run cypatch as nobody too: the script, the log and an
    # interpreter that user may run (the venv's may live in root's home)
    os.chmod(where, 0o755)
    os.chmod(log, 0o666)
    script = shutil.copy(os.path.join(ROOT, "tests", "sanitize", "twin.py"), where)
    shutil.copy(os.path.join(ROOT, "tests", "sanitize", "lsan.supp"), where)  # beside it, as twin.py reads it
    python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
    with open(path, "w") as f:
        f.write('#!/bin/sh\nexec %s "$@"\n' % " ".join(shlex.quote(a) for a in [
            python, "-I", "-S", script, MAIN, SANITIZED, log]))
    os.chmod(path, 0o755)
    return path, log


CYPATCH, TWIN_LOG = twin_command() if SANITIZED else (MAIN, None)


@pytest.fixture(autouse=True)
def sanitized_build_agrees():
    """Fails the test that ran a command on which the sanitized build and
    the build under test disagree (twin.py's log)."""
    if not TWIN_LOG:
        yield
        return
    start = os.path.getsize(TWIN_LOG)
    yield
    with open(TWIN_LOG) as f:
        f.seek(start)
        new = f.read()
    if new:
        pytest.fail(new[:20000], pytrace=False)


def load_manifest():
    path = os.path.join(CORPUS, "manifest.json")
    if not os.path.exists(path):
        pytest.exit("no corpus at %s: run samples/build_corpus.py (scripts/test does)" % path, 2)
    with open(path) as f:
        return json.load(f)


MANIFEST = load_manifest()
ENTRIES = MANIFEST["entries"]
# scripts/test --quick runs the cases of the modules one Cython built
# (CYPATCH_CYTHON); ENTRIES stays whole for the tests that pick an entry
ONLY_CYTHON = os.environ.get("CYPATCH_CYTHON")


def other_cython(item):
    """Whether a test case is about a module another Cython than
    ONLY_CYTHON built: an entry among its parameters, or that Cython's
    version in its id."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    for v in params.values():
        for e in (v if isinstance(v, (tuple, list)) else [v]):
            if isinstance(e, dict) and e.get("cython") not in (None, ONLY_CYTHON):
                return True
    case = item.name.partition("[")[2]
    return any(re.search(r"(?<![\d.])%s(?![\d.])" % re.escape(c), case)
               for c in MANIFEST["cythons"] if c != ONLY_CYTHON)


def pytest_collection_modifyitems(config, items):
    if not ONLY_CYTHON:
        return
    keep, drop = [], []
    for i in items:
        (drop if other_cython(i) else keep).append(i)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def entry_ids(kind=None):
    return [e for e in ENTRIES if kind is None or e["kind"] == kind]


# Build variants cypatch refuses, by mode ("retarget" is legacy and
# bindings), and the words of its one-line reason (docs/cython-binaries.md).
# Everything else in the corpus must work.
VARIANT_REFUSALS = [
    # addresses built from the GOT and 64-bit offsets: nothing the scan reads
    # points at the names (3.2+: nor at the string blob)
    (lambda e: e.get("variant") == "mcmodel-large" and e["cython"] < "3.2", ("retarget", "fallback"),
     "nothing the scan reads points at it (code it cannot follow, such as gcc -mcmodel=large)"),
    (lambda e: e.get("variant") == "mcmodel-large" and e["cython"] >= "3.2", ("retarget", "fallback"),
     "string blob was not recovered; the names inside it cannot be seen"),
    # single-phase init imports neither PyErr_Clear nor PyErr_ExceptionMatches
    (lambda e: e.get("variant") == "single-phase" and not e["cython"].startswith("3.0"), ("fallback",),
     "which the extension does not import"),
    # Cython 3.3's shared utility module makes the Python-level imports: the
    # stub cannot see them (retargets need the stub where strings cannot say it)
    (lambda e: e.get("variant") == "shared" and e["module"] in ("pyimport", "pyimport_as", "pyfrom"),
     ("fallback",), "(Cython's shared utility module), where the fallback stub cannot see it"),
    (lambda e: e.get("variant") == "shared" and e["module"] in ("pyimport", "pyimport_as", "pyfrom"),
     ("retarget",), "(Cython's shared utility module), where the fallback stub cannot see it"),
]


def scan_incomplete(entry):
    """The words of the reason the scan cannot vouch for a corpus entry (the
    same in every mode, and for check), or None."""
    if entry.get("variant") == "mcmodel-large":
        return variant_refusal(entry, "fallback")
    return None


# Cython's module state (CYTHON_USE_MODULE_STATE) loses the exception of a
# failed import: the module raises this where others raise ImportError.
LOST = "SystemError: execution of module %s raised unreported exception"


def variant_refusal(entry, mode):
    """The words of the refusal a corpus entry gets in mode, or None."""
    mode = "fallback" if mode == "fallback" else "retarget"
    for matches, modes, words in VARIANT_REFUSALS:
        if matches(entry) and mode in modes:
            return words
    return None


def assert_refused(proc, words, dest):
    """Exit 2, one line naming the reason, nothing written."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr
    assert not os.path.exists(dest), dest


def cypatch(*args, check=None):
    proc = subprocess.run([CYPATCH] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    if check is not None:
        assert proc.returncode == check, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def disk_waits(*args):
    """Runs cypatch under strace: (its exit status, the names of the fsync,
    fdatasync and sync_file_range calls it made, threads included). Each
    build in turn, the build under test last (strace would see both
    through twin.py): the sanitized one must make the same calls."""
    if not shutil.which("strace"):
        pytest.fail("strace is missing: scripts/setup installs it")
    seen = [traced_waits(build, args) for build in reversed(BUILDS)]
    assert all(s == seen[-1] for s in seen), (args, seen)
    return seen[-1]


def traced_waits(build, args):
    # LeakSanitizer cannot run under ptrace
    env = build_env(build, ASAN_OPTIONS="exitcode=86:detect_leaks=0")
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as log:
        proc = subprocess.run(["strace", "-f", "-qq", "-o", log.name, "-e",
                               "trace=fsync,fdatasync,sync_file_range", build] + list(args),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        calls = re.findall(r"^(?:\d+ +)?(\w+)\(", log.read(), re.M)
    return proc.returncode, calls


def assert_clean_elf(path):
    """readelf -a reads the whole file without a word on stderr."""
    readelf = subprocess.run(["readelf", "-a", "-W", path], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    assert readelf.returncode == 0 and readelf.stderr == "", readelf.stderr


def show_json(path, *extra):
    proc = cypatch("show", "--json", *extra, path, check=0)
    return json.loads(proc.stdout)


class Rules:
    """The bundled rules, read independently of the C loader."""

    def __init__(self, path):
        cp = configparser.ConfigParser(comment_prefixes=("#", ";"), inline_comment_prefixes=(";",),
                                       delimiters=("=",))
        cp.optionxform = str
        cp.read(path)
        self.layout_of = {}
        for section in cp.sections():
            if not section.startswith("modules "):
                continue
            _, a, b = section.split()
            for left, right in cp.items(section):
                self.layout_of[left] = a
                self.layout_of[right] = b

    def is_mapped(self, name):
        return name in self.layout_of

    def package_layout(self, pkg):
        if pkg in self.layout_of:
            return None
        found = {lay for mod, lay in self.layout_of.items() if mod.startswith(pkg + ".")}
        return found.pop() if len(found) == 1 else None

    def names_layout(self, value):
        """A mapped module, or a package of one layout only."""
        return self.layout_of.get(value) or self.package_layout(value)

    def mangled(self):
        out = {}
        for mod, lay in self.layout_of.items():
            out["__pyx_t_" + "".join("%d%s_" % (len(p), p) for p in mod.split("."))] = mod
        return out


RULES = Rules(os.path.join(ROOT, "rules", "cuda-python.rules"))


# test_check.py's rows: (consumer, form, environment, outcome), printed at the end
CHECK_TABLE = []


# test_real_wheels.py's rows: (wheel, mode, outcome), printed at the end
REAL_TABLE = []

# test_real_wheels.py's check rows: (wheel, form, environment, module,
# what check said, what the import did when it says otherwise)
CHECK_REAL_TABLE = []


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    if REAL_TABLE:
        tr.section("cypatch repair on real wheels (exit 0 and behaving as built, or exit 2 and nothing written)")
        for wheel, mode, outcome in sorted(REAL_TABLE):
            tr.write_line("%-18s | %-8s | %s" % (wheel, mode, outcome))
    if CHECK_REAL_TABLE:
        tr.section("cypatch check on real wheels: its verdict, and the import's where they differ")
        for row in CHECK_REAL_TABLE:
            tr.write_line("%-20s | %-11s | %-24s | %s: %s%s" % (row[:5] + ((" | import: " + row[5]) if row[5] else "",)))
    if not CHECK_TABLE:
        return
    tr.section("cypatch check predicted, cypatch verify observed (they agree on every row)")
    outcomes = {}
    for consumer, form, env, outcome in CHECK_TABLE:
        outcomes.setdefault((form, env, outcome.split(" (expected")[0]), []).append(consumer)
    for (form, env, outcome), consumers in sorted(outcomes.items()):
        tr.write_line("%-9s | %-30s | %3d consumers | %s" % (form, env, len(consumers), outcome))
