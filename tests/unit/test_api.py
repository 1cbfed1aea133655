"""One public API: a curated surface, one meaning per name, both model families in one
language (every builder vmaps over its array arguments, every agent takes traced
hyperparameters, the DEC functions take a model or arrays), clear messages for common
mistakes, and a rollout compiled once per configuration."""
import functools
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import e2d_jax as e2d
from e2d_jax.agents import e2d_finite as finite_agents
from e2d_jax.agents import e2d_linear as linear_agents
from e2d_jax.dec import finite as dec_finite
from e2d_jax.dec import linear as dec_linear
from e2d_jax.envs import finite, linear
from e2d_jax.paper import presets
from e2d_jax.sim import simulate as sim_module
from e2d_jax.types import WarmStart

KEYS = e2d.instance_keys([0, 1, 2])

BUILDERS = {
    "semi_bandit": lambda k: e2d.semi_bandit(k, 3, 5, dtype=jnp.float32),
    "linear_bandit": lambda k: e2d.linear_bandit(k, 3, 5, dtype=jnp.float32),
    "multi_armed_bandit": lambda k: e2d.multi_armed_bandit(k, 4, dtype=jnp.float32),
    "multi_armed_bandit_class": lambda k: finite.multi_armed_bandit_class(k, 3, 6, dtype=jnp.float32),
    "revealing_class": lambda k: e2d.revealing_class(k, 4, 6, gain=2.0, dtype=jnp.float32),
    "bernoulli_bandit_class": lambda k: finite.bernoulli_bandit_class(k, 3, 6, dtype=jnp.float32),
}


def test_the_public_surface_is_curated():
    assert len(e2d.__all__) <= 40
    assert len(set(e2d.__all__)) == len(e2d.__all__)
    for name in e2d.__all__:
        assert hasattr(e2d, name), name
    # No compatibility shims and no module names at the top that also name a layer's module.
    for gone in ("seed_keys", "linear", "finite", "ewa", "ridge", "PAPER_BUDGET", "AGENT_SOLVER", "mean_ci95"):
        assert gone not in e2d.__all__
    assert "batch_size" not in inspect.signature(e2d.simulate).parameters
    assert isinstance(e2d.__version__, str) and e2d.__version__.count(".") == 2


def test_status_codes_are_a_named_enum_with_messages():
    assert [s.name for s in e2d.Status] == ["OK", "MAX_ITER", "NONFINITE", "INVALID_ACTION"]
    assert int(e2d.Status.MAX_ITER) == 1 and e2d.Status(2) is e2d.Status.NONFINITE
    for status in e2d.Status:
        assert len(status.message) > 20
    assert e2d.Status.describe(np.int32(1)).startswith("max_iter: the iteration budget")
    res = e2d.finite_acdec(np.array([[0.0, 0.5], [0.4, 0.0]]), np.array([[0.0, 0.3], [0.0, 0.2]]), 0.1)
    text = repr(res)
    assert "status=OK" in text or "status=MAX_ITER" in text
    assert "Array(" not in text


def test_one_name_per_meaning():
    # The gap *type* (a string option) and gap *matrices* (arrays) are named apart.
    for fn in (linear_agents.anytime_e2d, linear_agents.fixed_horizon_e2d, finite_agents.anytime_e2d,
               finite_agents.fixed_horizon_e2d, e2d.linear_acdec, e2d.linear_offset_dec, e2d.acdec_curve,
               e2d.finite_acdec, e2d.finite_offset_dec):
        params = inspect.signature(fn).parameters
        assert "gaps" not in params
        assert params["gap_type"].default == "delta_f", fn
    # Every public function that takes a radius takes eps^2, named eps2.
    for fn in (e2d.acdec_curve, e2d.table1_bound):
        assert "eps2" in inspect.signature(fn).parameters and "eps" not in inspect.signature(fn).parameters
    # One tune_lambda: (horizon, model=None) -> float for both families.
    fin = finite.multi_armed_bandit_class(e2d.instance_key(0), 3, 5)
    lam_linear, lam_finite = e2d.tune_lambda(2000), e2d.tune_lambda(200, fin.model)
    assert lam_linear == pytest.approx(np.sqrt(2000 / (4 * np.log(2000))))
    assert isinstance(lam_linear, float) and isinstance(lam_finite, float) and lam_finite > 0
    # The default divergence is ||M(g - f)||^2 for the agents as for the DEC functions.
    for fn in (linear_agents.anytime_e2d, linear_agents.fixed_horizon_e2d):
        assert inspect.signature(fn).parameters["divergence"].default == "squared"


def test_every_dec_solve_returns_the_answer_and_its_carry():
    """Every traceable ``solve_*`` of ``e2d_jax.dec`` returns ``(DecResult, carry)``; the
    carry is what the next call of the same function takes (traced only, nothing compiled)."""
    lin = e2d.semi_bandit(e2d.instance_key(0), 3, 5, dtype=jnp.float32).model
    span, f_r = lin.span, jnp.zeros((lin.span.basis.shape[1],), jnp.float32)
    fin = finite.multi_armed_bandit_class(e2d.instance_key(0), 3, 5, dtype=jnp.float32)
    gaps, info = dec_finite.matrices(fin.model, 0)
    k, m = gaps.shape
    memory = dec_finite.empty_memory(k, m, dec_finite.S.SOLVERS["lambda-search"])
    eps2, lam = jnp.float32(0.1), jnp.float32(1.0)
    calls = {
        "linear.solve_acdec": (lambda w: dec_linear.solve_acdec(span, f_r, eps2, warm=w), None),
        "linear.solve_offset": (lambda w: dec_linear.solve_offset(span, f_r, lam, warm=w), None),
        "finite.solve_acdec": (lambda w: dec_finite.solve_acdec(gaps, info, eps2, warm=w), None),
        "finite.solve_offset": (lambda w: dec_finite.solve_offset(gaps, info, lam, warm=w), None),
        "finite.solve_acdec_memory": (lambda c: dec_finite.solve_acdec_memory(gaps, info, eps2, c), memory),
        "finite.solve_acdec_tracking": (lambda c: dec_finite.solve_acdec_tracking(gaps, info, eps2, c), lam),
    }
    public = {f"{mod.__name__.rsplit('.', 1)[1]}.{name}" for mod in (dec_linear, dec_finite)
              for name in dir(mod) if name.startswith("solve_") and inspect.isfunction(getattr(mod, name))}
    assert public == set(calls)
    for name, (call, carry) in calls.items():
        first = jax.eval_shape(call, carry)
        assert isinstance(first, tuple) and len(first) == 2, name
        result, carry_out = first
        assert isinstance(result, e2d.DecResult), name
        if carry is None:  # a warm start: the one of the next solve has the shapes of a cold one
            assert isinstance(carry_out, WarmStart), name
            assert jax.eval_shape(call, carry_out)[1] == carry_out, name
        else:
            assert jax.tree_util.tree_structure(carry_out) == jax.tree_util.tree_structure(carry), name


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_every_builder_vmaps_over_keys(name):
    build = BUILDERS[name]
    batch = jax.vmap(build)(KEYS)
    for i in range(3):
        one = build(KEYS[i])
        for a, b in zip(jax.tree_util.tree_leaves(batch), jax.tree_util.tree_leaves(one)):
            np.testing.assert_allclose(np.asarray(a)[i], np.asarray(b), rtol=1e-6, atol=1e-6)
    means = np.asarray(jax.vmap(lambda p: linear.mean_rewards(p) if hasattr(p, "theta")
                                else finite.mean_rewards(p))(batch))
    assert not np.allclose(means[0], means[1])


def test_array_builders_vmap_over_every_array_argument():
    feats = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    obs = feats[:, None, :]
    thetas = jnp.array([[0.3, 0.1], [-0.2, 0.5], [0.9, 0.0]])
    batch = jax.vmap(lambda th: e2d.linear_side_observation(feats, obs, th, rank=2))(thetas)
    for i in range(3):
        one = e2d.linear_side_observation(feats, obs, np.asarray(thetas[i]))
        np.testing.assert_allclose(batch.theta[i], one.theta)
        np.testing.assert_allclose(batch.model.span.features[i], one.model.span.features, atol=1e-12)
    scaled = jax.vmap(lambda s: e2d.linear_side_observation(feats * s, obs * s, thetas[0], rank=2))(jnp.array([1.0, 2.0]))
    np.testing.assert_allclose(linear.mean_rewards(jax.tree_util.tree_map(lambda x: x[1], scaled)),
                               2 * feats @ np.asarray(thetas[0]))
    rewards = jnp.array([[[0.1, 0.5], [0.4, 0.2]], [[0.3, 0.3], [0.0, 0.9]]])
    classes = jax.vmap(lambda r: e2d.finite_class(r, e2d.GaussianObs(r[:, :, None], 1.0)))(rewards)
    np.testing.assert_allclose(classes.true_rewards, rewards[:, 0])


# Each agent with its numeric hyperparameters as a traced grid (two cells).
LINEAR_GRIDS = {
    "anytime_e2d": (e2d.anytime_e2d, {"eps2_scale": [0.3, 1.0], "reg": [1.0, 2.0]}),
    "fixed_horizon_e2d": (lambda **h: e2d.fixed_horizon_e2d(horizon=100, **h), {"lam_scale": [0.5, 2.0]}),
    "fixed_horizon_e2d(lam)": (e2d.fixed_horizon_e2d, {"lam": [1.0, 3.0]}),
    "ucb": (e2d.ucb, {"delta": [0.01, 0.1], "radius": [1.0, 2.0], "reg": [1.0, 0.5]}),
    "ucb(anytime)": (lambda **h: e2d.ucb(delta="anytime", **h), {"radius": [1.0, 2.0], "reg": [1.0, 0.5]}),
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


def _close_per_cell(sim, factory, hparams, params):
    """The vmapped grid gives the last cell's per-seed results as running that cell alone."""
    c = len(next(iter(hparams.values()))) - 1
    alone = e2d.simulate(params, factory(**{k: v[c] for k, v in hparams.items()}), horizon=12, num_seeds=3,
                         record_every=4)
    np.testing.assert_array_equal(sim.result.action_counts[c], alone.result.action_counts)
    np.testing.assert_allclose(sim.result.regret[c], alone.result.regret, rtol=1e-5)


#: One instance per family for the grid runs below (the same shapes and agents, so the tests of
#: this file share each compiled rollout).
GRID_PARAMS = {
    "linear": lambda: e2d.semi_bandit(e2d.instance_key(0), 3, 5, dtype=jnp.float32),
    "finite": lambda: e2d.revealing_class(e2d.instance_key(0), 4, 6, gain=2.0, dtype=jnp.float32),
}


@functools.cache
def _grid_run(family, name):
    """``name``'s agent of ``family`` with its grid of traced hyperparameters: 12 rounds, 3 seeds."""
    factory, hp = (LINEAR_GRIDS if family == "linear" else FINITE_GRIDS)[name]
    params = GRID_PARAMS[family]()
    return params, e2d.simulate(params, factory, horizon=12, num_seeds=3, record_every=4, hparams=hp)


@pytest.mark.parametrize("name", sorted(LINEAR_GRIDS))
def test_linear_agents_take_traced_hyperparameters(name):
    factory, hp = LINEAR_GRIDS[name]
    params, sim = _grid_run("linear", name)
    assert sim.result.regret.shape == (2, 3, 3)
    assert np.all(np.asarray(sim.result.invalid_rounds) == 0)
    if name in COMPARE_ALONE:
        _close_per_cell(sim, factory, hp, params)


@pytest.mark.parametrize("name", sorted(FINITE_GRIDS))
def test_finite_agents_take_traced_hyperparameters(name):
    factory, hp = FINITE_GRIDS[name]
    params, sim = _grid_run("finite", name)
    assert sim.result.regret.shape == (2, 3, 3)
    assert np.all(np.asarray(sim.result.invalid_rounds) == 0)
    if name in COMPARE_ALONE - {"anytime_e2d"}:  # the finite global search compiles slowly
        _close_per_cell(sim, factory, hp, params)


def test_eps2_scale_reaches_the_agent():
    """An agent built with c = 0.3 has 0.3 times the eps_t^2 of c = 1, in its info."""
    _, sim = _grid_run("linear", "anytime_e2d")  # eps2_scale in [0.3, 1.0]
    eps2 = np.asarray(sim.result.info.eps2)  # (cells, seeds, rounds 4, 8 and 12)
    np.testing.assert_allclose(eps2[1, 0], [3 / 4, 3 / 8, 3 / 12], rtol=1e-6)  # d / t
    np.testing.assert_allclose(eps2[0], 0.3 * eps2[1], rtol=1e-6)


def test_same_names_and_defaults_on_both_families():
    """``e2d.anytime_e2d`` runs on both families with the same names: the same info type and
    eps_t^2 = c beta / t with the family's beta (d for linear models, log|M| for classes)."""
    agent = e2d.anytime_e2d(eps2_scale=0.5)  # one object, either family
    for family, beta in (("linear", 3), ("finite", np.log(6))):
        params, sim = _grid_run(family, "anytime_e2d")  # eps2_scale in [0.3, 1.0] on both
        assert isinstance(sim.result.info, e2d.E2DInfo)
        np.testing.assert_allclose(sim.result.info.eps2[:, 0, 0], [0.3 * beta / 4, beta / 4], rtol=1e-6)
        state = jax.eval_shape(agent.init, jax.random.key(0), params.model)
        _, _, info = jax.eval_shape(agent.act, jax.random.key(1), state, params.model)
        assert isinstance(info, e2d.E2DInfo)


def test_dec_functions_take_a_model_or_arrays():
    params = e2d.semi_bandit(e2d.instance_key(3), 3, 6)
    model, f_hat = params.model, np.array([0.2, -0.1, 0.4])
    a = e2d.linear_acdec(model, f_hat, 0.1)
    b = e2d.linear_acdec(model.features, model.grams, f_hat, 0.1)
    np.testing.assert_allclose(a.value, b.value, rtol=1e-9)
    np.testing.assert_allclose(a.mu, b.mu, atol=1e-9)
    c = e2d.linear_offset_dec(model, f_hat, 2.0)
    d = e2d.linear_offset_dec(model.features, model.grams, f_hat, 2.0)
    np.testing.assert_allclose(c.value, d.value, rtol=1e-9)
    fin = finite.multi_armed_bandit_class(e2d.instance_key(0), 3, 5).model
    g, i = finite.gap_matrix_f(fin.rewards, fin.rewards[2]), finite.info_matrix(fin, finite.model_at(fin, 2)[1])
    np.testing.assert_allclose(e2d.finite_acdec(fin, 2, 0.05).value, e2d.finite_acdec(g, i, 0.05).value, rtol=1e-12)
    np.testing.assert_allclose(e2d.finite_offset_dec(fin, 2, 3.0).value, e2d.finite_offset_dec(g, i, 3.0).value,
                               rtol=1e-12)
    g_delta = finite.gap_matrix(fin.rewards)
    np.testing.assert_allclose(e2d.finite_acdec(fin, 2, 0.05, gap_type="delta").value,
                               e2d.finite_acdec(g_delta, i, 0.05).value, rtol=1e-12)
    with pytest.raises(ValueError, match="takes \\(model, f_hat, eps2\\)"):
        e2d.linear_acdec(model.features, f_hat, 0.1)
    with pytest.raises(ValueError, match="f must be an index"):
        e2d.finite_acdec(fin, 7, 0.05)


def test_the_curve_works_for_linear_and_finite_models():
    lin = e2d.semi_bandit(e2d.instance_key(1), 3, 5).model
    eps2 = np.array([0.01, 0.1])
    curve = e2d.acdec_curve(lin, eps2)
    assert curve.per_model.shape == (2, 5)  # the K feature vectors as references
    assert np.all(curve.lower <= curve.value + 1e-9)
    # Each reference's value is linear_acdec's at that f.
    one = e2d.linear_acdec(lin, lin.features[curve.argmax[1]], 0.1, maxiter=20_000, rtol=1e-6, check_every=50)
    np.testing.assert_allclose(curve.value[1], one.value, rtol=1e-5)
    np.testing.assert_allclose(curve.eps, np.sqrt(eps2))
    fin = finite.multi_armed_bandit_class(e2d.instance_key(0), 3, 5).model
    assert e2d.acdec_curve(fin, eps2).per_model.shape == (2, 5)
    bound = e2d.table1_bound("linear", eps2, d=3)
    np.testing.assert_allclose(bound, np.sqrt(eps2 * 3))


@pytest.mark.parametrize("call, needle", [
    (lambda: e2d.anytime_e2d(solver=finite_agents.AGENT_SOLVER, divergence="kl", estimate="mixture"),
     "no model family accepts"),
    (lambda: e2d.anytime_e2d(eps_scale=1.0), "takes no argument eps_scale \\(valid: .*eps2_scale"),
    (lambda: e2d.anytime_e2d(eps2_scale=-1.0), "eps2_scale"),
    (lambda: e2d.anytime_e2d(eps2_schedule=lambda t: 0.0 * t), "eps2_schedule"),
    (lambda: e2d.anytime_e2d(eps2_schedule="log|M|"), "eps2_schedule"),
    (lambda: e2d.fixed_horizon_e2d(), "horizon"),
    (lambda: finite_agents.anytime_e2d(solver=linear_agents.AGENT_SOLVER), "Saddle does not solve .* finite"),
    (lambda: linear_agents.anytime_e2d(solver="ipm"), "MatrixGameIPM does not solve .* linear"),
    (lambda: linear_agents.anytime_e2d(gap_type="delta", solver="saddle"), "gap_type='delta'.*convex only for Delta_f"),
    (lambda: linear_agents.anytime_e2d(solver="newton"), "solver must be one of"),
])
def test_factory_errors_say_what_was_expected(call, needle):
    with pytest.raises(ValueError, match=needle):
        call()


def test_family_mismatch_and_common_mistakes():
    lin = e2d.semi_bandit(e2d.instance_key(0), 3, 5, dtype=jnp.float32)
    fin = finite.bernoulli_bandit_class(e2d.instance_key(0), 3, 4, dtype=jnp.float32)
    run = lambda p, a, **kw: e2d.simulate(p, a, horizon=2, num_seeds=1, **kw)
    with pytest.raises(ValueError, match="cannot run on a linear model.*estimate"):
        run(lin, e2d.anytime_e2d(estimate="mixture"))
    with pytest.raises(ValueError, match="posterior_sampling runs on finite classes.*thompson_sampling"):
        run(lin, e2d.posterior_sampling())
    with pytest.raises(ValueError, match="linear view"):
        run(fin, e2d.ucb())
    with pytest.raises(ValueError, match="call it, e.g. ucb()"):
        run(lin, e2d.ucb)
    with pytest.raises(ValueError, match="env: the finite environment cannot run LinearEnvParams"):
        run(lin, e2d.ucb(), env=finite.ENVIRONMENT)
    with pytest.raises(ValueError, match="params must be an instance from a builder"):
        e2d.simulate(linear.ENVIRONMENT, e2d.ucb(), horizon=2, num_seeds=1)
    with pytest.raises(ValueError, match="params.model"):
        e2d.ucb().init(jax.random.key(0), lin)
    with pytest.raises(ValueError, match="hparams"):
        e2d.simulate(lin, e2d.ucb(), horizon=2, num_seeds=1, hparams={"delta": [0.1]})


def test_second_simulate_call_does_not_compile_again():
    params = e2d.semi_bandit(e2d.instance_key(0), 3, 5, dtype=jnp.float32)
    traces = []
    base = e2d.thompson_sampling()
    agent = e2d.Agent(init=lambda k, m: (traces.append(1), base.init(k, m))[1], act=base.act, update=base.update)
    first = e2d.simulate(params, agent, horizon=20, num_seeds=5, record_every=5)
    n = len(traces)
    second = e2d.simulate(params, agent, horizon=20, num_seeds=5, record_every=5)
    assert len(traces) == n, "the second call traced the rollout again"
    assert first.compile_seconds > 0 and second.compile_seconds == 0.0
    np.testing.assert_array_equal(first.result.regret, second.result.regret)
    # Other seeds, same shapes: still no new trace.
    e2d.simulate(params, agent, horizon=20, num_seeds=5, record_every=5, seed=7)
    assert len(traces) == n


def test_a_fresh_agent_of_the_same_configuration_reuses_the_compiled_rollout():
    params = e2d.semi_bandit(e2d.instance_key(0), 3, 5, dtype=jnp.float32)
    first = e2d.simulate(params, e2d.ucb(delta=0.05), horizon=15, num_seeds=3)
    size = sim_module.compiled_cache_size()
    again = e2d.simulate(params, e2d.ucb(delta=0.05), horizon=15, num_seeds=3)
    assert again.compile_seconds == 0.0 and sim_module.compiled_cache_size() == size
    np.testing.assert_array_equal(first.result.regret, again.result.regret)
    # Another number is the same program fed another input; another static option is another
    # program.
    other = e2d.simulate(params, e2d.ucb(delta=0.2), horizon=15, num_seeds=3)
    assert other.compile_seconds == 0.0 and sim_module.compiled_cache_size() == size
    assert not np.array_equal(other.result.info.status, np.full_like(other.result.info.status, 7))
    anytime = e2d.simulate(params, e2d.ucb(delta="anytime"), horizon=15, num_seeds=3)
    assert anytime.compile_seconds > 0 and sim_module.compiled_cache_size() == size + 1
    assert e2d.anytime_e2d(eps2_scale=0.5).config == e2d.anytime_e2d(eps2_scale=0.5).config
    assert e2d.anytime_e2d(eps2_scale=0.5).config != e2d.anytime_e2d(eps2_scale=0.25).config


def test_the_default_divergence_is_the_squared_norm_everywhere():
    """The library's default agent, ``e2d-jax run``'s and ``reproduce``'s (implementation
    conventions) are the same agent: the same numbers; the paper-text convention differs."""
    exp = presets.experiment("exp1")
    params = exp.params
    library = e2d.simulate(params, e2d.anytime_e2d(eps2_schedule="dim"), horizon=40, num_seeds=4)
    preset = e2d.simulate(params, exp.agents["anytime-e2d"], horizon=40, num_seeds=4)
    np.testing.assert_array_equal(library.result.regret, preset.result.regret)
    # The same resolved configuration: the preset runs the library agent's compiled rollout.
    assert preset.compile_seconds == 0.0
    kl = presets.experiment("exp1", conventions="paper-text").agents["anytime-e2d"]
    np.testing.assert_array_equal(
        e2d.simulate(params, kl, horizon=40, num_seeds=4).result.info.eps2,
        e2d.simulate(params, e2d.anytime_e2d(eps2_schedule="dim", divergence="kl"), horizon=40,
                     num_seeds=4).result.info.eps2)


def test_compiled_programs_are_dropped_near_the_kernels_mapping_cap():
    """Above the given share of ``vm.max_map_count`` the simulator drops its compiled programs
    (and JAX's), and the next simulation compiles again and gives the same bits; below it
    nothing is dropped."""
    from e2d_jax.sim import execute

    if execute._map_counts() is None:
        pytest.skip("needs Linux's /proc")
    params = e2d.semi_bandit(e2d.instance_key(0), 3, 5, dtype=jnp.float32)
    first = e2d.simulate(params, e2d.ucb(), horizon=10, num_seeds=2)
    assert not execute.release_if_near_map_limit(share=1.0) and sim_module.compiled_cache_size() > 0
    held = execute._map_counts()[0]
    assert execute.release_if_near_map_limit(share=0.0) and sim_module.compiled_cache_size() == 0
    assert execute._map_counts()[0] < held
    again = e2d.simulate(params, e2d.ucb(), horizon=10, num_seeds=2)
    assert again.compile_seconds > 0
    np.testing.assert_array_equal(first.result.regret, again.result.regret)
