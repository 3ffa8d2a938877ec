"""Oracle test: what `cypatch show --json` finds in each binary equals what
Cython's generated .c file says it holds."""
import pytest

from conftest import ENTRIES, RULES, scan_incomplete, show_json
from oracle import expected, reported

BUILT = [e for e in ENTRIES if not e["skipped"]]
# what the scan cannot follow (gcc -mcmodel=large): it
# says so, and every command refuses the module (conftest.VARIANT_REFUSALS)
UNSEEN = [e for e in BUILT if scan_incomplete(e)]
BUILT = [e for e in BUILT if e not in UNSEEN]


def oracle_case(e):
    return pytest.param(e, id=e["id"])


@pytest.mark.parametrize("entry", UNSEEN, ids=[e["id"] for e in UNSEEN])
def test_a_scan_that_cannot_follow_the_code_says_so(entry):
    doc = show_json(entry["so"])
    words = scan_incomplete(entry).replace("string blob was not recovered; the names inside it cannot be seen",
                                           "no string blob was recovered")
    assert any(words in n for n in doc["notes"]), doc["notes"]


@pytest.mark.parametrize("entry", [oracle_case(e) for e in BUILT])
def test_show_matches_generated_c(entry):
    exp = expected(entry["c"], RULES, entry["so"])
    doc = show_json(entry["so"])
    got = reported(doc)
    assert exp, "the oracle found nothing: the corpus entry references no mapped module"
    assert got == exp, "missing: %s\nextra: %s" % (sorted(exp - got), sorted(got - exp))
    # A 0.29 module without versioned helpers (no cimports, no CyFunctions)
    # carries no patch level; cypatch then says "0.29" and no more.
    assert doc["cython"] == entry["cython"] or (
        entry["cython"].startswith("0.29.") and doc["cython"] == "0.29")
    assert doc["layouts"] == [entry["layout"]]


@pytest.mark.parametrize("entry", BUILT, ids=[e["id"] for e in BUILT])
def test_every_reference_has_a_site(entry):
    doc = show_json(entry["so"])
    for r in doc["references"]:
        if r["kind"] in ("cimport", "function", "variable", "type", "pyimport", "filename",
                         "fromimport"):
            assert r["sites"], r


def test_corpus_covers_every_cython_and_form():
    seen = {(e["cython"], e["layout"], e["module"]) for e in BUILT}
    for cy in ("0.29.37", "3.0.12", "3.1.8", "3.2.9", "3.3.1"):
        for layout in ("bindings", "legacy"):
            for module in ("cimports", "pyimport", "pyimport_as", "pyfrom", "rmm_like"):
                assert (cy, layout, module) in seen, (cy, layout, module)


CIMPORTS = [e for e in BUILT if e["module"] == "cimports"]


@pytest.mark.parametrize("entry", CIMPORTS, ids=[e["id"] for e in CIMPORTS])
def test_type_import_reports_the_size_checked(entry):
    """CUstreamHolder: PyObject_HEAD (16) + vtable pointer (8) + long long (8)."""
    doc = show_json(entry["so"])
    types = [r for r in doc["references"] if r["kind"] == "type"]
    assert [(t["class"], t["size"]) for t in types] == [("CUstreamHolder", 32)]
