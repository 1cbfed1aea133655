"""Regret curves: mean over seeds with a 95% confidence band."""
from __future__ import annotations

import numpy as np


def mean_ci95(values: np.ndarray, axis: int = 0):
    """Mean and normal-approximation 95% CI half-width (1.96 standard errors) along ``axis``."""
    values = np.asarray(values, dtype=np.float64)
    n = values.shape[axis]
    mean = values.mean(axis=axis)
    if n < 2:
        return mean, np.zeros_like(mean)
    sem = values.std(axis=axis, ddof=1) / np.sqrt(n)
    return mean, 1.96 * sem


def plot_regret(curves: dict, path=None, *, title: str | None = None):
    """Plots cumulative regret against rounds (mean with a 95% band per curve).

    Uses a bare ``matplotlib.figure.Figure`` (no pyplot), so it neither switches the
    backend of a notebook nor needs a display.

    Args:
      curves: ``{label: (rounds (R,), regret (S, R))}``.
      path: optional PNG file to write.
      title: optional title.

    Returns:
      the ``matplotlib.figure.Figure`` (a notebook displays it).
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2), dpi=120)
    ax = fig.subplots()
    for label, (rounds, regret) in curves.items():
        mean, half = mean_ci95(regret)
        (line,) = ax.plot(rounds, mean, label=f"{label} ({regret.shape[0]} seeds)")
        ax.fill_between(rounds, mean - half, mean + half, color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xlabel("round t")
    ax.set_ylabel("cumulative pseudo-regret")
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, format="png")
    return fig
