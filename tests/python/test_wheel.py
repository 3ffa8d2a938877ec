"""`pip install cypatch` (issue 21): the wheels scripts/wheel makes.

The x86-64 wheel, installed into a clean venv with `pip install --no-index`,
is one static executable (ldd: not a dynamic executable) that names the
wheel's version and gives the same exit codes, messages and output bytes as
the CMake build ($CYPATCH) over the whole corpus (scripts/same_outputs:
show, every retarget, the fallback, repair and check of the real wheels).
The aarch64 wheel's executable does the same over the aarch64 corpus under
qemu-user. The sdist, built by pip with the in-tree backend, gives the
x86-64 wheel byte for byte. The wheels come from $WHEEL_DIR (default
build-wheel/dist; scripts/test runs scripts/wheel first)."""
import hashlib
import base64
import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from conftest import CORPUS, MAIN, ROOT

WHEEL_DIR = pathlib.Path(os.environ.get("WHEEL_DIR", os.path.join(ROOT, "build-wheel", "dist")))
VERSION = re.search(r'^#define CYPATCH_VERSION "([^"]+)"$',
                    pathlib.Path(ROOT, "patcher", "cypatch.h").read_text(), re.M).group(1)
MACHINES = {"x86_64": 62, "aarch64": 183}  # e_machine
TAGS = "py3-none-manylinux_2_17_{0}.manylinux2014_{0}.musllinux_1_1_{0}"


def wheel(arch):
    path = WHEEL_DIR / f"cypatch-{VERSION}-{TAGS.format(arch)}.whl"
    if not path.exists():
        pytest.fail(f"{path}: missing (scripts/wheel makes it)")
    return path


def binary_of(whl):
    with zipfile.ZipFile(whl) as z:
        return z.read(f"cypatch-{VERSION}.data/scripts/cypatch")


def elf_facts(data):
    """e_machine, and whether any program header is PT_INTERP or PT_DYNAMIC."""
    assert data[:6] == b"\x7fELF\x02\x01", "not a 64-bit little-endian ELF"
    machine = int.from_bytes(data[18:20], "little")
    phoff, phentsize, phnum = (int.from_bytes(data[32:40], "little"), int.from_bytes(data[54:56], "little"),
                               int.from_bytes(data[56:58], "little"))
    types = {int.from_bytes(data[phoff + i * phentsize:phoff + i * phentsize + 4], "little") for i in range(phnum)}
    return machine, bool(types & {3, 2})


@pytest.mark.parametrize("arch", sorted(MACHINES))
def test_the_wheel_is_one_static_executable_with_a_valid_record(arch):
    whl = wheel(arch)
    with zipfile.ZipFile(whl) as z:
        info = f"cypatch-{VERSION}.dist-info"
        tags = [line.split(": ", 1)[1] for line in z.read(f"{info}/WHEEL").decode().splitlines()
                if line.startswith("Tag: ")]
        assert tags == [f"py3-none-{p}" for p in TAGS.format(arch).split("-")[2].split(".")]
        rows = [r.split(",") for r in z.read(f"{info}/RECORD").decode().splitlines()]
        assert sorted(r[0] for r in rows) == sorted(z.namelist())
        for name, digest, size in rows:
            if name.endswith("/RECORD"):
                continue
            data = z.read(name)
            want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (digest, int(size)) == (want, len(data)), name
        assert z.getinfo(f"cypatch-{VERSION}.data/scripts/cypatch").external_attr >> 16 == 0o100755
        assert f"cypatch-{VERSION}.data/data/share/man/man1/cypatch.1" in z.namelist()
        assert f"Version: {VERSION}" in z.read(f"{info}/METADATA").decode().splitlines()
    machine, dynamic = elf_facts(binary_of(whl))
    assert (machine, dynamic) == (MACHINES[arch], False)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A clean venv with the x86-64 wheel installed by pip, from the file only."""
    where = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    subprocess.run([str(where / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "--no-index", str(wheel("x86_64"))], check=True)
    return where


def test_the_installed_command_names_the_wheels_version(venv):
    r = subprocess.run([str(venv / "bin" / "cypatch"), "--version"], capture_output=True, text=True)
    assert (r.returncode, r.stdout) == (0, f"cypatch {VERSION}\n")


def test_ldd_says_the_installed_command_is_not_dynamic(venv):
    r = subprocess.run(["ldd", str(venv / "bin" / "cypatch")], capture_output=True, text=True)
    assert "not a dynamic executable" in r.stdout + r.stderr, r.stdout + r.stderr


def test_the_man_page_and_the_documents_are_installed(venv):
    for installed, source in (("share/man/man1/cypatch.1", "docs/cypatch.1"),
                              ("share/doc/cypatch/exit-codes.md", "docs/exit-codes.md"),
                              ("share/doc/cypatch/json.md", "docs/json.md"),
                              ("share/doc/cypatch/pipeline.md", "docs/pipeline.md")):
        assert (venv / installed).read_bytes() == pathlib.Path(ROOT, source).read_bytes(), installed


def same_outputs(new, corpus, *extra):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "same_outputs"), MAIN, str(new), str(corpus),
                        *extra], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.rstrip().endswith("; 0 differ"), r.stdout[-3000:] + r.stderr[-2000:]
    return r.stdout.splitlines()[-1]


def test_the_installed_command_writes_what_the_cmake_build_writes(venv):
    line = same_outputs(venv / "bin" / "cypatch", CORPUS)
    assert re.match(r"\d{4,} runs \(", line), line  # the whole corpus, not a handful


def test_the_aarch64_executable_writes_under_qemu_what_the_cmake_build_writes(tmp_path):
    binary = tmp_path / "cypatch-aarch64"
    binary.write_bytes(binary_of(wheel("aarch64")))
    binary.chmod(0o755)
    runner = tmp_path / "cypatch"
    runner.write_text(f'#!/bin/sh\nexec qemu-aarch64-static "{binary}" "$@"\n')
    runner.chmod(0o755)
    r = subprocess.run([str(runner), "--version"], capture_output=True, text=True)
    assert (r.returncode, r.stdout) == (0, f"cypatch {VERSION}\n")
    # site (the real cuda-bindings modules, 30 MB each) costs minutes under
    # qemu; the real rmm wheels' modules and every consumer stay
    line = same_outputs(runner, pathlib.Path(CORPUS) / "aarch64", "--skip", "site")
    assert re.match(r"\d{3,} runs \(", line), line


def test_pip_builds_the_same_wheel_from_the_sdist(tmp_path):
    """The sdist holds the libraries' sources; pip with the in-tree backend
    (no network: --no-index, the build tools of this venv) builds the x86-64
    wheel again, the same bytes."""
    sdist = WHEEL_DIR / f"cypatch-{VERSION}.tar.gz"
    assert sdist.exists(), f"{sdist}: missing (scripts/wheel makes it)"
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-index",
                        "--no-build-isolation", "--no-deps", "-w", str(tmp_path), str(sdist)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    built = tmp_path / wheel("x86_64").name
    assert built.read_bytes() == wheel("x86_64").read_bytes()


def test_pipx_runs_the_wheel(tmp_path):
    """`pipx run` from the wheel file (pipx's own shared pip comes from PyPI,
    as on a user's machine; the wheel has no dependencies to fetch)."""
    pipx = shutil.which("pipx", path=os.path.dirname(sys.executable))
    if pipx is None:
        pytest.fail("pipx is not in the test venv (scripts/setup installs it)")
    env = dict(os.environ, PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(tmp_path / "bin"))
    r = subprocess.run([pipx, "run", "--no-cache", "--spec", str(wheel("x86_64")),
                        "cypatch", "--help"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "usage: cypatch" in r.stdout + r.stderr, r.stdout[-2000:] + r.stderr[-2000:]
