"""Corpus provider: the Python-level driver module (cuda.bindings.driver / cuda.cuda)."""

LAYOUT = "bindings" if __name__.startswith("cuda.bindings.") else "legacy"


def cuDriverGetVersion():
    return (0, 12060 if LAYOUT == "bindings" else 12050)
