import jax
import jax.numpy as jnp
import numpy as np
import pytest

from e2d_jax.agents.ts import thompson_sampling
from e2d_jax.agents.ucb import ucb
from e2d_jax.envs import linear
from e2d_jax.simulate import record_rounds, rollout, run_keys, simulate

PARAMS = linear.semi_bandit(jax.random.key(0), 3, 6, dtype=jnp.float32)


def _tree_equal(a, b):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    return len(la) == len(lb) and all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(la, lb))


@pytest.mark.parametrize("make", [ucb, thompson_sampling])
def test_vmapped_64_equals_stacked_single_runs(make):
    agent = make()
    keys = run_keys(3, np.arange(64))
    single = jax.jit(lambda k: rollout(k, PARAMS, linear.ENVIRONMENT, agent, 60, 7))
    stacked = [single(keys[i]) for i in range(64)]
    stacked = jax.tree_util.tree_map(lambda *x: np.stack(x), *stacked)
    sim = simulate(linear.ENVIRONMENT, PARAMS, agent, horizon=60, num_seeds=64, seed=3, record_every=7)
    assert _tree_equal(sim.result, stacked)


def test_batching_does_not_change_any_seed():
    agent = thompson_sampling()
    a = simulate(linear.ENVIRONMENT, PARAMS, agent, horizon=30, num_seeds=10, seed=1, batch_size=10)
    b = simulate(linear.ENVIRONMENT, PARAMS, agent, horizon=30, num_seeds=10, seed=1, batch_size=4)
    assert _tree_equal(a.result, b.result)
    c = simulate(linear.ENVIRONMENT, PARAMS, agent, horizon=30, num_seeds=3, seed=1, first_seed=7)
    assert _tree_equal(c.result, jax.tree_util.tree_map(lambda x: x[7:], a.result))


def test_record_every_and_shapes():
    agent = ucb()
    full = simulate(linear.ENVIRONMENT, PARAMS, agent, horizon=25, num_seeds=2, record_every=1)
    sparse = simulate(linear.ENVIRONMENT, PARAMS, agent, horizon=25, num_seeds=2, record_every=10)
    np.testing.assert_array_equal(sparse.rounds, [10, 20, 25])
    np.testing.assert_array_equal(record_rounds(20, 10), [10, 20])
    np.testing.assert_allclose(sparse.result.regret, full.result.regret[:, [9, 19, 24]], rtol=1e-6)
    assert sparse.result.action_counts.sum(1).tolist() == [25, 25]
    assert sparse.result.info.status.shape == (2, 3)
    assert sparse.result.regret.dtype == np.float32


def test_vmap_over_instances():
    keys = jax.random.split(jax.random.key(9), 3)
    batch = jax.vmap(lambda k: linear.semi_bandit(k, 3, 5, dtype=jnp.float32))(keys)
    agent = ucb()
    run = jax.jit(jax.vmap(lambda p: rollout(jax.random.key(0), p, linear.ENVIRONMENT, agent, 20, 5)))
    res = run(batch)
    one = jax.jit(lambda p: rollout(jax.random.key(0), p, linear.ENVIRONMENT, agent, 20, 5))(
        jax.tree_util.tree_map(lambda x: x[1], batch))
    np.testing.assert_allclose(res.regret[1], one.regret, rtol=1e-6)


@pytest.mark.parametrize("kwargs, name", [
    (dict(horizon=0, num_seeds=1), "horizon"),
    (dict(horizon=-3, num_seeds=1), "horizon"),
    (dict(horizon=5, num_seeds=0), "num_seeds"),
    (dict(horizon=5, num_seeds=1, record_every=0), "record_every"),
    (dict(horizon=5, num_seeds=2, batch_size=0), "batch_size"),
])
def test_bad_simulation_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        simulate(linear.ENVIRONMENT, PARAMS, ucb(), **kwargs)


def test_nonfinite_seed_is_counted_not_spread():
    """A seed whose estimate becomes NaN is flagged; other seeds are untouched."""
    agent = ucb()
    bad = PARAMS._replace(theta=PARAMS.theta.at[0].set(jnp.nan))
    res = jax.jit(jax.vmap(lambda k, p: rollout(k, p, linear.ENVIRONMENT, agent, 10, 5), in_axes=(0, 0)))(
        run_keys(0, np.arange(3)),
        jax.tree_util.tree_map(lambda g, b: jnp.stack([g, b, g]), PARAMS, bad),
    )
    assert res.nonfinite_rounds.tolist()[0] == 0 and res.nonfinite_rounds.tolist()[2] == 0
    assert res.nonfinite_rounds.tolist()[1] > 0
    good = jax.jit(lambda k: rollout(k, PARAMS, linear.ENVIRONMENT, agent, 10, 5))(run_keys(0, [2])[0])
    np.testing.assert_array_equal(res.regret[2], good.regret)


def test_sharded_over_two_host_devices_is_identical(tmp_path):
    """Seeds sharded over 2 forced CPU devices give exactly the single-device results."""
    import os
    import subprocess
    import sys

    code = (
        "import jax, numpy as np, sys\n"
        "from e2d_jax.envs import linear\n"
        "from e2d_jax.agents.ucb import ucb\n"
        "from e2d_jax.simulate import simulate\n"
        "p = linear.semi_bandit(jax.random.key(0), 3, 6)\n"
        "s = simulate(linear.ENVIRONMENT, p, ucb(), horizon=40, num_seeds=10, seed=2, record_every=10, batch_size=4)\n"
        "np.save(sys.argv[1], s.result.regret); print(len(jax.devices()))\n"
    )
    outs = []
    for n_dev in (1, 2):
        env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={n_dev}")
        path = tmp_path / f"r{n_dev}.npy"
        proc = subprocess.run([sys.executable, "-c", code, str(path)], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == str(n_dev)
        outs.append(np.load(path))
    np.testing.assert_array_equal(outs[0], outs[1])
