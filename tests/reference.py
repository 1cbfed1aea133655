"""Plain NumPy / SciPy reference oracles, written for clarity rather than speed.

Nothing here imports e2d_jax's implementation: the references are independent re-derivations
of the paper's formulas, so agreement is evidence of correctness.
"""
from __future__ import annotations

import numpy as np


# --- Linear environment, ridge regression, UCB and TS ------------------------------------

def ridge_estimate(obs_rows, observations, d, reg=1.0):
    """f_hat = (reg I + sum M^T M)^{-1} sum M^T y by a direct solve; also V."""
    v = reg * np.eye(d)
    b = np.zeros(d)
    for m, y in zip(obs_rows, observations):
        v += m.T @ m
        b += m.T @ y
    return np.linalg.solve(v, b), v


def ucb_action(features, f_hat, v, sigma, delta, radius, reg):
    d = features.shape[1]
    logdet = np.linalg.slogdet(v)[1] - d * np.log(reg)
    beta_sqrt = sigma * np.sqrt(2 * np.log(1 / delta) + logdet) + np.sqrt(reg) * radius
    width = np.sqrt(np.einsum("ki,ij,kj->k", features, np.linalg.inv(v), features))
    return int(np.argmax(features @ f_hat + beta_sqrt * width))


def ts_action(features, f_hat, v, sigma, z, scale=1.0):
    chol = np.linalg.cholesky(np.linalg.inv(v))
    return int(np.argmax(features @ (f_hat + scale * sigma * chol @ z)))


def run_linear_agent(features, obs_matrices, obs_mask, theta, sigma, choose, noises, horizon, reg=1.0):
    """Plays ``choose(t, f_hat, v)`` for ``horizon`` rounds with the given noise draws.

    Returns per-round actions, observations and estimates (before each round's action).
    """
    d = features.shape[1]
    rows, ys, actions, observations, estimates = [], [], [], [], []
    for t in range(horizon):
        f_hat, v = ridge_estimate(rows, ys, d, reg)
        a = choose(t, f_hat, v)
        m = obs_matrices[a]
        y = np.where(obs_mask[a], m @ theta + sigma * noises[t], 0.0)
        rows.append(m)
        ys.append(y)
        actions.append(a)
        observations.append(y)
        estimates.append(f_hat)
    return np.array(actions), np.array(observations), np.array(estimates)
