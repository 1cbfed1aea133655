"""The public DEC functions finish at their default options on random problems.

Each function is called as a user calls it (no solver, no budget) on random problems drawn by
hypothesis: linear semi-bandits and plain linear bandits with a random reference, finite
Gaussian and Bernoulli bandit classes with a random reference model, both gap types, eps^2
log-uniform in [1e-3, 1] and lambda log-uniform in [0.1, 100]. The answer must end ``OK`` with
a certified relative gap <= 1e-3, or an absolute gap <= 1e-5 where the value is near 0. Shapes
are drawn from a short list so that each compiles once; ``benchmarks/dec_convergence.py`` runs
the same check over the full range of sizes (d <= 30, K <= 20; up to 50 models, 10 actions).
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import e2d_jax as e2d
from e2d_jax.types import Status
from e2d_jax.envs import finite as fe

SETTINGS = settings(max_examples=6, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
REL_TOL, ABS_TOL = 1e-3, 1e-5

eps2s = st.floats(-3.0, 0.0).map(lambda e: 10.0**e)
lams = st.floats(-1.0, 2.0).map(lambda e: 10.0**e)
gap_types = st.sampled_from(["delta_f", "delta"])


def _assert_finished(res):
    value, gap = float(res.value), float(res.gap)
    assert int(res.status) == int(Status.OK), f"status {int(res.status)}, value {value}, gap {gap}"
    assert gap <= max(REL_TOL * abs(value), ABS_TOL), f"value {value}, certified gap {gap}"


def _linear(seed, shape, semi):
    d, k = shape
    maker = e2d.semi_bandit if semi else e2d.linear_bandit
    params = maker(jax.random.key(seed), d, k)
    f_hat = np.random.default_rng(seed).normal(size=d) / np.sqrt(d)
    return params.model, jnp.asarray(f_hat, jnp.float32)


def _finite(seed, shape, gaussian):
    k, m = shape
    make = fe.multi_armed_bandit_class if gaussian else fe.bernoulli_bandit_class
    return make(jax.random.key(seed), k, m).model, seed % m


seeds = st.integers(0, 2**30)
linear_shapes = st.sampled_from([(3, 5), (8, 12)])
finite_shapes = st.sampled_from([(3, 5), (6, 20)])


@SETTINGS
@given(seed=seeds, shape=linear_shapes, semi=st.booleans(), eps2=eps2s, gap_type=gap_types)
def test_linear_acdec_finishes_at_defaults(seed, shape, semi, eps2, gap_type):
    model, f_hat = _linear(seed, shape, semi)
    _assert_finished(e2d.linear_acdec(model, f_hat, eps2, gap_type=gap_type))


@SETTINGS
@given(seed=seeds, shape=linear_shapes, semi=st.booleans(), lam=lams, gap_type=gap_types)
def test_linear_offset_dec_finishes_at_defaults(seed, shape, semi, lam, gap_type):
    model, f_hat = _linear(seed, shape, semi)
    _assert_finished(e2d.linear_offset_dec(model, f_hat, lam, gap_type=gap_type))


@SETTINGS
@given(seed=seeds, shape=finite_shapes, gaussian=st.booleans(), eps2=eps2s, gap_type=gap_types)
def test_finite_acdec_finishes_at_defaults(seed, shape, gaussian, eps2, gap_type):
    model, f = _finite(seed, shape, gaussian)
    _assert_finished(e2d.finite_acdec(model, f, eps2, gap_type=gap_type))


@SETTINGS
@given(seed=seeds, shape=finite_shapes, gaussian=st.booleans(), lam=lams, gap_type=gap_types)
def test_finite_offset_dec_finishes_at_defaults(seed, shape, gaussian, lam, gap_type):
    model, f = _finite(seed, shape, gaussian)
    _assert_finished(e2d.finite_offset_dec(model, f, lam, gap_type=gap_type))
