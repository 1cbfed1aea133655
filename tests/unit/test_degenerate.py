"""Degenerate but valid problems get correct, finite answers, checked against the reference
solvers (cvxpy / Clarabel for the linear program, HiGHS LPs for finite classes)."""
import numpy as np
import pytest

from e2d_jax import finite_acdec, linear_acdec

from reference import acdec_lp_grid, linear_acdec_reference, linear_exact_objective

RTOL, ATOL = 3e-3, 1e-6


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _semi(features):
    grams = np.einsum("ki,kj->kij", features, features)
    grams[0] = features.T @ features  # a revealing action keeps the program bounded
    return grams


rng = np.random.default_rng(7)
BASE = _unit(rng.normal(size=(4, 3)))
F_HAT = _unit(rng.normal(size=3))
LINEAR_CASES = {
    "duplicate features": (np.r_[BASE[:1], BASE[:1], BASE[2:]], F_HAT, 0.1),
    "collinear features": (np.r_[BASE[:1], -0.5 * BASE[:1], BASE[2:]], F_HAT, 0.1),
    "zero feature vector": (np.r_[BASE[:3], np.zeros((1, 3))], F_HAT, 0.1),
    "f_hat = 0 (all gaps equal)": (BASE, np.zeros(3), 0.1),
    "eps^2 = 1e-8": (BASE, F_HAT, 1e-8),
    "eps^2 = 10": (BASE, F_HAT, 10.0),
    "all arms identical": (np.repeat(BASE[:1], 4, axis=0), F_HAT, 0.1),
    "K = 2": (BASE[:2], F_HAT, 0.1),
    "d > K": (_unit(rng.normal(size=(3, 5))), _unit(rng.normal(size=5)), 0.1),
}


@pytest.mark.parametrize("case", list(LINEAR_CASES))
def test_linear_degenerate_problems_match_the_reference(case):
    features, f_hat, eps2 = LINEAR_CASES[case]
    grams = _semi(features)
    res = linear_acdec(features, grams, f_hat, eps2, maxiter=20000, rtol=1e-6)
    value, lower = float(res.value), float(res.lower_bound)
    assert np.isfinite(value) and np.isfinite(lower) and np.all(np.isfinite(np.asarray(res.mu)))
    mu = np.asarray(res.mu)
    assert mu.min() >= -1e-9 and abs(mu.sum() - 1) < 1e-6
    # the returned value is the true objective of the returned mu (independent evaluation)
    assert value == pytest.approx(linear_exact_objective(mu, features, grams, f_hat, eps2), rel=RTOL, abs=ATOL)
    ref, _, _ = linear_acdec_reference(features, grams, f_hat, eps2, lam_range=(1e-6, 1e6), num=40)
    assert np.isfinite(ref)
    assert lower <= ref * (1 + RTOL) + ATOL  # the certificate is below the independent optimum
    assert value <= ref * (1 + RTOL) + ATOL  # and the answer is as good as the reference


def _finite(rewards, f_index=0):
    f = rewards[f_index]
    gaps = rewards.max(axis=1)[None, :] - f[:, None]
    info = 0.5 * (rewards.T - f[:, None]) ** 2
    return gaps, info


R = np.random.default_rng(11).uniform(size=(5, 4))  # (M, K)
FINITE_CASES = {
    "duplicate models": (np.r_[R, R[1:3]], 0.05),
    "all arms identical within each model": (np.repeat(R[:, :1], 4, axis=1), 0.05),
    "f's arms all equal (all Delta_f rows equal)": (np.r_[np.full((1, 4), 0.5), R[1:]], 0.05),
    "K = 2": (R[:, :2], 0.05),
    "eps^2 = 1e-8": (R, 1e-8),
    "eps^2 = 10": (R, 10.0),
}


@pytest.mark.parametrize("case", list(FINITE_CASES))
def test_finite_degenerate_problems_match_the_lp_reference(case):
    rewards, eps2 = FINITE_CASES[case]
    gaps, info = _finite(rewards)
    res = finite_acdec(gaps, info, eps2)
    value, lower = float(res.value), float(res.lower_bound)
    assert np.isfinite(value) and np.isfinite(lower)
    ref, _ = acdec_lp_grid(gaps, info, eps2)
    assert lower <= ref + 1e-6 * max(1.0, abs(ref))
    assert value == pytest.approx(ref, rel=1e-3, abs=1e-6)
