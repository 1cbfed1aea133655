"""What identifies a result: the library's version and source, the sweep's spec, the unit.

Every chunk file and manifest carries these digests, so a directory that holds results of
other code or another configuration is never taken for this one's.
"""
from __future__ import annotations

import hashlib
import platform
from pathlib import Path

import jax
import jaxlib
import numpy as np

from e2d_jax.version import __version__

#: Modules that draw or print results but compute none: left out of the source digest, so
#: that editing a figure or a help text does not invalidate stored results.
PRESENTATION_PATHS = ("plotting.py", "cli/", "paper/figures.py")


def source_digest() -> str:
    """A hash of the library's source files that compute results (all but
    ``PRESENTATION_PATHS``): results are tied to the code that made them."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in PRESENTATION_PATHS):
            continue
        h.update(rel.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def versions() -> dict:
    """The library's version and source digest and the versions of what computes with it."""
    return {"e2d_jax": __version__, "e2d_jax_source": source_digest(), "jax": jax.__version__,
            "jaxlib": jaxlib.__version__, "numpy": np.__version__, "python": platform.python_version()}


def code_id() -> str:
    """``version+source digest``: the code a result was computed with."""
    v = versions()
    return f"{v['e2d_jax']}+{v['e2d_jax_source']}"


def unit_digest(spec_digest: str, unit) -> str:
    """Identifies one work unit's results (its spec, agent, seed range, chunk size and lanes)."""
    return hashlib.sha256(f"{spec_digest}/{unit.uid}/{unit.first}/{unit.count}/{unit.size}/{unit.width}".encode()).hexdigest()[:16]
