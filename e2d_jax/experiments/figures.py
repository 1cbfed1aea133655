"""The figures of a results directory, drawn from what is on disk.

``regret`` (mean cumulative regret with 95% CI bands per cell), ``final_regret`` (the
distribution of the final regret per cell) and, for every hyperparameter of a grid,
``regret_vs_<hyperparameter>``; each as PDF and PNG (:func:`e2d_jax.plotting.save`), the same
figures :meth:`e2d_jax.results.Results.save` draws from Python (:func:`e2d_jax.results.figures`).
"""
from __future__ import annotations

import json
from pathlib import Path

from e2d_jax import plotting, results
from e2d_jax.experiments import storage

title_of = results.title_of


def figures(out) -> dict:
    """Every figure of the results directory ``out`` (its summary must exist), drawn from what is
    on disk: ``{file stem: matplotlib Figure}`` (:func:`e2d_jax.results.figures`)."""
    out = Path(out)
    summary = json.loads((out / storage.SUMMARY).read_text())
    return results.figures(storage.read_table(out), storage.read_curves(out), summary)


def draw(out) -> list:
    """Draws every figure of the results directory ``out`` (:func:`figures`) as PDF and PNG;
    returns the paths written."""
    out = Path(out)
    paths = []
    for stem, fig in figures(out).items():
        paths += plotting.save(fig, out / stem, write=storage.atomic_write)
    return paths
