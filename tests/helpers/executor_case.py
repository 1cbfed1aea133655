"""The small sweep both executor test files run, ``test_executors.py`` in the test process and
``ray_isolated.py`` in a fresh one (Anytime-E2D with a grid, E2D, IDS, UCB and TS at their
defaults), and the bit-for-bit comparison of two runs of it."""
import numpy as np
import pandas as pd

from e2d_jax.experiments import SweepAgent, SweepSpec, run_sweep


def spec(**kw):
    base = dict(env="semi-bandit", d=3, arms=5, horizon=60, seeds=24, record_every=20, chunk_size=4,
                agents=(SweepAgent.make("anytime-e2d", {"divergence": "squared"}, {"eps2_scale": [0.3, 1.0]}),
                        SweepAgent.make("e2d"), SweepAgent.make("ids"), SweepAgent.make("ucb"),
                        SweepAgent.make("ts")), name="exec")
    base.update(kw)
    return SweepSpec(**base)


def local_run(out):
    """The local executor's tables for :func:`spec`: (results table, recorded regret curves)."""
    run_sweep(spec(), out, progress=False)
    return pd.read_parquet(out / "results.parquet"), np.load(out / "curves.npz")["regret"]


def assert_same_as_local(out, local_results):
    table, curves = local_results
    got = pd.read_parquet(out / "results.parquet")
    assert not got.duplicated(["cell", "instance_seed", "seed"]).any()
    pd.testing.assert_frame_equal(got, table)
    np.testing.assert_array_equal(np.load(out / "curves.npz")["regret"], curves)
