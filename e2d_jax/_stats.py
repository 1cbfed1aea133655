"""Confidence intervals of means (normal approximation), shared by the summaries and the
figures."""
from __future__ import annotations

import numpy as np

#: z of two-sided 95% normal intervals.
Z95 = 1.959963984540054


def mean_ci95(values, axis: int = 0):
    """Mean and normal-approximation 95% CI half-width (1.96 standard errors) along ``axis``."""
    values = np.asarray(values, dtype=np.float64)
    n = values.shape[axis]
    mean = values.mean(axis=axis)
    if n < 2:
        return mean, np.zeros_like(mean)
    sem = values.std(axis=axis, ddof=1) / np.sqrt(n)
    return mean, Z95 * sem
