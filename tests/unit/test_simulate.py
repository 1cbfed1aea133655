import subprocess
import sys
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import procs

from e2d_jax import _linalg
from e2d_jax.agents.e2d import anytime_e2d
from e2d_jax.agents.ts import thompson_sampling
from e2d_jax.agents.ucb import ucb
from e2d_jax.envs import linear
from e2d_jax.estimators import logistic
from e2d_jax.sim.rollout import KEY_BLOCK, instance_key, record_rounds, rollout, run_keys
from e2d_jax.sim import execute
from e2d_jax.sim.execute import lapack_blocks_threads
from e2d_jax.sim.layout import ACCELERATOR_CALL_BYTES, ACCELERATOR_LANES, CPU_LANES, lanes_for, layout
from e2d_jax.sim.program import lane_bytes, program_of
from e2d_jax.sim.simulate import simulate
from e2d_jax.sim.summaries import instance_summary, solver_summary, valid_seeds
from e2d_jax.types import Agent, Status

PARAMS = linear.semi_bandit(jax.random.key(0), 3, 6, dtype=jnp.float32)


def _tree_equal(a, b):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    return len(la) == len(lb) and all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(la, lb))


@pytest.mark.parametrize("make", [ucb, thompson_sampling])
def test_vmapped_64_equals_stacked_single_runs(make):
    agent = make()
    keys = run_keys(3, np.arange(64))
    single = jax.jit(lambda k: rollout(k, PARAMS, agent, horizon=60, record_every=7))
    stacked = [single(keys[i]) for i in range(64)]
    stacked = jax.tree_util.tree_map(lambda *x: np.stack(x), *stacked)
    sim = simulate(PARAMS, agent, horizon=60, num_seeds=64, seed=3, record_every=7)
    assert _tree_equal(sim.result, stacked)


def test_batching_does_not_change_any_seed():
    agent = thompson_sampling()
    a = simulate(PARAMS, agent, horizon=30, num_seeds=10, seed=1, lanes=10)
    b = simulate(PARAMS, agent, horizon=30, num_seeds=10, seed=1, lanes=10, devices=jax.devices()[:1])
    assert _tree_equal(a.result, b.result)
    c = simulate(PARAMS, agent, horizon=30, num_seeds=3, seed=1, first_seed=7)
    assert _tree_equal(c.result, jax.tree_util.tree_map(lambda x: x[7:], a.result))


def test_record_every_and_shapes():
    agent = ucb()
    full = simulate(PARAMS, agent, horizon=25, num_seeds=2, record_every=1)
    sparse = simulate(PARAMS, agent, horizon=25, num_seeds=2, record_every=10)
    np.testing.assert_array_equal(sparse.rounds, [10, 20, 25])
    np.testing.assert_array_equal(record_rounds(20, 10), [10, 20])
    np.testing.assert_allclose(sparse.result.regret, full.result.regret[:, [9, 19, 24]], rtol=1e-6)
    assert sparse.result.action_counts.sum(1).tolist() == [25, 25]
    assert sparse.result.info.status.shape == (2, 3)
    assert sparse.result.regret.dtype == np.float32


@pytest.mark.parametrize("every", [KEY_BLOCK - 1, KEY_BLOCK, KEY_BLOCK + 1, 2 * KEY_BLOCK + 5, 100])
def test_long_record_blocks_play_the_same_rounds(every):
    # A block longer than KEY_BLOCK runs in chunks (keys derived per chunk): the same rounds,
    # bit for bit, as recording every round.
    agent = thompson_sampling()
    key = run_keys(5, [0])[0]
    full = jax.jit(lambda k: rollout(k, PARAMS, agent, horizon=100, record_every=1))(key)
    sparse = jax.jit(lambda k: rollout(k, PARAMS, agent, horizon=100, record_every=every))(key)
    rounds = record_rounds(100, every) - 1
    assert _tree_equal(sparse.regret, full.regret[rounds])
    assert _tree_equal(sparse.info, jax.tree_util.tree_map(lambda x: x[rounds], full.info))
    assert _tree_equal(sparse.action_counts, full.action_counts)
    assert _tree_equal(sparse.solver, full.solver)


def test_vmap_over_instances():
    keys = jax.random.split(jax.random.key(9), 3)
    batch = jax.vmap(lambda k: linear.semi_bandit(k, 3, 5, dtype=jnp.float32))(keys)
    agent = ucb()
    run = jax.jit(jax.vmap(lambda p: rollout(jax.random.key(0), p, agent, horizon=20, record_every=5)))
    res = run(batch)
    one = jax.jit(lambda p: rollout(jax.random.key(0), p, agent, horizon=20, record_every=5))(
        jax.tree_util.tree_map(lambda x: x[1], batch))
    np.testing.assert_allclose(res.regret[1], one.regret, rtol=1e-6)


@pytest.mark.parametrize("kwargs, name", [
    (dict(horizon=0, num_seeds=1), "horizon"),
    (dict(horizon=-3, num_seeds=1), "horizon"),
    (dict(horizon=5, num_seeds=0), "num_seeds"),
    (dict(horizon=5, num_seeds=1, record_every=0), "record_every"),
    (dict(horizon=5, num_seeds=2, lanes=0), "lanes"),
])
def test_bad_simulation_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        simulate(PARAMS, ucb(), **kwargs)


def test_nonfinite_seed_is_counted_not_spread():
    """A seed whose estimate becomes NaN is flagged; other seeds are untouched."""
    agent = ucb()
    bad = PARAMS._replace(theta=PARAMS.theta.at[0].set(jnp.nan))
    res = jax.jit(jax.vmap(lambda k, p: rollout(k, p, agent, horizon=10, record_every=5), in_axes=(0, 0)))(
        run_keys(0, np.arange(3)),
        jax.tree_util.tree_map(lambda g, b: jnp.stack([g, b, g]), PARAMS, bad),
    )
    assert res.invalid_rounds.tolist()[0] == 0 and res.invalid_rounds.tolist()[2] == 0
    assert res.invalid_rounds.tolist()[1] > 0
    good = jax.jit(lambda k: rollout(k, PARAMS, agent, horizon=10, record_every=5))(run_keys(0, [2])[0])
    np.testing.assert_array_equal(res.regret[2], good.regret)


@pytest.mark.slow  # two fresh processes; test_cli.py pads 1 seed over 4 host devices in the default run
def test_padding_larger_than_num_seeds_on_many_devices(tmp_path):
    """Regression: at 2 lanes a call of 1 seed is padded to 2 (more padding than seeds), and 5
    seeds on 4 devices fill 3 of them, padded to 6; the results equal the single-device ones
    (splitting over devices does not change any seed)."""
    code = (
        "import jax, numpy as np, sys\n"
        "import e2d_jax as e\n"
        "p = e.semi_bandit(e.instance_key(0), 3, 6)\n"
        "for n in (1, 5):\n"
        "    s = e.simulate(p, e.thompson_sampling(), horizon=12, num_seeds=n, record_every=4, lanes=2)\n"
        "    np.save(sys.argv[1] + f'_{n}.npy', s.result.regret)\n"
        "print(len(jax.devices()))\n"
    )
    outs = {}
    for n_dev in (1, 4):
        env = procs.cli_env()  # the run's other XLA flags (its optimisation level) kept
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={n_dev}".strip()
        prefix = str(tmp_path / f"d{n_dev}")
        proc = subprocess.run([sys.executable, "-c", code, prefix], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == str(n_dev)
        outs[n_dev] = [np.load(f"{prefix}_{n}.npy") for n in (1, 5)]
    for a, b in zip(outs[1], outs[4]):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_host_devices_compile_once(tmp_path):
    """On 4 host devices a program compiles one executable, which every device's calls run
    (on the first device), and the calls spread over the 4 devices give every seed the bits
    of one device."""
    code = (
        "import jax, numpy as np\n"
        "import e2d_jax as e\n"
        "from e2d_jax.envs.family import environment_of\n"
        "from e2d_jax.sim import execute, program\n"
        "p = e.semi_bandit(e.instance_key(0), 3, 6)\n"
        "prog, nums = program.program_of(e.thompson_sampling(), 'linear')\n"
        "exe, _ = execute.compiled(environment_of(p), prog, 12, 4, 2, jax.devices(), p, np.float32)\n"
        "print(len(jax.devices()), len(exe.executables), len({d.id for d in exe.targets}))\n"
        "many = e.simulate(p, e.thompson_sampling(), horizon=12, num_seeds=8, record_every=4, lanes=2)\n"
        "one = e.simulate(p, e.thompson_sampling(), horizon=12, num_seeds=8, record_every=4, lanes=2,\n"
        "                 devices=jax.devices()[:1])\n"
        "assert all(np.array_equal(x, y) for x, y in zip(jax.tree_util.tree_leaves(many.result),\n"
        "                                                  jax.tree_util.tree_leaves(one.result)))\n"
    )
    env = procs.cli_env()
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=4".strip()
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["4", "1", "1"]


def test_only_large_lapack_batches_run_host_slices_one_at_a_time():
    """Host-device slices run at once unless a LAPACK call may wait on XLA's thread pool: the
    library's own solves and factorisations are cut into batches that do not (the linear DEC's
    at the Experiment 2 shape and at 1,000 lanes, TS's Cholesky factors at d = 30), so their
    slices run at once, and so do the interior point's and the logistic estimator's LU
    factorisations; a large batched call of
    one's own and any unsized LAPACK call (an eigendecomposition) one slice at a time."""
    def text(fn, *shapes):
        return jax.jit(jax.vmap(fn)).lower(*[jnp.ones(s, jnp.float32) for s in shapes]).as_text()

    exp2 = text(_linalg.psd_solve, (CPU_LANES, 10, 10), (CPU_LANES, 10, 10))
    assert "lapack" in exp2 and not lapack_blocks_threads(exp2)
    assert not lapack_blocks_threads(text(_linalg.psd_cholesky, (CPU_LANES, 30, 30)))
    assert not lapack_blocks_threads(text(_linalg.psd_solve, (1000, 10, 10), (1000, 10, 10)))
    assert lapack_blocks_threads(text(jnp.linalg.cholesky, (CPU_LANES, 30, 30)))
    assert lapack_blocks_threads(text(lambda v: jnp.linalg.eigh(v)[0], (CPU_LANES, 3, 3)))
    assert not lapack_blocks_threads(text(_linalg.psd_solve, (CPU_LANES, 3, 3), (CPU_LANES, 3, 3)))
    lu = text(lambda a, b: _linalg.lu_solve(_linalg.lu_factor(a), b), (CPU_LANES, 30, 30), (CPU_LANES, 30))
    assert "getrf" in lu and not lapack_blocks_threads(lu)
    assert lapack_blocks_threads(text(lambda a: jax.scipy.linalg.lu_factor(a)[0], (CPU_LANES, 30, 30)))
    # The logistic estimator's Newton step and inverse Hessian (preference feedback) at d = 30.
    newton = text(lambda f, m, n, w: logistic._newton_step(f, m, n, w, 1.0), (CPU_LANES, 30), (CPU_LANES, 6, 1, 30),
                  (CPU_LANES, 6), (CPU_LANES, 6, 1))
    inverse = text(lambda f, m, n: logistic.hessian_inverse(f, m, n, 1.0), (CPU_LANES, 30), (CPU_LANES, 6, 1, 30),
                   (CPU_LANES, 6))
    assert "getrf" in newton and not lapack_blocks_threads(newton)
    assert "getrf" in inverse and not lapack_blocks_threads(inverse)


def test_instance_and_run_streams_are_distinct():
    """Regression: the keys that draw an instance (split of its key) are never run keys of the
    same seed value."""
    data = lambda keys: {tuple(np.asarray(jax.random.key_data(k)).ravel()) for k in keys}
    for s in (0, 1, 7):
        inst = data(jax.random.split(instance_key(s), 3)) | data([instance_key(s)])
        runs = data(run_keys(s, np.arange(100)))
        assert not inst & runs


def test_nonfinite_cell_is_flagged_and_other_cells_unchanged():
    """A traced eps2_scale of 0 (the factory checks the first cell's values only; the others
    are traced) makes every round of its cell non-finite: each of its seeds is counted
    invalid, the other cell equals its run alone, bit for bit (an agent and a grid's cell are
    one program with the same numbers). A first cell the factory refuses is refused at once."""
    params32 = linear.semi_bandit(jax.random.key(0), 3, 6, dtype=jnp.float32)
    sim = simulate(params32, anytime_e2d, horizon=10, num_seeds=4, record_every=5, hparams={"eps2_scale": [1.0, 0.0]})
    valid = valid_seeds(sim.result)
    assert valid.shape == (2, 4)
    assert valid[0].all() and not valid[1].any()
    assert np.all(solver_summary(sim.result.solver)["nonfinite_rounds"][1] == 10)
    assert np.all(sim.result.invalid_rounds[1] == 10)
    alone = simulate(params32, anytime_e2d(eps2_scale=1.0), horizon=10, num_seeds=4, record_every=5)
    np.testing.assert_array_equal(sim.result.action_counts[0], alone.result.action_counts)
    np.testing.assert_array_equal(sim.result.regret[0], alone.result.regret)
    with pytest.raises(ValueError, match="eps2_scale"):
        simulate(params32, anytime_e2d, horizon=10, num_seeds=4, hparams={"eps2_scale": [0.0, 1.0]})


def test_solver_summary_brackets_the_recorded_gaps():
    """Recording every round, the histogram's per-seed median and p90 are upper bin edges of
    the exact quantiles of gap / |value| (within one bin: a factor 10^(1/4))."""
    params32 = linear.semi_bandit(jax.random.key(1), 3, 6, dtype=jnp.float32)
    sim = simulate(params32, anytime_e2d(), horizon=60, num_seeds=3, record_every=1)
    info = sim.result.info
    rel = np.asarray(info.gap, np.float64) / np.abs(np.asarray(info.value, np.float64))
    stats = solver_summary(sim.result.solver)
    assert np.all(np.asarray(sim.result.solver.status_counts).sum(-1) == 60)
    np.testing.assert_array_equal(stats["max_iter_rounds"], (np.asarray(info.status) == 1).sum(-1))
    for q, key in ((0.5, "rel_gap_median"), (0.9, "rel_gap_p90")):
        exact = np.quantile(rel, q, axis=1, method="inverted_cdf")
        assert np.all(exact <= stats[key] * (1 + 1e-6))
        assert np.all(exact >= stats[key] / 10 ** 0.25 * (1 - 1e-6))


def test_one_corrupted_instance_spoils_no_other_seed():
    """A NaN in one instance's f* (its seeds' observations are NaN) makes exactly that
    instance's seeds invalid; the other instance's seeds are unchanged bit for bit against
    the same batch with no corruption."""
    keys = jax.random.split(jax.random.key(5), 2)
    batch = jax.vmap(lambda k: linear.semi_bandit(k, 3, 4, dtype=jnp.float32))(keys)
    bad = batch._replace(theta=batch.theta.at[1, 0].set(jnp.nan))
    run = lambda p: simulate(p, anytime_e2d(), horizon=12, num_seeds=3, record_every=4, instances=True)
    clean, spoiled = run(batch), run(bad)
    valid = valid_seeds(spoiled.result)
    assert valid.shape == (2, 3) and valid[0].all() and not valid[1].any()
    assert np.all(np.asarray(spoiled.result.invalid_rounds)[1] > 0)
    np.testing.assert_array_equal(spoiled.result.regret[0], clean.result.regret[0])
    np.testing.assert_array_equal(spoiled.result.action_counts[0], clean.result.action_counts[0])


def test_every_trajectory_has_one_lane_in_calls_of_a_fixed_width():
    """``lanes_for`` a platform, and the layout: cells x instances x seeds, each run exactly
    once in calls of exactly ``width`` lanes (the last padded with runs computed again), so
    every call is the same compiled program."""
    cpu, gpu = SimpleNamespace(platform="cpu"), SimpleNamespace(platform="gpu")
    assert lanes_for(cpu) == CPU_LANES and lanes_for(gpu) == ACCELERATOR_LANES
    the_layout = layout(8, 20, np.arange(5, 12), CPU_LANES)  # a sensitivity unit: 20 instances x 8 cells
    assert the_layout.shape == (8, 20, 7)
    calls = [the_layout.call(c) for c in range(the_layout.num_calls)]
    assert the_layout.num_calls == -(-8 * 20 * 7 // CPU_LANES)
    assert all(len(cell) == CPU_LANES for cell, _, _ in calls)
    runs = list(zip(*[np.concatenate(x)[:8 * 20 * 7] for x in zip(*calls)]))
    assert sorted(runs) == sorted((h, i, s) for h in range(8) for i in range(20) for s in range(5, 12))


def test_accelerator_calls_narrow_to_fit_the_lanes_memory():
    """On an accelerator a call's width halves from ACCELERATOR_LANES until its lanes' memory
    (from shapes: instance and agent state) fits ACCELERATOR_CALL_BYTES; a linear bandit of
    10,000 actions in dimension 10 (two (K, d, d) Gram stacks in its instance) gets far fewer
    lanes than one of 100 actions, and a sweep's plan sizes its units the same way."""
    gpu = SimpleNamespace(platform="gpu")
    assert lanes_for(gpu, ACCELERATOR_CALL_BYTES // ACCELERATOR_LANES) == ACCELERATOR_LANES
    assert lanes_for(gpu, ACCELERATOR_CALL_BYTES // ACCELERATOR_LANES + 1) == ACCELERATOR_LANES // 2
    assert lanes_for(gpu, 2 * ACCELERATOR_CALL_BYTES) == 1
    assert lanes_for(SimpleNamespace(platform="cpu"), 2 * ACCELERATOR_CALL_BYTES) == CPU_LANES
    widths = {}
    for arms in (100, 10_000):
        params = jax.eval_shape(lambda k: linear.linear_bandit(k, 10, arms), jax.random.key(0))
        program, numbers = program_of(ucb(), "linear")
        size = lane_bytes(program, numbers, params)
        assert size >= 2 * arms * 10 * 10 * 4  # the instance's two Gram stacks at least
        widths[arms] = lanes_for(gpu, size)
        assert widths[arms] * size <= ACCELERATOR_CALL_BYTES
    assert widths[100] == ACCELERATOR_LANES and widths[10_000] <= ACCELERATOR_LANES // 16


def test_rollouts_compile_with_full_float32_products(monkeypatch):
    """The simulator lowers its rollouts with every matrix product at full float32 precision
    (on GPUs JAX's default rounds the inputs to TF32, about 1e-3, the certificates' size)."""
    texts = []

    class Recording(execute.Executable):
        def __init__(self, jitted, devices, example):
            texts.append(jitted.lower(*example).as_text())
            super().__init__(jitted, devices, example)

    monkeypatch.setattr(execute, "Executable", Recording)
    params = linear.linear_bandit(instance_key(0), 3, 5)
    simulate(params, ucb(), horizon=2, num_seeds=1, lanes=3)  # a width no other test compiles
    dots = [line for line in texts[0].splitlines() if "dot_general" in line]
    assert dots and all("precision = [HIGHEST, HIGHEST]" in line for line in dots)


def _bad_action_agent(action_of_seed):
    """UCB whose action is replaced by ``action_of_seed(key)`` (an int32 scalar)."""
    base = ucb()

    def act(key, state, model):
        _, state, info = base.act(key, state, model)
        return action_of_seed(key), state, info

    return Agent(init=base.init, act=act, update=base.update)


def test_an_action_outside_the_range_invalidates_its_seed_never_clamped_silently():
    """An agent that returns action 99 (K = 6) in some rounds: those seeds are invalid, their
    status counts say INVALID_ACTION, and a valid seed's bits equal the plain agent's."""
    agent = _bad_action_agent(lambda key: jnp.where(jax.random.uniform(key) < 0.05, 99, 0).astype(jnp.int32))
    sim = simulate(PARAMS, agent, horizon=40, num_seeds=6, record_every=10)
    counts = np.asarray(sim.result.solver.status_counts)[:, Status.INVALID_ACTION]
    assert np.all(np.asarray(sim.result.invalid_rounds) == counts)
    assert counts.max() > 0
    valid = valid_seeds(sim.result)
    np.testing.assert_array_equal(valid, counts == 0)
    assert solver_summary(sim.result.solver)["invalid_action_rounds"].tolist() == counts.tolist()
    always = simulate(PARAMS, _bad_action_agent(lambda key: jnp.int32(99)), horizon=5, num_seeds=2)
    assert not valid_seeds(always.result).any()
    negative = simulate(PARAMS, _bad_action_agent(lambda key: jnp.int32(-1)), horizon=5, num_seeds=2)
    assert np.all(np.asarray(negative.result.invalid_rounds) == 5)


def test_instance_summary_separates_seeds_from_instances():
    final = np.array([[1.0, 3.0, 2.0], [10.0, 12.0, 11.0]])
    valid = np.array([[True, True, True], [True, True, False]])
    s = instance_summary(final, valid)
    assert s["seeds"] == [3, 2]
    np.testing.assert_allclose(s["instance_means"], [2.0, 11.0])
    np.testing.assert_allclose(s["pooled_mean"], np.mean([1, 3, 2, 10, 12]))
    np.testing.assert_allclose(s["median"], 6.5)
    np.testing.assert_allclose(s["iqr"], [np.percentile([2, 11], 25), np.percentile([2, 11], 75)])
    half = 1.959963984540054 * np.std([2.0, 11.0], ddof=1) / np.sqrt(2)
    np.testing.assert_allclose(s["ci95_over_instances"], [6.5 - half, 6.5 + half])
