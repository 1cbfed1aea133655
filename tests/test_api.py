"""One language for both model families: every builder vmaps over keys, every agent takes
traced hyperparameters (a vmapped grid), the same agent names run on both families with clear
messages for common mistakes, and a repeated simulation does not compile again."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import e2d_jax as e2d
from e2d_jax.agents import finite as finite_agents

KEYS = e2d.instance_keys([0, 1, 2])

BUILDERS = {
    "semi_bandit": lambda k: e2d.semi_bandit(k, 3, 5, dtype=jnp.float32),
    "linear_bandit": lambda k: e2d.linear_bandit(k, 3, 5, dtype=jnp.float32),
    "multi_armed_bandit": lambda k: e2d.multi_armed_bandit(k, 4, dtype=jnp.float32),
    "multi_armed_bandit_class": lambda k: e2d.multi_armed_bandit_class(k, 3, 6, dtype=jnp.float32),
    "revealing_class": lambda k: e2d.revealing_class(k, 4, 6, gain=2.0, dtype=jnp.float32),
    "bernoulli_bandit_class": lambda k: e2d.bernoulli_bandit_class(k, 3, 6, dtype=jnp.float32),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_every_builder_vmaps_over_keys(name):
    build = BUILDERS[name]
    batch = jax.vmap(build)(KEYS)
    for i in range(3):
        one = build(KEYS[i])
        for a, b in zip(jax.tree_util.tree_leaves(batch), jax.tree_util.tree_leaves(one)):
            np.testing.assert_allclose(np.asarray(a)[i], np.asarray(b), rtol=1e-6, atol=1e-6)
    # Instances differ between keys.
    means = np.asarray(jax.vmap(lambda p: e2d.linear.mean_rewards(p) if hasattr(p, "theta")
                                else e2d.finite.mean_rewards(p))(batch))
    assert not np.allclose(means[0], means[1])


# Each agent with its numeric hyperparameters as a traced grid (two cells).
LINEAR_GRIDS = {
    "anytime_e2d": (e2d.anytime_e2d, {"eps2_scale": [0.3, 1.0], "reg": [1.0, 2.0]}),
    "fixed_horizon_e2d": (lambda **h: e2d.fixed_horizon_e2d(horizon=100, **h), {"lam_scale": [0.5, 2.0]}),
    "fixed_horizon_e2d(lam)": (e2d.fixed_horizon_e2d, {"lam": [1.0, 3.0]}),
    "ucb": (e2d.ucb, {"delta": [0.01, 0.1], "radius": [1.0, 2.0], "reg": [1.0, 0.5]}),
    "thompson_sampling": (e2d.thompson_sampling, {"scale": [0.5, 1.0], "reg": [1.0, 2.0]}),
}
FINITE_GRIDS = {
    "anytime_e2d": (e2d.anytime_e2d, {"eps2_scale": [0.3, 1.0], "eta": [1.0, 0.5]}),
    "fixed_horizon_e2d(lam)": (e2d.fixed_horizon_e2d, {"lam": [1.0, 3.0], "lam_scale": [1.0, 2.0]}),
    "posterior_sampling": (e2d.posterior_sampling, {"eta": [1.0, 0.5]}),
    "ucb": (e2d.ucb, {"delta": [0.01, 0.1]}),
}


# The agents whose grid is also compared with its last cell run alone (one more compile each;
# the others share those code paths and are checked for shapes and finiteness).
COMPARE_ALONE = {"anytime_e2d", "fixed_horizon_e2d(lam)"}


def _close_per_cell(sim, factory, hparams, env, params):
    """The vmapped grid gives the last cell's per-seed results as running that cell alone (one
    cell keeps the test short; tests/test_experiments.py compares every cell of a sweep)."""
    for c in range(len(next(iter(hparams.values()))))[-1:]:
        alone = e2d.simulate(env, params, factory(**{k: v[c] for k, v in hparams.items()}), horizon=12,
                             num_seeds=3, record_every=4)
        np.testing.assert_array_equal(sim.result.action_counts[c], alone.result.action_counts)
        np.testing.assert_allclose(sim.result.regret[c], alone.result.regret, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(LINEAR_GRIDS))
def test_linear_agents_take_traced_hyperparameters(name):
    factory, hp = LINEAR_GRIDS[name]
    params = e2d.semi_bandit(e2d.instance_key(0), 3, 5, dtype=jnp.float32)
    sim = e2d.simulate(e2d.linear.ENVIRONMENT, params, factory, horizon=12, num_seeds=3, record_every=4, hparams=hp)
    assert sim.result.regret.shape == (2, 3, 3)
    assert np.all(np.asarray(sim.result.nonfinite_rounds) == 0)
    if name in COMPARE_ALONE:
        _close_per_cell(sim, factory, hp, e2d.linear.ENVIRONMENT, params)


@pytest.mark.parametrize("name", sorted(FINITE_GRIDS))
def test_finite_agents_take_traced_hyperparameters(name):
    factory, hp = FINITE_GRIDS[name]
    params = e2d.revealing_class(e2d.instance_key(0), 4, 6, gain=2.0, dtype=jnp.float32)
    sim = e2d.simulate(e2d.finite.ENVIRONMENT, params, factory, horizon=12, num_seeds=3, record_every=4, hparams=hp)
    assert sim.result.regret.shape == (2, 3, 3)
    assert np.all(np.asarray(sim.result.nonfinite_rounds) == 0)
    if name in COMPARE_ALONE - {"anytime_e2d"}:  # the finite global search compiles slowly
        _close_per_cell(sim, factory, hp, e2d.finite.ENVIRONMENT, params)


def test_eps2_scale_reaches_the_agent():
    """An agent built with c = 0.1 has one tenth the eps_t^2 of c = 1, in its info."""
    params = e2d.semi_bandit(e2d.instance_key(0), 3, 5, dtype=jnp.float32)
    sim = e2d.simulate(e2d.linear.ENVIRONMENT, params, e2d.anytime_e2d, horizon=6, num_seeds=2, record_every=3,
                       hparams={"eps2_scale": [0.1, 1.0]})
    eps2 = np.asarray(sim.result.info.eps2)  # (cells, seeds, rounds 3 and 6)
    np.testing.assert_allclose(eps2[1, 0], [3 / 3, 3 / 6], rtol=1e-6)  # d / t
    np.testing.assert_allclose(eps2[0], 0.1 * eps2[1], rtol=1e-6)


def test_same_names_and_defaults_on_both_families():
    lin = e2d.semi_bandit(e2d.instance_key(0), 3, 5, dtype=jnp.float32)
    fin = e2d.revealing_class(e2d.instance_key(0), 4, 6, dtype=jnp.float32)
    agent = e2d.anytime_e2d(eps2_scale=0.5)
    for env, params, eps2_1 in ((e2d.linear.ENVIRONMENT, lin, 0.5 * 3), (e2d.finite.ENVIRONMENT, fin, 0.5 * np.log(6))):
        sim = e2d.simulate(env, params, agent, horizon=2, num_seeds=1, record_every=1)
        assert isinstance(sim.result.info, e2d.E2DInfo)
        np.testing.assert_allclose(sim.result.info.eps2[0, 0], eps2_1, rtol=1e-6)
    # Delta_f is the default gap in both families (Python and CLI alike).
    import inspect

    from e2d_jax.agents import e2d as linear_agents
    for fn in (linear_agents.anytime_e2d, linear_agents.fixed_horizon_e2d, finite_agents.anytime_e2d,
               finite_agents.fixed_horizon_e2d):
        assert inspect.signature(fn).parameters["gaps"].default == "delta_f"
    assert e2d.tune_lambda(2000) == pytest.approx(np.sqrt(2000 / (4 * np.log(2000))))


@pytest.mark.parametrize("call, needle", [
    (lambda: e2d.anytime_e2d(solver=e2d.FINITE_AGENT_SOLVER, divergence="kl", estimate="mixture"),
     "no model family accepts"),
    (lambda: e2d.anytime_e2d(eps2_scale=-1.0), "eps2_scale"),
    (lambda: e2d.anytime_e2d(eps2_schedule=lambda t: 0.0 * t), "eps2_schedule"),
    (lambda: e2d.anytime_e2d(eps2_schedule="log|M|"), "eps2_schedule"),
    (lambda: e2d.fixed_horizon_e2d(), "horizon"),
    (lambda: finite_agents.anytime_e2d(solver=e2d.AGENT_SOLVER), "FiniteSolverConfig"),
    (lambda: e2d.agents.e2d.anytime_e2d(solver=e2d.FINITE_AGENT_SOLVER), "LinearSolverConfig"),
])
def test_factory_errors_say_what_was_expected(call, needle):
    with pytest.raises(ValueError, match=needle):
        call()


def test_family_mismatch_and_common_mistakes():
    lin = e2d.semi_bandit(e2d.instance_key(0), 3, 5, dtype=jnp.float32)
    fin = e2d.bernoulli_bandit_class(e2d.instance_key(0), 3, 4, dtype=jnp.float32)
    run = lambda env, p, a: e2d.simulate(env, p, a, horizon=2, num_seeds=1)
    with pytest.raises(ValueError, match="cannot run on a linear model.*estimate"):
        run(e2d.linear.ENVIRONMENT, lin, e2d.anytime_e2d(estimate="mixture"))
    with pytest.raises(ValueError, match="finite classes"):
        run(e2d.linear.ENVIRONMENT, lin, e2d.posterior_sampling())
    with pytest.raises(ValueError, match="linear view"):
        run(e2d.finite.ENVIRONMENT, fin, e2d.ucb())
    with pytest.raises(ValueError, match="call it, e.g. ucb()"):
        run(e2d.linear.ENVIRONMENT, lin, e2d.ucb)
    with pytest.raises(ValueError, match="swapped"):
        e2d.simulate(lin, e2d.linear.ENVIRONMENT, e2d.ucb(), horizon=2, num_seeds=1)
    with pytest.raises(ValueError, match="env.model"):
        e2d.ucb().init(jax.random.key(0), lin)
    with pytest.raises(ValueError, match="hparams"):
        e2d.simulate(e2d.linear.ENVIRONMENT, lin, e2d.ucb(), horizon=2, num_seeds=1, hparams={"delta": [0.1]})


def test_second_simulate_call_does_not_compile_again():
    params = e2d.semi_bandit(e2d.instance_key(0), 3, 5, dtype=jnp.float32)
    traces = []
    base = e2d.thompson_sampling()
    agent = e2d.Agent(init=lambda k, m: (traces.append(1), base.init(k, m))[1], act=base.act, update=base.update)
    first = e2d.simulate(e2d.linear.ENVIRONMENT, params, agent, horizon=20, num_seeds=5, record_every=5)
    second = e2d.simulate(e2d.linear.ENVIRONMENT, params, agent, horizon=20, num_seeds=5, record_every=5)
    assert len(traces) == 1, "the second call traced the rollout again"
    assert first.compile_seconds > 0 and second.compile_seconds == 0.0
    np.testing.assert_array_equal(first.result.regret, second.result.regret)
    # Other seeds, same shapes: still no new trace.
    e2d.simulate(e2d.linear.ENVIRONMENT, params, agent, horizon=20, num_seeds=5, record_every=5, seed=7)
    assert len(traces) == 1
