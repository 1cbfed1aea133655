"""Property tests (hypothesis) of the DEC solvers, checked through their certificates.

Every property is stated so that a solver's tolerance cannot make it fail spuriously and a
real defect can: values are compared through the certified intervals [lower_bound, value].
Shapes are kept to a few sizes so that each compiles once.
"""
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from e2d_jax import finite_acdec, finite_offset_dec, linear_acdec, linear_offset_dec

SETTINGS = settings(max_examples=12, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
TOL = 1e-7


def _linear_problem(seed, k, d, revealing):
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(k, d))
    features /= np.linalg.norm(features, axis=1, keepdims=True)
    grams = np.einsum("ki,kj->kij", features, features)
    if revealing:
        grams[0] = features.T @ features
    f_hat = rng.normal(size=d)
    return features, grams, f_hat / np.linalg.norm(f_hat)


def _finite_problem(seed, k, m):
    rng = np.random.default_rng(seed)
    rewards = rng.uniform(size=(m, k))
    f = rewards[0]
    gaps = rewards.max(axis=1)[None, :] - f[:, None]  # Delta_f(pi, g) = r_g(pi*_g) - r_f(pi)
    info = 0.5 * (rewards.T - f[:, None]) ** 2  # Gaussian KL, sigma = 1; column 0 is f's own
    return gaps, info


def _on_simplex(mu):
    mu = np.asarray(mu)
    return np.all(mu >= -1e-9) and abs(mu.sum() - 1.0) < 1e-6


shapes = st.sampled_from([(3, 2), (5, 3)])


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), shape=shapes, revealing=st.booleans(),
       eps=st.floats(0.05, 2.0), factor=st.floats(1.2, 4.0))
def test_linear_acdec_properties(seed, shape, revealing, eps, factor):
    features, grams, f_hat = _linear_problem(seed, *shape, revealing)
    a = linear_acdec(features, grams, f_hat, eps**2, maxiter=5000, rtol=1e-6)
    b = linear_acdec(features, grams, f_hat, (factor * eps) ** 2, maxiter=5000, rtol=1e-6)
    for r in (a, b):
        assert _on_simplex(r.mu)
        assert float(r.value) >= float(r.lower_bound) - TOL
    # non-decreasing in eps: dec(eps) <= dec(factor eps), through the certificates
    assert float(a.lower_bound) <= float(b.value) + TOL
    # permuting the actions permutes mu and leaves the value
    perm = np.random.default_rng(seed + 1).permutation(shape[0])
    p = linear_acdec(features[perm], grams[perm], f_hat, eps**2, maxiter=5000, rtol=1e-6)
    assert float(p.lower_bound) <= float(a.value) + TOL and float(a.lower_bound) <= float(p.value) + TOL


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), shape=shapes, lam=st.floats(0.05, 5.0), factor=st.floats(1.2, 4.0))
def test_linear_offset_dec_non_increasing_in_lambda(seed, shape, lam, factor):
    features, grams, f_hat = _linear_problem(seed, *shape, True)
    a = linear_offset_dec(features, grams, f_hat, lam, maxiter=5000, rtol=1e-6)
    b = linear_offset_dec(features, grams, f_hat, factor * lam, maxiter=5000, rtol=1e-6)
    assert _on_simplex(a.mu) and _on_simplex(b.mu)
    assert float(b.lower_bound) <= float(a.value) + TOL


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), shape=st.sampled_from([(3, 4), (4, 6)]),
       eps=st.floats(0.05, 1.0), factor=st.floats(1.2, 4.0))
def test_finite_acdec_properties(seed, shape, eps, factor):
    gaps, info = _finite_problem(seed, *shape)
    a = finite_acdec(gaps, info, eps**2)
    b = finite_acdec(gaps, info, (factor * eps) ** 2)
    for r in (a, b):
        assert _on_simplex(r.mu)
        assert float(r.value) >= float(r.lower_bound) - TOL
    assert float(a.lower_bound) <= float(b.value) + TOL
    rng = np.random.default_rng(seed + 1)
    pa, pm = rng.permutation(shape[0]), rng.permutation(shape[1])
    p = finite_acdec(gaps[pa][:, pm], info[pa][:, pm], eps**2)
    assert float(p.lower_bound) <= float(a.value) + TOL and float(a.lower_bound) <= float(p.value) + TOL


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), shape=st.sampled_from([(3, 4), (4, 6)]),
       lam=st.floats(0.05, 5.0), factor=st.floats(1.2, 4.0))
def test_finite_offset_dec_non_increasing_in_lambda(seed, shape, lam, factor):
    gaps, info = _finite_problem(seed, *shape)
    a = finite_offset_dec(gaps, info, lam)
    b = finite_offset_dec(gaps, info, factor * lam)
    assert _on_simplex(a.mu) and _on_simplex(b.mu)
    assert float(b.lower_bound) <= float(a.value) + TOL
