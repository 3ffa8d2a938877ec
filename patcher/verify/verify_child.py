# The child of `cypatch verify`: run by the interpreter under test, whose
# site-packages decide the layout. argv[1] is the plan cypatch wrote (JSON):
# the extensions to import, each cimported function and variable with the
# address of its slot, and whether to call the CUDA functions. Prints one
# JSON object; never raises.
import ctypes
import importlib
import json
import os
import re
import sys
import sysconfig

plan = json.load(open(sys.argv[1]))
sys.path.insert(0, plan["root"])


class WheelFirst:
    """pip puts the wheel's files into the packages they belong to, also
    into one another distribution owns as a regular package (cuda-python
    12.x's `cuda`, which has an __init__.py and so hides the unpacked
    wheel's `cuda` directory): a submodule is looked for in the unpacked
    wheel's directory of its package first, where installing would put it.
    Finds nothing itself."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        parent = name.rpartition(".")[0]
        pkg = sys.modules.get(parent) if parent else None
        where = os.path.join(plan["root"], *parent.split("."))
        if pkg is not None and isinstance(getattr(pkg, "__path__", None), list) and \
                where not in pkg.__path__ and os.path.isdir(where):
            pkg.__path__.insert(0, where)
        return None


sys.meta_path.insert(0, WheelFirst)
capi = ctypes.pythonapi
capi.PyCapsule_GetName.restype = ctypes.c_char_p
capi.PyCapsule_GetName.argtypes = [ctypes.py_object]
capi.PyCapsule_GetPointer.restype = ctypes.c_void_p
capi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def exported(module, name):
    """The pointer a provider exports as `name`, and its signature."""
    mod = sys.modules.get(module)
    cap = getattr(mod, "__pyx_capi__", {}).get(name) if mod else None
    if cap is None:
        return None, None
    sig = capi.PyCapsule_GetName(cap)
    return capi.PyCapsule_GetPointer(cap, sig), sig.decode()


def binding(base, b):
    slot = ctypes.c_void_p.from_address(base + b["slot"]).value
    out = {"kind": b["kind"], "name": b["name"], "slot": b["slot"], "bound": False, "provider": None}
    exports = False
    for module in (b["provider"], b.get("other")):
        ptr, sig = exported(module, b["name"]) if module else (None, None)
        exports = exports or ptr is not None
        if ptr is not None and ptr == slot:
            out.update(bound=True, provider=module, signature=sig)
    # the file's stub stands in for it (--tolerate-missing), and no
    # provider installed exports it: the slot holds the stand-in
    out["stood_in"] = bool(b.get("standin") and slot and not exports)
    out["ptr"] = slot
    return out


# The GPU probe's calls, in order (cuInit before the driver's other calls).
PROBES = (("cuInit", (ctypes.c_uint,)), ("cuDeviceGetCount", (ctypes.POINTER(ctypes.c_int),)),
          ("cudaGetDeviceCount", (ctypes.POINTER(ctypes.c_int),)))


def probe_pointer(name, bound):
    """Where the probe calls `name`: the extension's own slot when it binds
    the function; else the capsule of a provider module the extension's
    proven bindings came from (their slots hold that module's pointers, so
    it is the provider the extension calls); None when it binds nothing of
    a module that exports the function."""
    b = bound.get(name)
    if b:
        return b["ptr"], "its slot"
    for module in sorted({b["provider"] for b in bound.values()}):
        ptr, _ = exported(module, name)
        if ptr is not None:
            return ptr, module
    return None, None


def gpu(bound):
    """The probe's calls on the GPU: each one the extension's providers
    make possible, through the pointer probe_pointer gives; the others are
    not made, and not held against it."""
    out = {}
    for name, argtypes in PROBES:
        ptr, via = probe_pointer(name, bound)
        if ptr is None:
            out[name] = {"skipped": "it binds nothing of a module that exports %s" % name}
            continue
        # PYFUNCTYPE keeps the GIL and raises what the callee left set
        fn = ctypes.PYFUNCTYPE(ctypes.c_int, *argtypes)(ptr)
        n = ctypes.c_int(-1)
        try:
            status = fn(0) if name == "cuInit" else fn(ctypes.byref(n))
            out[name] = {"status": status, "via": via}
            if name != "cuInit":
                out[name]["count"] = n.value
        except Exception as e:
            out[name] = {"error": "%s: %s" % (type(e).__name__, e), "via": via}
    return out


def parallel_trees(modules):
    """Per-CUDA-major trees (cuda-core's pkg/cu12/..., pkg/cu13/...): the
    package imports the one its environment needs. {module: why skipped}
    for the modules of the trees it did not import."""
    trees = {}
    for m in modules:
        parts = m.split(".")
        for i, p in enumerate(parts[1:], 1):
            if re.fullmatch(r"cu\d+", p):
                trees.setdefault(".".join(parts[:i]), set()).add(p)
                break
    skipped = {}
    for parent, names in trees.items():
        if len(names) < 2:
            continue
        try:
            importlib.import_module(parent)
        except BaseException:
            continue  # each module's own import then says why
        chosen = [n for n in names if any(k == parent + "." + n or k.startswith(parent + "." + n + ".")
                                          for k in list(sys.modules))]
        if len(chosen) != 1:
            continue
        for m in modules:
            for n in names - set(chosen):
                if m.startswith(parent + "." + n + "."):
                    skipped[m] = "%s imported %s.%s for this environment, not %s" % (parent, parent, chosen[0], n)
    return skipped


# the interpreter's own machine (its GNU triplet, as its extensions' suffix
# names it), not the kernel's (platform.machine())
multiarch = sysconfig.get_config_var("MULTIARCH") or getattr(sys.implementation, "_multiarch", None)
# the file suffix its version-tagged extensions must have
# (".cpython-314t-x86_64-linux-gnu.so"): verify.c refuses the others
result = {"python": sys.version.split()[0], "executable": sys.executable, "multiarch": multiarch,
          "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"), "extensions": []}
bound_all = {}
skips = parallel_trees([ext["module"] for ext in plan["extensions"]])
for ext in plan["extensions"]:
    rec = {"module": ext["module"], "file": ext["file"]}
    result["extensions"].append(rec)
    if ext["module"] in skips:
        rec["skipped"] = skips[ext["module"]]
        continue
    try:
        mod = importlib.import_module(ext["module"])
    except BaseException as e:
        rec["import"] = {"error": "%s: %s" % (type(e).__name__, e)}
        continue
    rec["import"] = {"ok": mod.__name__}
    lib = ctypes.CDLL(mod.__file__, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    base = ctypes.cast(getattr(lib, ext["init"]), ctypes.c_void_p).value - ext["init_value"]
    rec["bindings"] = [binding(base, b) for b in ext["bindings"]]
    for b in rec["bindings"]:
        if b["bound"]:
            bound_all.setdefault(b["name"], b)
if plan.get("gpu"):
    result["gpu"] = gpu(bound_all)
for rec in result["extensions"]:
    for b in rec.get("bindings", []):
        b.pop("ptr", None)
print(json.dumps(result))
