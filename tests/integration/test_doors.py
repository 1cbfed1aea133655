"""One agent, one answer: the same agent, instance, seeds and options give the same bits through
every door.

The doors: :func:`e2d_jax.simulate` with the agent object, with a grid of one value and with a
grid of several (the cell of the same value), :class:`e2d_jax.Results` saving it, ``e2d-jax
run``, a sweep file, ``--part 1/2`` then ``--part 2/2``, and ``reproduce``'s sweep of the
paper's Experiment 1. Each door's files are compared with the agent object's, seed by seed:
every column of ``results.parquet`` (final regret, action counts, rounds per status, gap
quantiles), the regret curve at every round and the per-round diagnostics (status, value,
lambda, gap, iterations). At the defaults of Anytime-E2D, E2D, IDS, UCB and TS, on a linear
and a finite family. ``--executor ray`` gives the local executor's bits
(``tests/helpers/ray_isolated.py``, on the same five agents).
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import e2d_jax as e2d
from e2d_jax.cli import main as cli
from e2d_jax.experiments import registry, run_sweep
from e2d_jax.paper import presets
from e2d_jax.sim import execute

HORIZON, SEEDS = 12, 6

#: The instance of each family: a registered name with its options, and the public builder
#: a notebook calls for it.
FAMILIES = {
    "linear": ("semi-bandit", {"d": 3, "arms": 5},
               lambda: e2d.semi_bandit(e2d.instance_key(0), 3, 5, dtype=jnp.float32)),
    "finite": ("finite-revealing", {"arms": 4, "models": 6},
               lambda: e2d.revealing_class(e2d.instance_key(0), 4, 6, gain=3.0, dtype=jnp.float32)),
}

#: Each agent by name, by its public function, and one of its numbers with the default value
#: (the grid doors vary it).
AGENTS = {
    "anytime-e2d": (e2d.anytime_e2d, "eps2_scale", 1.0),
    "e2d": (functools.partial(e2d.fixed_horizon_e2d, horizon=HORIZON), "lam_scale", 1.0),
    "ids": (e2d.ids, None, None),
    "ucb": (e2d.ucb, "reg", 1.0),
    "ts": (e2d.thompson_sampling, "reg", 1.0),
}
#: A number of the finite agents where the linear one's is not theirs.
FINITE_NUMBER = {"ids": ("eta", 1.0)}


def _numbers(family, name):
    _, number, value = AGENTS[name]
    if family == "finite" and name in FINITE_NUMBER:
        return FINITE_NUMBER[name]
    if family == "linear" and name == "ids":
        return "reg", 1.0
    return number, value


def _files(out):
    """A run directory's per-seed contents: the table sorted by seed (labels dropped), the
    curves and the diagnostics (keys without the cell label)."""
    table = pd.read_parquet(out / "results.parquet").sort_values("seed").reset_index(drop=True)
    table = table.drop(columns=["agent", "cell", *[c for c in table.columns if c.startswith("hp_")]])
    curves = np.load(out / "curves.npz")["regret"][table.index.to_numpy()]
    with np.load(out / "diagnostics.npz") as z:
        diagnostics = {k.rpartition("/")[2]: np.asarray(z[k]).reshape(-1, z[k].shape[-1]) for k in z.files}
    return table, curves, diagnostics


def _equal(x, y) -> bool:
    x, y = np.asarray(x), np.asarray(y)
    nan_ok = np.issubdtype(x.dtype, np.floating) and np.issubdtype(y.dtype, np.floating)
    return np.array_equal(x, y, equal_nan=nan_ok)


def _assert_same(a, b, door):
    ta, ca, da = a
    tb, cb, db = b
    assert list(ta.columns) == list(tb.columns), door
    for column in ta.columns:
        left, right = ta[column].to_list(), tb[column].to_list()
        same = [_equal(x, y) for x, y in zip(left, right)]
        assert len(left) == len(right) and all(same), (door, column, left, right)
    np.testing.assert_array_equal(ca, cb, err_msg=door)
    assert da.keys() == db.keys(), door
    for key in da:
        np.testing.assert_array_equal(da[key], db[key], err_msg=f"{door}: {key}")


def _cli_flags(env, options):
    flags = ["--env", env]
    for key, value in options.items():
        flags += [f"--{key}", str(value)]
    return flags + ["--horizon", str(HORIZON), "--seeds", str(SEEDS), "--record-every", "1", "--diagnostics",
                    "--quiet", "--host-devices", "1"]


# The default run has every agent on both families but E2D, which it has on the linear one.
@pytest.mark.parametrize("name, family", [
    pytest.param(name, family, marks=pytest.mark.slow if (name, family) == ("e2d", "finite") else ())
    for name in AGENTS for family in sorted(FAMILIES)], ids=lambda v: str(v))
def test_every_door_gives_the_same_bits(tmp_path, family, name):
    env, options, build = FAMILIES[family]
    factory, _, _ = AGENTS[name]
    number, default = _numbers(family, name)
    params = build()
    sims = {
        "agent object": e2d.simulate(params, factory(), horizon=HORIZON, num_seeds=SEEDS, label=name),
        "grid of one": e2d.simulate(params, factory, horizon=HORIZON, num_seeds=SEEDS, label=name,
                                    hparams={number: [default]}),
    }
    two = e2d.simulate(params, factory, horizon=HORIZON, num_seeds=SEEDS, label=name,
                       hparams={number: [0.5 * default, default]})
    sims["grid of two, its second cell"] = two._replace(
        result=jax.tree_util.tree_map(lambda x: np.asarray(x)[1], two.result), cells=None)
    reference = None
    for door, sim in sims.items():
        out = e2d.Results(sim).save(tmp_path / door.replace(" ", "-"), diagnostics=True, draw=False)
        files = _files(out)
        reference = files if reference is None else reference
        _assert_same(reference, files, door)

    compiled = execute.compiled_cache_size()
    assert cli(["run", *_cli_flags(env, options), "--agents", name, "--out", str(tmp_path / "run")]) == 0
    _assert_same(reference, _files(tmp_path / "run"), "e2d-jax run")
    # The command line ran the program the Python doors compiled.
    assert execute.compiled_cache_size() == compiled

    sweep = tmp_path / "sweep.toml"
    sizes = "".join(f"{k} = {v}\n" for k, v in options.items())
    sweep.write_text(f"name = 'doors'\nhorizon = {HORIZON}\nseeds = {SEEDS}\nrecord_every = 1\ndiagnostics = true\n"
                     f"[env]\nname = '{env}'\n{sizes}[[agents]]\nname = '{name}'\n")
    assert cli(["sweep", str(sweep), "--out", str(tmp_path / "sweep"), "--quiet", "--host-devices", "1"]) == 0
    _assert_same(reference, _files(tmp_path / "sweep"), "sweep file")

    parts = ["run", *_cli_flags(env, options), "--agents", name, "--batch-size", "4", "--out", str(tmp_path / "parts")]
    assert cli([*parts, "--part", "1/2"]) == 0 and not (tmp_path / "parts" / "results.parquet").exists()
    assert cli([*parts, "--part", "2/2"]) == 0
    _assert_same(reference, _files(tmp_path / "parts"), "--part 1/2, 2/2")


def test_reproduce_runs_the_agents_a_notebook_builds(tmp_path):
    """``reproduce exp1``'s sweep (its agents by name, with the paper's conventions) and the
    same agents built by their public functions on the same instance give the same bits."""
    spec = presets.experiment_spec("exp1", seeds=SEEDS)
    spec = type(spec).from_dict({**spec.to_dict(), "horizon": HORIZON, "record_every": 1, "diagnostics": True})
    run_sweep(spec, tmp_path / "reproduce", progress=False)
    _, params, _ = registry.build_instance("semi-bandit", 0, {"d": 3, "arms": 10}, "float32")
    python = {"anytime-e2d": e2d.anytime_e2d(eps2_schedule="dim"), "e2d-n200": e2d.fixed_horizon_e2d(horizon=200),
              "e2d-n2000": e2d.fixed_horizon_e2d(horizon=2000), "ucb": e2d.ucb(), "ts": e2d.thompson_sampling()}
    table = pd.read_parquet(tmp_path / "reproduce" / "results.parquet")
    curves = np.load(tmp_path / "reproduce" / "curves.npz")["regret"]
    for label, agent in python.items():
        sim = e2d.simulate(params, agent, horizon=HORIZON, num_seeds=SEEDS, label=label)
        mine = e2d.Results(sim).to_frame().drop(columns=["agent", "cell"])
        rows = table[table["agent"] == label].sort_values("seed")
        theirs = rows.drop(columns=["agent", "cell"]).reset_index(drop=True)
        for column in mine.columns:
            assert all(_equal(x, y) for x, y in zip(mine[column], theirs[column])), (label, column)
        np.testing.assert_array_equal(np.asarray(sim.result.regret), curves[rows.index.to_numpy()], err_msg=label)
