"""Summaries of simulated runs: valid seeds, solver statistics, confidence intervals, and the
spread over instances.

Two sources of variation meet in a sweep over random instances: the seeds of one instance
(the algorithm's and the noise's randomness) and the instances (the problem). A pooled mean
over seeds x instances mixes them, so :func:`instance_summary` reports both: per instance
the mean over seeds with its 95% CI, and across instances the median, the interquartile
range and a 95% CI of the mean over instances.
"""
from __future__ import annotations

import numpy as np

from e2d_jax._stats import Z95 as Z95
from e2d_jax._stats import mean_ci95 as mean_ci95
from e2d_jax.sim.rollout import GAP_BIN_EDGES, RolloutResult, SolverStats
from e2d_jax.types import Status

def valid_seeds(result: RolloutResult) -> np.ndarray:
    """Boolean mask (leading axes of ``result``): seeds without a non-finite round or an
    action outside [0, K)."""
    return np.asarray(result.invalid_rounds) == 0


def hist_quantile(hist: np.ndarray, q: float) -> np.ndarray:
    """Upper bin edge at quantile q of histograms of the relative certified gap (..., NUM_GAP_BINS)
    (per seed, or pooled); NaN if empty."""
    hist = np.asarray(hist, np.int64)
    total = hist.sum(-1)
    cum = np.cumsum(hist, -1)
    idx = np.argmax(cum >= np.maximum(np.ceil(q * total), 1)[..., None], axis=-1)
    upper = np.concatenate([GAP_BIN_EDGES, [np.inf]])  # bin j holds values below edge j
    return np.where(total > 0, upper[idx], np.nan)


def solver_summary(stats: SolverStats) -> dict:
    """Per-seed solver statistics as NumPy arrays (leading axes of ``stats``).

    Returns:
      dict with ``max_iter_rounds``, ``nonfinite_rounds``, ``invalid_action_rounds`` (int
      counts) and ``rel_gap_median``, ``rel_gap_p90`` (upper bounds from the histogram, within
      a factor 10^(1/4); NaN for agents without a certified gap).
    """
    counts = np.asarray(stats.status_counts)
    hist = np.asarray(stats.gap_hist)
    return {
        "max_iter_rounds": counts[..., Status.MAX_ITER],
        "nonfinite_rounds": counts[..., Status.NONFINITE],
        "invalid_action_rounds": counts[..., Status.INVALID_ACTION],
        "rel_gap_median": hist_quantile(hist, 0.5),
        "rel_gap_p90": hist_quantile(hist, 0.9),
    }


def hparam_grid(**axes) -> dict:
    """The Cartesian product of hyperparameter values, flattened into cells.

    ``hparam_grid(eps2_scale=[0.1, 1.0], reg=[1.0, 2.0])`` gives 4 cells:
    ``{"eps2_scale": array([0.1, 0.1, 1, 1]), "reg": array([1, 2, 1, 2])}``, ready for
    ``simulate(..., hparams=...)``.
    """
    if not axes:
        raise ValueError("hparam_grid needs at least one axis, e.g. hparam_grid(eps2_scale=[0.1, 1])")
    names = list(axes)
    values = [np.asarray(v, np.float64).reshape(-1) for v in axes.values()]
    for name, v in zip(names, values):
        if v.size == 0:
            raise ValueError(f"hparam_grid: axis {name!r} has no values")
    mesh = np.meshgrid(*values, indexing="ij")
    return {n: m.reshape(-1) for n, m in zip(names, mesh)}


def instance_summary(final, valid=None) -> dict:
    """Final regret of one agent over instances x seeds, per instance and across instances.

    Args:
      final: (I, S) final regret per instance and seed.
      valid: optional (I, S) bool mask of valid seeds (default: all).

    Returns:
      dict with ``instances`` and ``seeds`` (valid seeds per instance, a list), ``pooled_mean``
      and ``pooled_ci95`` (over every valid (instance, seed)), ``instance_means`` and
      ``instance_ci95`` (per instance over its seeds), and across the instance means
      ``median``, ``iqr`` ([25th, 75th] percentiles) and ``mean_over_instances`` with
      ``ci95_over_instances`` (normal interval of the mean of the I instance means; only
      with I >= 2, else the instance's seed CI).
    """
    final = np.asarray(final, np.float64)
    if final.ndim != 2:
        raise ValueError(f"final must have shape (instances, seeds), got {final.shape}")
    valid = np.ones(final.shape, bool) if valid is None else np.asarray(valid, bool)
    means, halves, counts = [], [], []
    for row, ok in zip(final, valid):
        vals = row[ok]
        counts.append(int(vals.size))
        if vals.size:
            m, h = mean_ci95(vals)
            means.append(float(m))
            halves.append(float(h))
        else:
            means.append(float("nan"))
            halves.append(float("nan"))
    inst = np.asarray(means)
    seen = inst[np.isfinite(inst)]
    pooled = final[valid]
    pm, ph = mean_ci95(pooled) if pooled.size else (np.nan, np.nan)
    out = {
        "instances": int(final.shape[0]), "seeds": counts,
        "pooled_mean": float(pm), "pooled_ci95": [float(pm - ph), float(pm + ph)],
        "instance_means": means, "instance_ci95": [[m - h, m + h] for m, h in zip(means, halves)],
    }
    if seen.size:
        if seen.size >= 2:
            mm, mh = mean_ci95(seen)
        else:
            mm, mh = seen[0], halves[int(np.flatnonzero(np.isfinite(inst))[0])]
        out.update(median=float(np.median(seen)), iqr=[float(np.percentile(seen, 25)), float(np.percentile(seen, 75))],
                   mean_over_instances=float(mm), ci95_over_instances=[float(mm - mh), float(mm + mh)])
    else:
        nan = float("nan")
        out.update(median=nan, iqr=[nan, nan], mean_over_instances=nan, ci95_over_instances=[nan, nan])
    return out
