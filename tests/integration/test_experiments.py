"""The experiment layer: specs and units, chunked atomic storage, resume after SIGKILL with
bit-identical per-seed results, refusal of other configurations, the vmapped hyperparameter
axis, tables pandas reads, presets and their conventions, the TOML sweep and the figures."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pandas as pd
import pytest

import procs

from e2d_jax import cli
from e2d_jax.experiments import SweepAgent, SweepError, SweepSpec, load_toml, registry, run_sweep, units
from e2d_jax.experiments.spec import plan
from e2d_jax.experiments.figures import figures
from e2d_jax.paper.presets import experiment_spec

ROOT = Path(__file__).resolve().parents[2]


def _spec(**kw):
    base = dict(env="semi-bandit", d=3, arms=5, horizon=30, seeds=10, record_every=10, chunk_size=4,
                instance_seeds=(0, 1),
                agents=(SweepAgent.make("anytime-e2d", {"divergence": "squared"}, {"eps2_scale": [0.3, 1.0]}),
                        SweepAgent.make("ts")))
    base.update(kw)
    return SweepSpec(**base)


def test_units_are_fixed_and_cover_every_seed():
    spec = _spec()
    us = units(spec)
    assert [u.uid for u in us] == [f"{a}/chunk{i:05d}" for a in ("anytime-e2d", "ts") for i in range(3)]
    assert [(u.first, u.count, u.size) for u in us[:3]] == [(0, 4, 4), (4, 4, 4), (8, 2, 4)]
    assert units(spec) == us
    # Default chunk (in seeds, for a program's runs per seed = cells x instances): bounded by
    # the trajectories per unit, a multiple of the seeds that fill one call's 64 lanes per
    # CPU device.
    auto = _spec(chunk_size=None, seeds=5000, instance_seeds=tuple(range(8)))
    assert auto.chunk(2 * 8, 64) == 4096 // 16 and auto.chunk(1 * 8, 64) == 4096 // 8
    assert _spec(chunk_size=None, seeds=5000).chunk(2, 64) == 992  # not 1000: 31 x (64 // 2)
    assert _spec(chunk_size=None, seeds=5000).chunk(2, 128) == 960  # 2 devices: 15 x (128 // 2)
    # More runs per seed than a call's width: one seed per call, the unit still bounded by
    # MAX_TRAJECTORIES (20 instances x 2 cells = 40 per seed); never more than the seeds.
    big = _spec(chunk_size=None, seeds=500, instance_seeds=tuple(range(20)))
    assert big.chunk(2 * 20, 64) == 4096 // 40 and _spec(chunk_size=None, seeds=12).chunk(2, 64) == 12


def test_sweep_writes_table_curves_summary_and_refuses_other_configs(tmp_path):
    spec = _spec()
    summary = run_sweep(spec, tmp_path / "s", progress=False)
    table = pd.read_parquet(tmp_path / "s" / "results.parquet")
    assert len(table) == (2 + 1) * 2 * 10  # (cells of anytime-e2d + ts) x instances x seeds
    assert set(table["cell"]) == {"anytime-e2d[eps2_scale=0.3]", "anytime-e2d[eps2_scale=1]", "ts"}
    assert table["hp_eps2_scale"].isna().sum() == 20
    curves = np.load(tmp_path / "s" / "curves.npz")
    assert curves["regret"].shape == (60, 3) and list(curves["rounds"]) == [10, 20, 30]
    np.testing.assert_allclose(curves["regret"][:, -1], table["final_regret"], rtol=1e-6)
    cell = summary["agents"]["ts"]
    assert cell["seeds"] == 20 and cell["instances"] == 2
    lo, hi = cell["final_regret_ci95"]
    assert lo <= cell["final_regret_mean"] <= hi
    on_disk = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert on_disk["config"]["horizon"] == 30 and "e2d_jax_source" in on_disk["versions"]
    # Same configuration, finished: re-summarised without recomputing.
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "s" / "chunks").rglob("*.npz")}
    run_sweep(spec, tmp_path / "s", progress=False)
    assert before == {p: p.stat().st_mtime_ns for p in (tmp_path / "s" / "chunks").rglob("*.npz")}
    # Another configuration is refused unless --overwrite.
    with pytest.raises(SweepError, match="different configuration"):
        run_sweep(_spec(horizon=20), tmp_path / "s", progress=False)
    run_sweep(_spec(horizon=20), tmp_path / "s", overwrite=True, progress=False)
    assert json.loads((tmp_path / "s" / "summary.json").read_text())["config"]["horizon"] == 20
    # An output path that is a file is refused.
    (tmp_path / "f").write_text("x")
    with pytest.raises(SweepError, match="not a directory"):
        run_sweep(spec, tmp_path / "f", progress=False)


def test_a_cells_bits_do_not_depend_on_the_cells_beside_it(tmp_path):
    """A value of a hyperparameter grid gives the same per-seed bits whatever the other values
    and its position in the grid (the cells axis is vmapped, and a cell's lanes depend only on
    its own value), and different values give different runs.

    A grid of one value is another program: XLA drops an axis of size one, and with it
    rewrites such as a division by a broadcast divisor into a multiplication by its reciprocal,
    so that its floats agree with a cell of a larger grid to rounding only."""
    tables = {}
    for name, values in (("a", [0.3, 1.0]), ("b", [1.0, 0.5, 0.3])):
        run_sweep(_spec(agents=(SweepAgent.make("anytime-e2d", {}, {"eps2_scale": values}),)), tmp_path / name,
                  progress=False)
        tables[name] = pd.read_parquet(tmp_path / name / "results.parquet")
    for c in (0.3, 1.0):
        a, b = (tables[n][tables[n]["hp_eps2_scale"] == c].reset_index(drop=True) for n in ("a", "b"))
        assert len(a) == len(b) == 20
        np.testing.assert_array_equal(np.stack(a["action_counts"]), np.stack(b["action_counts"]))
        np.testing.assert_array_equal(a["final_regret"], b["final_regret"])
    low, high = (tables["a"][tables["a"]["hp_eps2_scale"] == c]["final_regret"].to_numpy() for c in (0.3, 1.0))
    assert not np.array_equal(low, high)


KILL_SPEC = """
name = "killed"
env = "semi-bandit"
d = 3
arms = 6
horizon = 60
seeds = 384
instances = 2
record_every = 20
chunk_size = 8
[[agents]]
name = "anytime-e2d"
grid = { eps2_scale = [0.5, 1.0] }
"""


def _private_cache_env(tmp_path):
    """The environment for a CLI process that a test kills or interrupts: no forced devices,
    compiled for a long run, and a compilation cache of its own. JAX writes a cache entry with a plain write_bytes, so
    a process killed mid-write leaves a truncated entry, which must not reach the session's
    shared cache (other processes would load it)."""
    return procs.cli_env(long_run=True, E2D_JAX_CACHE_DIR=str(tmp_path / "jax-cache"))


def test_sigkill_then_resume_is_bit_identical(tmp_path):
    """A sweep killed with SIGKILL part-way and resumed gives per-seed results bit-identical to
    an uninterrupted run; nothing is lost or duplicated and half-written files are ignored."""
    spec_path = tmp_path / "kill.toml"
    spec_path.write_text(KILL_SPEC)  # 48 units: the kill lands mid-run
    env = _private_cache_env(tmp_path)
    cmd = [sys.executable, "-m", "e2d_jax.cli", "sweep", str(spec_path), "--quiet", "--host-devices", "1"]
    killed, full = tmp_path / "killed", tmp_path / "full"
    proc = subprocess.Popen(cmd + ["--out", str(killed)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    chunk_dir = killed / "chunks" / "anytime-e2d"
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if chunk_dir.exists() and len(list(chunk_dir.glob("chunk*.npz"))) >= 2:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the sweep finished before it could be killed: make it longer"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = sorted(p.name for p in chunk_dir.glob("chunk*.npz"))
    assert 2 <= len(done) < 48, done
    # A half-written file, as a kill during a write would leave it, and a damaged chunk.
    (chunk_dir / ".chunk00011.npz.abc.tmp").write_bytes(b"partial")
    # Without --resume the unfinished directory is refused.
    refused = subprocess.run(cmd + ["--out", str(killed)], env=env, capture_output=True, text=True)
    assert refused.returncode == 2 and "--resume" in refused.stderr
    resumed = subprocess.run(cmd + ["--out", str(killed), "--resume"], env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert not list(killed.rglob("*.tmp"))
    uninterrupted = subprocess.run(cmd + ["--out", str(full)], env=env, capture_output=True, text=True)
    assert uninterrupted.returncode == 0, uninterrupted.stderr
    a = pd.read_parquet(killed / "results.parquet")
    b = pd.read_parquet(full / "results.parquet")
    assert len(a) == len(b) == 2 * 2 * 384
    assert not a.duplicated(["cell", "instance_seed", "seed"]).any()
    pd.testing.assert_frame_equal(a, b)
    np.testing.assert_array_equal(np.load(killed / "curves.npz")["regret"], np.load(full / "curves.npz")["regret"])
    # The chunks written before the kill were kept, not recomputed; once collected, the chunks
    # are removed (the tables hold every number they held).
    assert f"{len(done)} of 48 units already done" in resumed.stdout, resumed.stdout
    assert not (killed / "chunks").exists() and json.loads((killed / "manifest.json").read_text())["complete"]


def test_presets_name_agents_and_conventions():
    e1 = experiment_spec("exp1", seeds=100)
    assert [a.label for a in e1.agents] == ["anytime-e2d", "e2d-n200", "e2d-n500", "e2d-n1000", "e2d-n2000", "ucb", "ts"]
    assert (e1.d, e1.arms, e1.horizon, e1.instance_seeds, e1.conventions) == (3, 10, 2000, (0,), "implementation")
    assert dict(e1.agents[0].options)["divergence"] == "squared"
    e2 = experiment_spec("exp2", conventions="paper-text", instances=3)
    assert [a.label for a in e2.agents] == ["anytime-e2d", "e2d-n200", "e2d-n500", "e2d-n1000", "ucb", "ts"]
    assert (e2.d, e2.horizon, e2.instance_seeds) == (30, 1000, (0, 1, 2))
    assert dict(e2.agents[1].options)["divergence"] == "kl"
    with pytest.raises(ValueError, match="conventions"):
        experiment_spec("exp1", conventions="mine")


def test_shipped_sweep_file_and_plot(tmp_path):
    spec = load_toml(ROOT / "sweeps" / "eps_constant.toml")
    assert spec.agents[0].cells()["eps2_scale"].size >= 5 and len(spec.instance_seeds) >= 4
    small = SweepSpec.from_dict({**spec.to_dict(), "horizon": 20, "seeds": 3, "record_every": 10,
                                 "instance_seeds": [0, 1]})
    run_sweep(small, tmp_path / "eps", progress=False)
    assert cli.main(["plot", str(tmp_path / "eps"), "--hparam", "eps2_scale"]) == 0
    for name in ("regret.png", "final_regret.png", "regret_vs_eps2_scale.png", "regret_vs_eps2_scale.pdf"):
        assert (tmp_path / "eps" / name).stat().st_size > 1000
    # Every cell of the grid has its own colour and a readable name, in both figures.
    figs = figures(tmp_path / "eps")
    grid = [f"anytime-e2d (eps2_scale={c:g})" for c in spec.agents[0].cells()["eps2_scale"]]
    lines = {ln.get_label(): ln.get_color() for ln in figs["regret"].axes[0].get_lines()}
    legend = [t.get_text() for t in figs["regret"].axes[0].get_legend().get_texts()]
    assert legend == list(lines) == grid + ["ucb", "ts"]
    assert len(set(lines.values())) == len(lines)
    final = figs["final_regret"].axes[0]
    assert sorted(t.get_text() for t in final.get_yticklabels()) == sorted(legend)
    assert len({tuple(p.get_facecolor()[:3]) for p in final.patches}) == len(legend)


def test_sweep_file_builds_ucb_with_the_anytime_level(tmp_path):
    """``delta = "anytime"`` in an [[agents]] table, and the name ``ucb@anytime``, reach the agent;
    a numeric delta is a fixed number of the entry: a cell of UCB's program."""
    head = "env = 'semi-bandit-authors'\nhorizon = 10\nseeds = 2\n"
    path = tmp_path / "ucb.toml"
    path.write_text(head + "[[agents]]\nname = 'ucb'\n[[agents]]\nname = 'ucb'\nlabel = 'ucb-anytime'\n"
                    "delta = 'anytime'\n[[agents]]\nname = 'ucb@anytime'\n")

    def deltas(spec):
        out = {}
        for a in spec.agents:
            config = registry.agent_factory(a.name, horizon=spec.horizon, options=dict(a.options), family="linear")().config
            out[a.label] = {**dict(config.static), **dict(config.numbers)}["delta"]
        return out

    assert deltas(load_toml(path)) == {"ucb": 0.01, "ucb-anytime": "anytime", "ucb@anytime": "anytime"}
    shipped = load_toml(ROOT / "sweeps" / "ucb_delta.toml")
    assert deltas(shipped)["ucb-anytime"] == "anytime"
    path.write_text(head + "[[agents]]\nname = 'ucb'\n[[agents]]\nname = 'ucb'\nlabel = 'ucb-05'\ndelta = 0.05\n")
    programs = plan(load_toml(path), "linear", 64).programs
    assert [(p.label, p.numbers[:, p.program.names.index("delta")].tolist()) for p in programs] == [
        ("ucb+ucb-05", [0.01, 0.05])]


@pytest.mark.parametrize("text, needle", [
    ("env = 'semi-bandit'\nhorizon = 10\nseeds = 2\n", "agents"),
    ("env = 'semi-bandit'\nhorizon = 10\nseeds = 2\n[[agents]]\nname = 'ucb'\ncolour = 'red'\n",
     "agents\\[ucb\\]: unknown option colour \\(valid: delta, radius, reg"),
    ("env = 'semi-bandit'\nhorizon = 10\nseeds = 2\n[[agents]]\nname = 'anytime-e2d'\ndivergense = 'kl'\n",
     "unknown option divergense \\(did you mean 'divergence'\\?\\) \\(valid on finite models: .*; on linear "
     "models: eps2_schedule, eps2_scale, divergence, gap_type, solver, reg, solver_iters\\)"),
    ("env = 'semi-bandit'\nhorizon = 0\nseeds = 2\n[[agents]]\nname = 'ucb'\n", "horizon"),
    ("env = 'semi-bandit'\nhorizon = 10\nseeds = 2\nfoo = 1\n[[agents]]\nname = 'ucb'\n", "unknown field\\(s\\) \\['foo'\\]; valid: .*'instances'"),
    ("env = 'semi-bandit'\nhorizon = 10\nseeds = 2\n[[agents]]\nname = 'anytime-e2d'\ngrid = {eps2_scale = []}\n",
     "eps2_scale"),
])
def test_bad_sweep_files_name_the_field(tmp_path, text, needle):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=needle):
        load_toml(path)


def test_a_float64_sweep_is_refused_while_jax_runs_in_float32(tmp_path):
    """A spec with ``x64`` computes in float64 or not at all: with JAX's 64-bit types off, its
    instances would be float32 without a word, so the sweep is refused before anything runs."""
    spec = SweepSpec(env="semi-bandit", d=3, arms=4, agents=(SweepAgent.make("ts"),), horizon=5, seeds=2, x64=True)
    with jax.enable_x64(False):
        with pytest.raises(SweepError, match="x64: .*float32"):
            run_sweep(spec, tmp_path / "r", progress=False)
    assert not (tmp_path / "r").exists()
