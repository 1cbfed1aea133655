"""Results on disk: atomic chunk files with a manifest, and the tables read from them.

Layout of an output directory::

    manifest.json            the sweep's spec, its digest, versions (written first)
    chunks/<agent>/chunkNNNNN.npz   one file per finished work unit (atomic)
    results.parquet          one row per (agent, hyperparameter cell, instance, seed)
    curves.npz               regret at the recorded rounds, row-aligned with the table
    summary.json             mean and 95% CI per cell, configuration, versions, device, time
    *.png, *.pdf             figures

Atomic writes: a file is written under a temporary name in the same directory, flushed and
``fsync``-ed, then renamed over its final name (and the directory is ``fsync``-ed), so a
file under its final name is always complete; a killed process leaves at most a temporary
file, which is ignored and removed on the next run. A chunk file also carries the unit's
digest: a file from another configuration is never taken for a result.

The table needs no library to read: ``pandas.read_parquet("results.parquet")``; the curves
``numpy.load("curves.npz")`` (``regret`` has one row per table row, ``rounds`` the rounds).
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

TABLE = "results.parquet"
CURVES = "curves.npz"
SUMMARY = "summary.json"
MANIFEST = "manifest.json"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _umask()


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path, write) -> None:
    """Calls ``write(file_object)`` on a temporary file, fsyncs it and renames it to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600 files; results are ordinary files
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_json(path, obj) -> None:
    atomic_write(path, lambda f: f.write((json.dumps(obj, indent=2, default=_json_default) + "\n").encode()))


def _json_default(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def chunk_path(out: Path, uid: str) -> Path:
    agent, chunk = uid.rsplit("/", 1)
    return Path(out) / "chunks" / agent.replace("@", "_at_").replace("/", "_") / f"{chunk}.npz"


def write_chunk(out: Path, uid: str, arrays: dict) -> None:
    atomic_write(chunk_path(out, uid), lambda f: np.savez(f, **arrays))


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


def read_table(out):
    """The results table as a pandas DataFrame (``pandas.read_parquet``)."""
    return pd.read_parquet(Path(out) / TABLE)


def write_table(out: Path, columns: dict) -> None:
    table = pa.table(columns)
    atomic_write(Path(out) / TABLE, lambda f: pq.write_table(table, f))


def write_curves(out: Path, rounds, regret, row_id) -> None:
    atomic_write(Path(out) / CURVES, lambda f: np.savez(f, rounds=rounds, regret=regret, row_id=row_id))


def read_curves(out):
    with np.load(Path(out) / CURVES) as z:
        return {k: z[k] for k in z.files}
