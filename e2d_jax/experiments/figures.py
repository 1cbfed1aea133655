"""The figures of a results directory, drawn from what is on disk.

``regret`` (mean cumulative regret with 95% CI bands per cell), ``final_regret`` (the
distribution of the final regret per cell) and, for every hyperparameter of a grid,
``regret_vs_<hyperparameter>``; each as PDF and PNG (:func:`e2d_jax.plotting.save`).
"""
from __future__ import annotations

import json
from pathlib import Path

from e2d_jax import plotting
from e2d_jax.experiments import storage


def title_of(summary: dict) -> str:
    """``name: env, d=.., K=.., n=.., S seeds × I instances[, conventions]`` (the parts the summary
    has: results saved from Python name no environment)."""
    cfg = summary["config"]
    dims = ", ".join(f"{k}={cfg.get(f)}" for k, f in (("d", "d"), ("K", "arms"), ("M", "models"))
                     if cfg.get(f) is not None)
    inst = len(cfg.get("instance_seeds", [0]))
    count = f"{cfg['seeds']} seeds" + (f" × {inst} instances" if inst > 1 else "")
    conv = f", {summary['conventions']} conventions" if summary.get("conventions") else ""
    parts = [cfg.get("env"), dims, f"n={cfg['horizon']}" if cfg.get("horizon") else None, count]
    return f"{summary['name']}: " + ", ".join(p for p in parts if p) + conv


def figures(out) -> dict:
    """Every figure of the results directory ``out`` (its summary must exist), drawn from what is
    on disk: ``{file stem: matplotlib Figure}``. Every cell has its own colour and name
    (:func:`e2d_jax.plotting.cell_colours`, :func:`e2d_jax.plotting.cell_names`); a cell without
    a valid seed is named in the figures ("no valid seeds") instead of being drawn."""
    out = Path(out)
    summary = json.loads((out / storage.SUMMARY).read_text())
    hparams = sorted({k for c in summary["agents"].values() for k in c["hyperparameters"]})
    return plotting.results_figures(storage.read_table(out), storage.read_curves(out), title=title_of(summary),
                                    instances=len(summary["config"].get("instance_seeds", [0])), hparams=hparams)


def draw(out) -> list:
    """Draws every figure of the results directory ``out`` (:func:`figures`) as PDF and PNG;
    returns the paths written."""
    out = Path(out)
    paths = []
    for stem, fig in figures(out).items():
        paths += plotting.save(fig, out / stem, write=storage.atomic_write)
    return paths
