"""A sweep's output directory while it runs: the manifest and one chunk file per work unit.

Layout (the finished tables are those of any results directory, :mod:`e2d_jax._files`)::

    manifest.json            the sweep's spec, its digest, versions; ``complete`` once collected
    chunks/<program>/chunkNNNNN.npz   one compressed file per finished work unit (atomic)
    results.parquet, curves.npz, summary.json[, diagnostics.npz], figures

A chunk holds its unit's per-seed results: the regret at the recorded rounds, the action
counts, the invalid rounds and, per seed, the rounds per solver status and the histogram of
the certified relative gap (and the agents' per-round info only when the sweep asks for
diagnostics). It carries the unit's digest, read alone (:func:`chunk_done`) to tell whether a
unit is finished, so a file from another configuration is never taken for a result and no
chunk is loaded to learn that. When every unit is done the chunks are collected into the
tables once, the manifest is marked ``complete`` and the chunk files are removed: every number
they held is in the tables, and nothing is stored twice.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from e2d_jax import _files
from e2d_jax._files import (CURVES, DIAGNOSTICS, SUMMARY, TABLE, atomic_write, read_curves,  # noqa: F401
                            read_table, write_json)

MANIFEST = "manifest.json"
CHUNKS = "chunks"


def chunk_path(out: Path, uid: str) -> Path:
    program, chunk = uid.rsplit("/", 1)
    return Path(out) / CHUNKS / program.replace("@", "_at_").replace("/", "_") / f"{chunk}.npz"


def write_chunk(out: Path, uid: str, arrays: dict) -> None:
    _files.write_npz(chunk_path(out, uid), arrays)


def chunk_done(out: Path, uid: str, digest: str) -> bool:
    """Whether the unit's chunk file exists and is of this configuration (only its digest is
    read)."""
    path = chunk_path(out, uid)
    if not path.exists():
        return False
    try:
        with np.load(path) as z:
            return str(z["unit_digest"]) == digest
    except Exception:  # noqa: BLE001 - a damaged file is a missing result, recomputed
        return False


def read_chunk(out: Path, uid: str, digest: str):
    """The unit's arrays, or None when missing, unreadable or of another configuration."""
    path = chunk_path(out, uid)
    if not path.exists():
        return None
    try:
        with np.load(path) as z:
            if str(z["unit_digest"]) != digest:
                return None
            return {k: z[k] for k in z.files}
    except Exception:  # noqa: BLE001 - a damaged file is a missing result, recomputed
        return None


def read_manifest(out: Path) -> dict:
    """The manifest (``{}`` when missing or unreadable)."""
    try:
        return json.loads((Path(out) / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}


def remove_chunks(out: Path) -> None:
    """Removes the chunk files (once the tables hold what they held)."""
    shutil.rmtree(Path(out) / CHUNKS, ignore_errors=True)


def remove_temporaries(out: Path) -> int:
    """Deletes temporary files a killed run left behind; returns how many."""
    n = 0
    for tmp in Path(out).rglob(".*.tmp"):
        try:
            tmp.unlink()
            n += 1
        except OSError:
            pass
    return n
