"""Anytime-E2D and fixed-horizon E2D on linear models, and the conformance of every agent."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from e2d_jax.agents import e2d_linear
from e2d_jax.agents.e2d_linear import anytime_e2d, fixed_horizon_e2d
from e2d_jax.agents.e2d_linear import horizon_lambda as tune_lambda
from e2d_jax.agents.ts import thompson_sampling
from e2d_jax.agents.ucb import ucb
from e2d_jax.dec import linear as L
from e2d_jax.dec import solvers as S
from e2d_jax.envs import linear
from e2d_jax.sim.rollout import rollout, run_keys
from e2d_jax.sim.simulate import simulate
from xla_options import AS_USERS_FUSE

EXP1 = linear.semi_bandit(jax.random.key(0), 3, 10, dtype=jnp.float32)


@pytest.mark.slow
@pytest.mark.parametrize("make", [lambda: anytime_e2d(), lambda: fixed_horizon_e2d(horizon=2000)])
def test_1000_seeds_2000_rounds_all_finite(make):
    """Acceptance: vmapped over 1,000 seeds x 2,000 rounds of the Exp-1 semi-bandit (float32)."""
    sim = simulate(EXP1, make(), horizon=2000, num_seeds=1000, record_every=100)
    res = sim.result
    assert res.regret.shape == (1000, 20)
    assert int(res.invalid_rounds.sum()) == 0
    for leaf in jax.tree_util.tree_leaves(res):
        assert np.all(np.isfinite(np.asarray(leaf)))
    assert np.all(res.info.status != 2)
    # E2D learns: the regret of the last 100 rounds is well below that of the first 100.
    per_round = np.diff(np.concatenate([np.zeros((1000, 1)), res.regret], 1), axis=1).mean(0)
    assert per_round[-1] < 0.5 * per_round[0]


def test_agent_follows_the_dec_solution():
    """In the first round (f_hat = 0, eps_1^2 = d in the KL, 2 sigma^2 d = 2 d in the squared
    norm) the agent's mu is the DEC's solution."""
    params = linear.semi_bandit(jax.random.key(3), 3, 6, dtype=jnp.float64)
    agent = anytime_e2d(solver=S.Saddle(maxiter=4000, check_every=25, rtol=1e-6), divergence="kl")
    model = params.model
    state = agent.init(jax.random.key(0), model)
    _, state, info = jax.jit(agent.act)(jax.random.key(1), state, model)
    ref = L.linear_acdec(model.features, model.grams, jnp.zeros(3), 2 * 3.0, rtol=1e-6, maxiter=4000)
    np.testing.assert_allclose(float(info.value), float(ref.value), rtol=1e-5)
    # KL convention: lambda_KL = 2 sigma^2 lambda_squared.
    np.testing.assert_allclose(float(info.lam), 2 * float(ref.lam), rtol=1e-3)
    np.testing.assert_allclose(np.asarray(state.warm.mu), np.asarray(ref.mu), atol=2e-3)


def test_divergence_conversion():
    """KL with eps_t^2 equals the squared-norm convention with 2 sigma^2 eps_t^2, step by step."""
    params = linear.semi_bandit(jax.random.key(4), 3, 5, sigma=0.5, dtype=jnp.float64)
    kl = anytime_e2d(divergence="kl")
    sq = anytime_e2d(divergence="squared", eps2_schedule=lambda t: 2 * 0.25 * 3 / t)
    run = lambda a: jax.jit(lambda k: rollout(k, params, a, horizon=40, record_every=1),  # noqa: E731
                            compiler_options=AS_USERS_FUSE)(jax.random.key(0))
    a, b = run(kl), run(sq)
    np.testing.assert_array_equal(a.action_counts, b.action_counts)
    np.testing.assert_allclose(a.info.value, b.info.value, rtol=1e-10)
    np.testing.assert_allclose(a.info.lam, 2 * 0.25 * b.info.lam, rtol=1e-10)
    e2d_kl = fixed_horizon_e2d(lam=3.0, divergence="kl")
    e2d_sq = fixed_horizon_e2d(lam=3.0 / (2 * 0.25), divergence="squared")
    np.testing.assert_array_equal(run(e2d_kl).action_counts, run(e2d_sq).action_counts)


def test_tune_lambda():
    assert tune_lambda(2000) == pytest.approx(np.sqrt(2000 / (4 * np.log(2000))))
    with pytest.raises(ValueError, match="horizon"):
        tune_lambda(1)


def test_the_default_divergence_is_the_squared_norm():
    """Without an argument the agents use ||M(g - f)||^2: the same actions and values as
    ``divergence="squared"``, and lambda of E2D is the tuned one as is (no 2 sigma^2)."""
    params = linear.semi_bandit(jax.random.key(4), 3, 5, sigma=0.5, dtype=jnp.float64)
    a = simulate(params, anytime_e2d(), horizon=20, num_seeds=2)
    b = simulate(params, anytime_e2d(divergence="squared"), horizon=20, num_seeds=2)
    assert b.compile_seconds == 0.0  # one configuration: the first run's compiled rollout
    np.testing.assert_array_equal(a.result.regret, b.result.regret)
    run = lambda a: jax.jit(lambda k: rollout(k, params, a, horizon=20))(jax.random.key(0))
    e = run(fixed_horizon_e2d(horizon=100))
    np.testing.assert_allclose(e.info.lam, tune_lambda(100), rtol=1e-12)


@pytest.mark.parametrize("call, name", [
    (lambda: anytime_e2d(divergence="hellinger"), "divergence"),
    (lambda: anytime_e2d(gap_type="nope"), "gap_type"),
    (lambda: anytime_e2d(gap_type="delta", solver="tracking"), "solver"),
    (lambda: anytime_e2d(reg=0.0), "reg"),
    (lambda: anytime_e2d(solver="simplex"), "solver"),
    (lambda: anytime_e2d(solver=S.Saddle(maxiter=0)), "maxiter"),
    (lambda: fixed_horizon_e2d(), "horizon"),
    (lambda: fixed_horizon_e2d(lam=-1.0), "lam"),
])
def test_bad_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()


AGENTS = {
    "ucb": ucb,
    "ucb-anytime": lambda: ucb(delta="anytime"),
    "ts": thompson_sampling,
    "anytime-e2d": anytime_e2d,
    "e2d": lambda: fixed_horizon_e2d(horizon=50),
    "anytime-e2d-delta": lambda: anytime_e2d(gap_type="delta", solver=S.SaddleGrid(
        maxiter=20, check_every=20, lam_grid=8, lam_refine=4, lam_rounds=1)),
    "anytime-e2d-paper": lambda: anytime_e2d(solver=S.FrankWolfeGrid(
        maxiter=20, check_every=20, rtol=0.0, lam_grid=8, lam_refine=1, lam_rounds=0)),
}
ENVS = {
    "semi": lambda dt: linear.semi_bandit(jax.random.key(1), 3, 5, dtype=dt),
    "linear": lambda dt: linear.linear_bandit(jax.random.key(1), 4, 5, dtype=dt),
    "mab": lambda dt: linear.multi_armed_bandit(jax.random.key(1), 4, dtype=dt),
    "semi-d>K": lambda dt: linear.semi_bandit(jax.random.key(1), 8, 4, dtype=dt),
}


CONFORMANCE = [(a, e) for a in ("ucb", "ts", "anytime-e2d", "e2d") for e in sorted(ENVS)]
# The grid solvers compile a batched solve per lambda: one environment each keeps the run short.
CONFORMANCE += [("anytime-e2d-delta", "semi"), ("anytime-e2d-paper", "semi-d>K")]
CONFORMANCE += [("ucb-anytime", "semi"), ("ucb-anytime", "mab")]
#: The default run: each agent on two environments, each environment under at least two
#: agents; the rest of the grid runs under -m slow.
CONFORMANCE_DEFAULT = {("ucb", "mab"), ("ucb", "semi-d>K"), ("ts", "linear"), ("ts", "semi"),
                       ("anytime-e2d", "semi"), ("anytime-e2d", "semi-d>K"), ("e2d", "linear"), ("e2d", "mab"),
                       ("anytime-e2d-delta", "semi"), ("anytime-e2d-paper", "semi-d>K"),
                       ("ucb-anytime", "semi"), ("ucb-anytime", "mab")}


@pytest.mark.parametrize("agent_name, env_name", [
    pytest.param(*case, marks=() if case in CONFORMANCE_DEFAULT else pytest.mark.slow) for case in CONFORMANCE])
def test_conformance(agent_name, env_name):
    """jit + vmap over seeds, stable shapes and dtypes, deterministic, finite."""
    params = ENVS[env_name](jnp.float32)
    agent = AGENTS[agent_name]()
    run = jax.jit(jax.vmap(lambda k: rollout(k, params, agent, horizon=30, record_every=10)))
    keys = run_keys(0, np.arange(3))
    a, b = run(keys), run(keys)
    assert a.regret.shape == (3, 3) and a.regret.dtype == jnp.float32
    assert a.action_counts.dtype == jnp.int32 and a.action_counts.sum() == 90
    assert int(a.invalid_rounds.sum()) == 0
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_array_equal(x, y)
    # Shapes and dtypes only: traced, not run.
    state = jax.eval_shape(agent.init, jax.random.key(0), params.model)
    _, new_state, _ = jax.eval_shape(agent.act, jax.random.key(1), state, params.model)
    for x, y in zip(jax.tree_util.tree_leaves(state), jax.tree_util.tree_leaves(new_state)):
        assert x.shape == y.shape and x.dtype == y.dtype


def test_the_default_solver_follows_the_gap_type():
    assert anytime_e2d().config.static == anytime_e2d(solver=e2d_linear.AGENT_SOLVER).config.static
    delta = dict(anytime_e2d(gap_type="delta").config.static)
    assert delta["solver"] == e2d_linear.AGENT_SOLVER_DELTA
