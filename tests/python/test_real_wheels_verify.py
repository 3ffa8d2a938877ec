"""The verify table of the real wheels (test_real_wheels.py has the wheels,
the environments and the repairs): `verify`'s verdict on every module of
every real wheel, as shipped and repaired in every mode, under every
environment of the check table, equals what importing the module does. A
file of its own, so that its cost runs beside the rest of
test_real_wheels.py on another core (ctest's entries, the ASan pass's
workers); the environments and repairs are made again for it."""
import json
import os
import subprocess

import pytest

from conftest import CYPATCH
from test_real_wheels import CHECK_ENVS, PRELUDES, REAL, envs, repairs, wheel_id  # noqa: F401 (fixtures)


def verified(env, wheel):
    """verify's verdict on each module it imports: "imported" when the
    import went through and every binding was proven, else why not; and
    its exit status and the module it blames for a failure ("" when it
    names none). The wheel's dependencies must be installed."""
    p = subprocess.run([CYPATCH, "verify", "--json", "--python", env.py, wheel], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=600, env=dict(os.environ, PYTHONNOUSERSITE="1"))
    assert p.returncode in (0, 1, 2) and p.stdout, (wheel, env.py, p.returncode, p.stderr)
    doc, out = json.loads(p.stdout), {}
    blamed = doc.get("why", "").split(":")[0] if p.returncode else ""
    for e in doc.get("extensions", []):
        if "skipped" in e:
            continue
        imp = e.get("import", {})
        unbound = [b["name"] for b in e.get("bindings", []) if not b.get("bound")]
        if "ok" not in imp:
            out[e["module"]] = "import failed: %s" % imp
        elif unbound:
            out[e["module"]] = "not proven: " + ", ".join(unbound)
        else:
            out[e["module"]] = "imported"
    return out, p.returncode, blamed


@pytest.mark.parametrize("w", REAL, ids=[wheel_id(w) for w in REAL])
def test_verify_says_what_the_import_does(w, envs, repairs, tmp_path):
    """For the wheel as shipped and as repaired in every mode, under every
    environment of the check table: verify's verdict on each module it
    imports (imported with every binding proven, or not) equals what
    importing the module does, judged alone in a fresh interpreter where
    the one-process run disagrees; its exit status is 0 exactly when every
    module it imports does, and a failure it reports names a module whose
    import fails. A module verify skips (the other CUDA tree) is not
    counted. verify runs no prelude: pylibraft's modules need librmm.so,
    which `import rmm` loads in the import runs (libraft, through which
    pylibraft's own __init__ would load it, is left out), so there the
    import alone without the prelude is the judge."""
    forms = [("as shipped", w["wheel"], None)]
    for mode in ("legacy", "bindings", "fallback"):
        r = repairs(w, mode)
        if r.wheel:
            forms.append(("-t " + mode, r.wheel, r.deps))
    wrong, prelude = [], w["name"] not in PRELUDES
    for form, wheel, deps in forms:
        for env_name in CHECK_ENVS:
            env = envs(env_name)
            did = env.outcomes(w, wheel, tmp_path, deps)
            env.install_deps(w, deps)
            said, rc, blamed = verified(env, wheel)
            for module, v in sorted(said.items()):
                if prelude and (v == "imported") == (did[module] == "imported"):
                    continue
                alone = env.alone(w, wheel, tmp_path, deps, module, prelude)
                if (v == "imported") != (alone == "imported"):
                    wrong.append("%s %s under %s: %s: verify said %r, the import %s" % (
                        wheel_id(w), form, env_name, module, v, alone))
            if said and (rc == 0) != all(v == "imported" for v in said.values()):
                wrong.append("%s %s under %s: verify exited %d for %s" % (wheel_id(w), form, env_name, rc, said))
            elif blamed in said and (did[blamed] == "imported" or not prelude) and \
                    env.alone(w, wheel, tmp_path, deps, blamed, prelude) == "imported":
                wrong.append("%s %s under %s: verify blamed %s, which imports: %s" % (
                    wheel_id(w), form, env_name, blamed, said[blamed]))
    assert not wrong, "\n".join(wrong)
