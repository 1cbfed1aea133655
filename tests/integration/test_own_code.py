"""The docs' walk-through of 'Your own problem' and 'Your own agent', end to end: the example
files of ``docs/examples`` used from Python, registered by name, and given as
``module:attribute`` to a sweep file, ``e2d-jax run`` and ``e2d-jax plot``."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import jax
import numpy as np
import pandas as pd
import pytest

import procs

import e2d_jax as e2d
from e2d_jax import cli
from e2d_jax.cli import main as cli_main
from e2d_jax.experiments import SweepSpec, load_toml, registry, run_sweep

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "docs" / "examples"


@pytest.fixture()
def workdir(tmp_path, monkeypatch):
    for name in ("my_problem.py", "my_agents.py", "my_sweep.toml", "my_contexts.py"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "ENVIRONMENTS", dict(registry.ENVIRONMENTS))
    monkeypatch.setattr(registry, "AGENTS", dict(registry.AGENTS))
    return tmp_path


def test_python_then_registered_names(workdir):
    import my_agents
    import my_problem

    params = my_problem.sensor_bandit(e2d.instance_key(0))
    batch = jax.vmap(my_problem.sensor_bandit)(e2d.instance_keys(range(3)))  # traceable in the key
    assert batch.model.features.shape == (3, 5, 4)
    sim = e2d.simulate(params, my_agents.epsilon_greedy(eps0=1.0), horizon=60, num_seeds=8)
    assert e2d.valid_seeds(sim.result).all()
    grid = e2d.simulate(params, my_agents.epsilon_greedy, horizon=60, num_seeds=8, hparams={"eps0": [0.3, 3.0]})
    assert grid.result.regret.shape[:2] == (2, 8)
    e2d_run = e2d.simulate(params, e2d.anytime_e2d(), horizon=60, num_seeds=8)
    assert np.isfinite(e2d_run.result.regret).all()
    registry.register_env("sensor-bandit", my_problem.sensor_bandit, family="linear", help="the docs' example")
    registry.register_agent("eps-greedy", my_agents.epsilon_greedy, help="the docs' example")
    spec = SweepSpec.from_dict({"env": "sensor-bandit", "horizon": 40, "seeds": 4, "instance_seeds": [0, 1],
                                "agents": [{"name": "eps-greedy", "grid": {"eps0": [0.5, 2.0]}}]})
    summary = run_sweep(spec, workdir / "named", progress=False)
    assert set(summary["agents"]) == {"eps-greedy[eps0=0.5]", "eps-greedy[eps0=2]"}


def test_sweep_file_cli_and_plot(workdir):
    spec = load_toml(workdir / "my_sweep.toml")
    assert spec.env == "my_problem:sensor_bandit" and dict(spec.env_options) == {} and spec.d == 4
    env = procs.cli_env()
    env["PYTHONPATH"] = os.pathsep.join([str(workdir)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    cli = [sys.executable, "-m", "e2d_jax.cli"]
    small = ["--host-devices", "1", "--quiet"]
    toml = (workdir / "my_sweep.toml").read_text().replace("horizon = 300", "horizon = 40").replace("seeds = 64",
                                                                                                       "seeds = 6")
    (workdir / "small.toml").write_text(toml)
    swept = subprocess.run(cli + ["sweep", "small.toml", "--out", "runs/own", *small], cwd=workdir, env=env,
                           capture_output=True, text=True)
    assert swept.returncode == 0, swept.stderr[-3000:]
    table = pd.read_parquet(workdir / "runs/own/results.parquet")
    assert set(table["cell"]) == {"epsilon_greedy[eps0=0.3]", "epsilon_greedy[eps0=3]", "anytime-e2d", "ucb"}
    assert len(table) == 4 * 3 * 6 and table["valid"].all()
    summary = json.loads((workdir / "runs/own/summary.json").read_text())
    cell = summary["agents"]["epsilon_greedy[eps0=0.3]"]
    assert cell["instances"] == 3 and cell["seeds_per_instance"] == 6 and len(cell["instance_means"]) == 3
    assert cli_main(["plot", "runs/own", "--hparam", "eps0"]) == 0  # in this process: it only draws the tables
    for name in ("regret", "final_regret", "regret_vs_eps0"):
        for suffix in ("png", "pdf"):
            assert (workdir / "runs/own" / f"{name}.{suffix}").stat().st_size > 1000
    ran = subprocess.run(cli + ["run", "--env", "my_problem:sensor_bandit", "--agents", "my_agents:epsilon_greedy,ucb",
                                "--horizon", "30", "--seeds", "4", "--out", "runs/run", *small], cwd=workdir, env=env,
                         capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "epsilon_greedy" in json.loads((workdir / "runs/run/summary.json").read_text())["agents"]


def test_a_contextual_bandit_of_ones_own(workdir, capsys):
    """The docs' contextual example (a continuous context, some arms offered each round): from
    Python, every agent plays only offered arms; from the command line by module:attribute."""
    import my_contexts

    params = my_contexts.rotating_arms(e2d.instance_key(0), arms=5)
    for agent in (e2d.anytime_e2d(), e2d.ucb(), e2d.squarecb()):
        sim = e2d.simulate(params, agent, horizon=40, num_seeds=4)
        assert int(np.asarray(sim.result.invalid_rounds).sum()) == 0
    code = cli_main(["run", "--env", "my_contexts:rotating_arms", "--arms", "5", "--agents", "ucb,epsilon-greedy",
                     "--horizon", "30", "--seeds", "4", "--out", "runs/contexts"])
    assert code == 0, capsys.readouterr().err
    table = pd.read_parquet(workdir / "runs/contexts/results.parquet")
    assert set(table["cell"]) == {"ucb", "epsilon-greedy"} and table["valid"].all()


def test_bad_user_code_is_named(workdir, capsys):
    (workdir / "broken.py").write_text("def build(key, d=3):\n    return 42\n\n"
                                       "def agent(*, eps0=1.0):\n    return 'not an agent'\n")
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--env", "broken:build", "--agents", "ucb", "--horizon", "5", "--out", "x"])
    assert exc.value.code == 2 and "must return LinearEnvParams or FiniteEnvParams" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--env", "my_problem:sensor_bandit", "--agents", "broken:agent", "--horizon", "5",
                  "--out", "y"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--agents[agent]: the factory 'agent' must return an e2d_jax.Agent, got str" in err
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--env", "my_problem:nope", "--horizon", "5", "--out", "z"])
    assert exc.value.code == 2 and "module 'my_problem' has no attribute 'nope'" in capsys.readouterr().err
    (workdir / "broken_contexts.py").write_text(
        "import numpy as np\nfrom e2d_jax.envs import contextual\n\n"
        "def no_action(key):\n    return contextual.from_contexts(np.ones((2, 3, 2)), np.ones(2), "
        "available=np.array([[True, True, False], [False, False, False]]))\n\n"
        "def not_finite(key):\n    return contextual.from_contexts(np.full((2, 3, 2), np.nan), np.ones(2))\n")
    for builder, needle in (("no_action", "available: context 1 offers no action"),
                            ("not_finite", "features must be finite")):
        with pytest.raises(SystemExit) as exc:
            cli.main(["run", "--env", f"broken_contexts:{builder}", "--agents", "ucb", "--horizon", "5", "--out", "w"])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    assert not any((workdir / name).exists() for name in ("x", "y", "z", "w"))
