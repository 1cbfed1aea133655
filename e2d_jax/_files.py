"""A results directory on disk: atomic writes and the files every run leaves.

Layout (``e2d-jax`` commands, :func:`e2d_jax.experiments.run_sweep` and
:meth:`e2d_jax.sim.results.Results.save` write the same)::

    results.parquet   one row per (agent, hyperparameter cell, instance, seed)
    curves.npz        the regret at the recorded rounds, row-aligned with the table
    summary.json      per cell: mean and 95% CI, solver statistics, configuration, versions
    diagnostics.npz   (on request) every agent's per-round info at the recorded rounds
    *.png, *.pdf      figures

The table needs no library to read (``pandas.read_parquet``), nor the curves
(``numpy.load``: ``regret`` has one row per table row, ``rounds`` the rounds).

Atomic writes: a file is written under a temporary name in the same directory, flushed and
``fsync``-ed, then renamed over its final name (and the directory is ``fsync``-ed), so a
file under its final name is always complete; a killed process leaves at most a temporary
file, which is ignored and removed on the next run.
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
DIAGNOSTICS = "diagnostics.npz"


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


def _json_default(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def finite_or_none(x):
    """``x`` with every non-finite float (a statistic over no valid seed) replaced by None, so
    that it is strict JSON (``null``)."""
    if isinstance(x, dict):
        return {k: finite_or_none(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite_or_none(v) for v in x]
    if isinstance(x, (float, np.floating)) and not np.isfinite(x):
        return None
    return x


def write_json(path, obj) -> None:
    atomic_write(path, lambda f: f.write((json.dumps(obj, indent=2, default=_json_default) + "\n").encode()))


def write_npz(path, arrays: dict) -> None:
    """Compressed ``.npz``, atomically."""
    atomic_write(path, lambda f: np.savez_compressed(f, **arrays))


def read_table(out) -> pd.DataFrame:
    """The results table as a pandas DataFrame (``pandas.read_parquet``)."""
    return pd.read_parquet(Path(out) / TABLE)


def write_table(out, columns: dict) -> None:
    table = pa.table(columns)
    atomic_write(Path(out) / TABLE, lambda f: pq.write_table(table, f, compression="zstd"))


def write_curves(out, rounds, regret) -> None:
    """The curves (one row per table row) and their rounds."""
    write_npz(Path(out) / CURVES, {"rounds": np.asarray(rounds), "regret": np.asarray(regret, np.float32)})


def read_curves(out) -> dict:
    """``{"rounds": (R,), "regret": (rows, R)}``, row-aligned with the table."""
    with np.load(Path(out) / CURVES) as z:
        return {k: z[k] for k in z.files}
