"""The command line: what it writes, the flags it takes and how it refuses bad input."""
import argparse
import dataclasses
import errno
import json
import os
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import procs

import e2d_jax
from e2d_jax import _checks as V
from e2d_jax import _files, cli
from e2d_jax.agents.e2d import anytime_e2d
from e2d_jax.cli import commands as cli_commands
from e2d_jax.cli.commands import build_parser, host_device_count, parse_host_devices, to_flags, usable_cores
from e2d_jax.experiments import figures, provenance, registry, runner
from e2d_jax.paper import presets


def test_run_writes_results_summary_and_plot(tmp_path):
    out = tmp_path / "run"
    args = ["run", "--env", "semi-bandit", "--d", "3", "--arms", "5", "--horizon", "40",
            "--seeds", "6", "--agents", "ucb,ts", "--record-every", "10", "--out", str(out)]
    assert cli.main(args) == 0
    summary = json.loads((out / "summary.json").read_text())
    table = pd.read_parquet(out / "results.parquet")
    curves = np.load(out / "curves.npz")
    assert curves["regret"].shape == (12, 4) and list(curves["rounds"]) == [10, 20, 30, 40]
    for name in ("ucb", "ts"):
        s = summary["agents"][name]
        assert s["seeds"] == 6
        lo, hi = s["final_regret_ci95"]
        assert lo <= s["final_regret_mean"] <= hi
        rows = table[table["agent"] == name]
        np.testing.assert_allclose(rows["final_regret"].mean(), s["final_regret_mean"], rtol=1e-6)
        assert np.stack(rows["action_counts"]).sum() == 6 * 40
    assert summary["config"]["horizon"] == 40 and "jax" in summary["versions"]
    for fig in ("regret.png", "final_regret.png", "regret.pdf", "final_regret.pdf"):
        assert (out / fig).stat().st_size > 1000
    # The chunks were collected into the tables and removed; a second identical call finds the
    # finished results and leaves them as they are.
    assert not (out / "chunks").exists() and json.loads((out / "manifest.json").read_text())["complete"]
    before = (out / "results.parquet").stat().st_mtime_ns
    assert cli.main(args) == 0
    assert (out / "results.parquet").stat().st_mtime_ns == before
    # The test process never switches JAX's persistent cache on (see conftest).
    assert jax.config.jax_compilation_cache_dir is None


def test_run_takes_ucb_with_the_anytime_level(tmp_path):
    """``--agents ucb,ucb@anytime``: both run, under their own names, with different levels."""
    out = tmp_path / "run"
    assert cli.main(["run", "--env", "semi-bandit-authors", "--d", "3", "--arms", "5", "--horizon", "30",
                     "--seeds", "4", "--agents", "ucb,ucb@anytime", "--record-every", "30", "--quiet",
                     "--out", str(out)]) == 0
    cells = json.loads((out / "summary.json").read_text())["agents"]
    assert set(cells) == {"ucb", "ucb@anytime"} and all(c["seeds"] == 4 for c in cells.values())
    assert cells["ucb"]["final_regret_mean"] != cells["ucb@anytime"]["final_regret_mean"]


@pytest.mark.parametrize("value, expected", [("off", "None"), ("OFF", "None"), ("{tmp}", "{tmp}")])
def test_cache_dir_env_sets_or_turns_off_the_persistent_cache(tmp_path, value, expected):
    code = ("import e2d_jax; e2d_jax.enable_compilation_cache(); import jax; "
            "print(jax.config.jax_compilation_cache_dir)")
    env = dict(os.environ, E2D_JAX_CACHE_DIR=value.format(tmp=tmp_path / "c"))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == expected.format(tmp=tmp_path / "c")


@pytest.mark.parametrize("args, needle", [
    (["--horizon", "0"], "--horizon"),
    (["--horizon", "-5"], "--horizon"),
    (["--horizon", "10", "--seeds", "0"], "--seeds"),
    (["--horizon", "10", "--arms", "1"], "--arms"),
    (["--horizon", "10", "--sigma", "0"], "--sigma"),
    (["--horizon", "10", "--sigma", "-1"], "--sigma"),
    (["--horizon", "10", "--d", "0"], "--d"),
    (["--horizon", "10", "--agents", "ucb,nope"], "--agents"),
    (["--horizon", "10", "--env", "nope"], "--env"),
    (["--horizon", "10", "--agents", "ucb@3"], "--agents"),
    (["--horizon", "10", "--env", "finite-mab", "--d", "3"], "--d"),
    (["--horizon", "10", "--env", "semi-bandit", "--models", "3"], "--models"),
    (["--horizon", "10", "--agents", "ucb,ts", "--divergence", "kl"], "--divergence"),
    (["--horizon", "10", "--agents", "e2d,ts", "--eps2-schedule", "rank"], "--eps2-schedule"),
    (["--horizon", "10", "--agents", "ucb", "--solver", "paper"], "--solver"),
])
def test_bad_input_exits_2_naming_argument(args, needle, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--out", str(tmp_path / "x"), *args])
    assert exc.value.code == 2
    assert needle in capsys.readouterr().err


def test_version_defaults_and_default_agents(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"e2d-jax {e2d_jax.__version__}"
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        text = command.format_help()
        for action in command._actions:
            if action.option_strings and action.default not in (None, False, argparse.SUPPRESS) and action.help:
                assert f"(default: {action.default})" in " ".join(text.split()), (name, action.option_strings)
        assert "(default: None)" not in " ".join(text.split()), name
    args = parser.parse_args(["run", "--horizon", "5", "--out", "x"])
    assert args.agents == "anytime-e2d,e2d,ucb,ts"


def test_help_tells_where_results_go_without_out():
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    out_help = {name: next(" ".join(a.help.split()) for a in command._actions if "--out" in a.option_strings)
                for name, command in sub.choices.items() if name != "plot"}
    assert "(default: runs/NAME, NAME the sweep file's name" in out_help["sweep"]
    assert "(default: runs/reproduce)" in out_help["reproduce"]
    assert "default" not in out_help["run"]  # required


def test_library_messages_are_translated_into_flags():
    """The library's errors carry the arguments they name as data: the command line writes its
    flags for the names a command sets by flags, whatever the message's wording."""
    err = V.ArgumentError("out", f"x holds an unfinished run (3 units to go): {V.name('resume', 'resume=True')} "
                                 f"continues it, {V.name('overwrite', 'overwrite=True')} starts over")
    assert str(err) == "out: x holds an unfinished run (3 units to go): resume=True continues it, overwrite=True " \
                       "starts over"
    assert to_flags(err) == "--out: x holds an unfinished run (3 units to go): --resume continues it, --overwrite " \
                            "starts over"
    reworded = V.ArgumentError("out", f"to continue, say {V.name('resume', 'resume=True')}")
    assert to_flags(reworded) == "--out: to continue, say --resume"
    assert to_flags(V.ArgumentError("chunk_size", f"fewer seeds per unit ({V.name('chunk_size')})")) == \
        "fewer seeds per unit (--batch-size)"
    # A sweep's fields come from its file: only the flags of the sweep command are translated.
    agents = V.ArgumentError("divergence", f"{V.name('agents')}[ucb]: unknown option {V.name('divergence')}")
    assert to_flags(agents) == "--agents[ucb]: unknown option --divergence"
    assert to_flags(agents, "sweep") == "agents[ucb]: unknown option divergence"
    assert to_flags(V.ArgumentError("out", "x exists and is not a directory"), "sweep") == \
        "--out: x exists and is not a directory"
    # Errors the library raises go through the same path.
    with pytest.raises(V.ArgumentError) as exc:
        registry.resolve_env("nope")
    assert exc.value.argument == "env" and to_flags(exc.value).startswith("--env: unknown environment 'nope'")
    assert to_flags(ValueError("plain message")) == "plain message"


def test_console_script_entry_point(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "e2d_jax.cli", "run", "--horizon", "10", "--agents", "nope",
                           "--out", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "--agents" in proc.stderr


def test_console_script_prints_version_help_and_errors_once(tmp_path):
    """The console script reads --host-devices before JAX starts without printing or exiting:
    the version, a help text and an error are each printed once, by the command line itself."""
    cases = {
        "version": (["--version"], 0, "out", f"e2d-jax {e2d_jax.__version__}"),
        "help": (["run", "--help"], 0, "out", "usage: e2d-jax run"),
        "error": (["run", "--horizon", "0", "--host-devices", "2", "--out", str(tmp_path / "x")], 2, "err",
                  "e2d-jax run: error: --horizon"),
    }
    procs_ = {name: subprocess.Popen([sys.executable, "-m", "e2d_jax.cli", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=procs.cli_env())
              for name, (args, *_) in cases.items()}
    for name, (args, code, stream, needle) in cases.items():
        out, err = procs_[name].communicate(timeout=120)
        assert procs_[name].returncode == code, (name, err)
        text = {"out": out, "err": err}[stream]
        assert text.count(needle) == 1 and (out + err).count(needle) == 1, (name, out, err)
    assert err.count("error:") == 1 and "--horizon must be > 0" in err
    # One line naming the flag and the way to the help, without the usage block first.
    assert err.strip().count("\n") == 0 and "usage:" not in err and "e2d-jax run --help" in err


def test_host_devices_shard_with_identical_results(tmp_path):
    """--host-devices 2 splits the CPU into two XLA devices; per-seed results equal those of a
    one-device run exactly (70 seeds: more than one device's 64 lanes, so both devices run).
    The default (auto) is one device per usable core (on a two-core machine the auto run is the
    two-device run). Each run is a fresh process (the device count is fixed when JAX starts)."""
    base = [sys.executable, "-m", "e2d_jax.cli", "run", "--env", "semi-bandit", "--d", "3", "--arms", "5",
            "--horizon", "30", "--seeds", "70", "--agents", "ts", "--record-every", "10"]
    env = procs.cli_env()
    runs = {}
    cases = [("one", ["--host-devices", "1"]), ("auto", [])]
    if usable_cores() != 2:
        cases.append(("two", ["--host-devices", "2"]))
    for label, extra in cases:
        out = tmp_path / label
        proc = subprocess.run(base + ["--out", str(out), *extra], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        runs[label] = (json.loads((out / "summary.json").read_text()), pd.read_parquet(out / "results.parquet"))
    assert runs["one"][0]["device"] == ["cpu:0"]
    runs.setdefault("two", runs["auto"])
    assert runs["two"][0]["device"] == ["cpu:0", "cpu:1"]
    assert runs["auto"][0]["device"] == [f"cpu:{i}" for i in range(usable_cores())]
    pd.testing.assert_frame_equal(runs["one"][1], runs["two"][1])
    pd.testing.assert_frame_equal(runs["one"][1], runs["auto"][1])


def test_host_devices_argument():
    """'auto' or a positive integer; anything else is exit-2 input naming the flag; auto is one
    device with the ray executor (its tasks spread over the cores)."""
    assert parse_host_devices("auto") == "auto" and parse_host_devices("3") == 3
    for bad in ("0", "-1", "two"):
        with pytest.raises(argparse.ArgumentTypeError, match="--host-devices"):
            parse_host_devices(bad)
    ns = argparse.Namespace
    assert host_device_count(ns(host_devices="auto", executor="local")) == usable_cores()
    assert host_device_count(ns(host_devices="auto", executor="ray")) == 1
    assert host_device_count(ns(host_devices=3, executor="ray")) == 3


def test_small_run_on_four_host_devices(tmp_path):
    """1 seed on 4 host devices needs more padding than there are seeds."""
    env = procs.cli_env()
    proc = subprocess.run([sys.executable, "-m", "e2d_jax.cli", "run", "--env", "semi-bandit", "--horizon", "10",
                           "--seeds", "1", "--host-devices", "4", "--agents", "ts", "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["device"] == ["cpu:0", "cpu:1", "cpu:2", "cpu:3"]
    assert summary["agents"]["ts"]["seeds"] == 1


def _strict_json(path):
    """summary.json read as strict JSON (NaN and Infinity refused)."""
    def refuse(constant):
        raise ValueError(f"{path} holds {constant}, which is not JSON")
    return json.loads(path.read_text(), parse_constant=refuse)


def test_nonfinite_seeds_exit_3_and_are_left_out(tmp_path, capsys, monkeypatch):
    """A schedule that turns to 0 after the checked first values makes rounds non-finite; the
    run must not look good: exit status 3, a message, seeds_invalid, and the mean over valid
    seeds only (null when none is valid)."""
    monkeypatch.setattr(registry, "AGENTS", dict(registry.AGENTS))
    registry.register_agent("bad-e2d", lambda: anytime_e2d(eps2_schedule=lambda t: jnp.where(t > 10, 0.0, 1.0 / t)))
    out = tmp_path / "bad"
    rc = cli.main(["run", "--env", "semi-bandit", "--horizon", "20", "--seeds", "3", "--agents", "bad-e2d,ts",
                   "--out", str(out)])
    assert rc == 3
    err = capsys.readouterr().err
    assert "INVALID SEEDS" in err and "bad-e2d: 3 of 3 (non-finite decisions: 3)" in err
    summary = _strict_json(out / "summary.json")
    assert summary["agents"]["bad-e2d"]["seeds_invalid"] == 3 and summary["agents"]["bad-e2d"]["seeds"] == 0
    assert summary["agents"]["bad-e2d"]["final_regret_mean"] is None
    assert summary["agents"]["ts"]["seeds_invalid"] == 0 and summary["agents"]["ts"]["seeds"] == 3


ALWAYS_OUT_OF_RANGE = """
import jax.numpy as jnp
from e2d_jax import ActInfo, Agent, Status


def always_99():  # action 99 whatever the number of actions
    return Agent(init=lambda key, model: jnp.zeros((), jnp.int32),
                 act=lambda key, state, model: (jnp.int32(99), state, ActInfo(status=jnp.int32(Status.OK))),
                 update=lambda state, action, obs, model: state)
"""


@pytest.mark.parametrize("agents", ["bad_agents:always_99", "bad_agents:always_99,ucb"])
def test_agent_without_a_valid_seed_is_reported_and_named_in_the_figures(agents, tmp_path, capsys, monkeypatch):
    """An agent whose every seed plays outside [0, K): the table is printed, exit status 3 with
    the reason, summary.json stays strict JSON (null means), and the figures name the agent
    instead of drawing it, beside an agent with valid seeds or alone."""
    (tmp_path / "bad_agents.py").write_text(ALWAYS_OUT_OF_RANGE)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "run"
    # The sizes of the first run of this file (UCB's compiled program is shared).
    rc = cli.main(["run", "--env", "semi-bandit", "--d", "3", "--arms", "5", "--horizon", "40", "--seeds", "6",
                   "--agents", agents, "--record-every", "10", "--quiet", "--out", str(out)])
    printed = capsys.readouterr()
    assert rc == 3
    assert "always_99: 6 of 6 (actions outside [0, K): 6)" in printed.err
    assert "No valid seed in always_99" in printed.err and "ucb" not in printed.err
    table_lines = [line.split() for line in printed.out.splitlines()]
    assert ["always_99", "-", "-", "0", "valid", "of", "6"] == next(t for t in table_lines if t[:1] == ["always_99"])[:7]
    summary = _strict_json(out / "summary.json")
    cell = summary["agents"]["always_99"]
    assert cell["seeds"] == 0 and cell["seeds_invalid"] == 6 and cell["invalid_reasons"]["invalid_action"] == 6
    assert cell["final_regret_mean"] is None and cell["final_regret_ci95"] == [None, None]
    assert cell["final_regret_std"] is None and cell["instance_means"] == [None]
    for name in ("regret.png", "final_regret.png"):
        assert (out / name).stat().st_size > 1000
    figs = figures.figures(out)
    legend = [t.get_text() for t in figs["regret"].axes[0].get_legend().get_texts()]
    assert "always_99: no valid seeds" in legend
    final_ax = figs["final_regret"].axes[0]
    assert [t.get_text() for t in final_ax.get_yticklabels()][0] == "always_99"
    assert "no valid seeds" in [t.get_text() for t in final_ax.texts]
    if "ucb" in agents:
        assert "ucb" in legend and summary["agents"]["ucb"]["seeds"] == 6
        assert len(final_ax.patches) == 1  # ucb's box
    else:
        assert any("nothing to draw" in t.get_text() for t in figs["regret"].axes[0].texts)
        assert not final_ax.patches


GRID_SWEEP = """
name = "grid"
env = "semi-bandit"
d = 3
arms = 5
horizon = 40
seeds = 6
record_every = 10

[[agents]]
name = "my_agents:epsilon_greedy"
grid = { eps0 = [0.3, 3.0] }

[[agents]]
name = "ucb"
"""


def test_table_prints_the_speed_once_per_agent(tmp_path, capsys, monkeypatch):
    """The cells of a grid run in one compiled call: the table prints that call's seed-rounds/s
    once, on the agent's first cell, under a header that says so, with a note."""
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).resolve().parents[2] / "docs" / "examples"))
    (tmp_path / "grid.toml").write_text(GRID_SWEEP)
    out = tmp_path / "grid"
    assert cli.main(["sweep", str(tmp_path / "grid.toml"), "--out", str(out), "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.strip().startswith("cell"))
    assert header.endswith(cli_commands.RATE_HEADER) and cli_commands.RATE_HEADER.endswith("(per call)")
    rows = {line.split()[0]: line for line in lines if line.startswith("  ") and not line.strip().startswith(("cell", "("))}
    summary = json.loads((out / "summary.json").read_text())
    first, second = "epsilon_greedy[eps0=0.3]", "epsilon_greedy[eps0=3]"
    rate = summary["agents"][first]["seed_rounds_per_second"]
    assert rate == summary["agents"][second]["seed_rounds_per_second"]
    assert rows[first].endswith(f"{rate:,.0f}") and len(rows[first]) == len(header)
    assert len(rows[second]) <= len(header) - len(cli_commands.RATE_HEADER)  # nothing in the rate column
    assert rows["ucb"].endswith(f"{summary['agents']['ucb']['seed_rounds_per_second']:,.0f}")
    assert any("the cells of an agent's grid, and agents that differ only in numbers" in line for line in lines)
    assert {summary["agents"][c]["program"] for c in (first, second)} == {"epsilon_greedy"}


def test_summary_reports_solver_statistics(tmp_path):
    out = tmp_path / "e2d"
    # The sizes of the first run of this file (UCB's compiled program is shared).
    assert cli.main(["run", "--env", "semi-bandit", "--d", "3", "--arms", "5", "--horizon", "40", "--seeds", "4",
                     "--agents", "anytime-e2d,ucb", "--record-every", "10", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    solver = summary["agents"]["anytime-e2d"]["solver"]
    assert 0.0 <= solver["flagged_fraction"] <= 1.0
    assert solver["rel_gap_p50"] <= solver["rel_gap_p90"] <= solver["rel_gap_p99"]
    assert solver["rel_gap_p90"] <= solver["rel_gap_p90_max_over_seeds"]
    assert summary["agents"]["ucb"]["solver"]["rel_gap_p50"] is None
    assert summary["agents"]["ucb"]["solver"]["flagged_fraction"] is None  # UCB certifies nothing
    table = pd.read_parquet(out / "results.parquet")
    rows = table[table["agent"] == "anytime-e2d"]
    assert len(rows) == 4 and np.all(rows["ok_rounds"] + rows["max_iter_rounds"] == 40)


def test_results_of_other_code_are_not_reused(tmp_path, monkeypatch, capsys):
    """The digest that decides reuse covers the library version and source."""
    args = ["run", "--env", "semi-bandit", "--d", "3", "--arms", "5", "--horizon", "40", "--seeds", "2", "--agents",
            "ucb", "--record-every", "10", "--out", str(tmp_path / "r")]
    assert cli.main(args) == 0
    assert cli.main(args) == 0  # same code: reused
    monkeypatch.setattr(provenance, "source_digest", lambda: "other-code")
    with pytest.raises(SystemExit) as exc:  # other code: refused, saying so
        cli.main(args)
    assert exc.value.code == 2
    assert "different configuration" in capsys.readouterr().err
    assert cli.main(args + ["--overwrite"]) == 0
    assert json.loads((tmp_path / "r" / "manifest.json").read_text())["code"].endswith("+other-code")


def test_unwritable_or_file_out_is_one_line_exit_2(tmp_path, capsys):
    """--out naming a file, or a place that cannot be created, ends in one line (no traceback)."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    blocked = afile / "sub"  # a directory under a regular file cannot be created
    for out in (afile, blocked):
        with pytest.raises(SystemExit) as exc:
            cli.main(["run", "--horizon", "5", "--seeds", "2", "--out", str(out)])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert "--out" in err or str(afile) in err


@pytest.mark.parametrize("args, needle", [
    (["sensitivity", "--solver", "paper"], "--solver"),
    (["exp1", "--families", "end-of-optimism"], "--families"),
    (["zoo", "--families", "end-of-optimism,nope"], "--families"),
    (["zoo", "--families", ","], "--families"),
    (["exp1", "--horizon", "500"], "--horizon"),
    (["linear-bounds", "--horizon", "500"], "--horizon"),
])
def test_reproduce_refuses_flags_that_do_not_apply(args, needle, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["reproduce", *args, "--out", str(tmp_path / "r")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_too_large_a_problem_is_refused_before_allocating(tmp_path, capsys):
    """--arms 100000 on the semi-bandit would need ~240 GiB (K^2 d observation rows): the
    estimate (from shapes only) refuses it in one line naming what to change."""
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--env", "semi-bandit", "--arms", "100000", "--horizon", "5", "--seeds", "2",
                  "--out", str(tmp_path / "big")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "GiB" in err and "--arms" in err and "--batch-size" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "big").exists()  # nothing was written


def test_memory_estimate_scales_with_the_unit():
    spec = presets.experiment_spec("exp1")
    big = runner.estimate_memory(spec)  # 100 seeds a unit
    small = runner.estimate_memory(dataclasses.replace(spec, chunk_size=10))
    assert 0 < small["unit"] < big["unit"]
    runner.check_memory(spec)  # the paper's experiment fits this machine
    with pytest.raises(runner.SweepError, match="GiB"):
        runner.check_memory(spec, available=big["total"] // 2)


def test_parts_of_a_run_then_plot_collects(tmp_path, capsys):
    """`--part I/N` runs disjoint parts into one directory; the last part writes the tables;
    executor-only flags without `--executor ray` are refused."""
    out = tmp_path / "parts"
    base = ["run", "--env", "semi-bandit", "--d", "3", "--arms", "5", "--horizon", "20", "--seeds", "6",
            "--agents", "ucb,ts", "--record-every", "10", "--quiet", "--out", str(out)]
    assert cli.main(base + ["--part", "1/2"]) == 0
    assert "part 1/2 ran 1 units; 1 of 2 units" in capsys.readouterr().out
    assert not (out / "results.parquet").exists()
    assert cli.main(base + ["--part", "2/2"]) == 0
    assert (out / "results.parquet").exists() and (out / "regret.png").exists()
    assert not (out / "chunks").exists()  # the last part collected the chunks into the tables
    assert cli.main(["plot", str(out)]) == 0
    assert json.loads((out / "summary.json").read_text())["agents"]["ts"]["seeds"] == 6
    for flags, needle in ((["--part", "3/2"], "--part"), (["--workers", "2"], "--workers")):
        with pytest.raises(SystemExit) as exc:
            cli.main(base + flags)
        assert exc.value.code == 2 and needle in capsys.readouterr().err


def test_full_disk_is_one_line_keeps_finished_chunks_and_resumes(tmp_path, capsys, monkeypatch):
    """No space left while writing: exit status 1 and one line (no traceback), no temporary
    or half-written file left, the chunks finished before it kept; ``--resume`` after space
    is freed gives the results of an uninterrupted run."""
    def args(out):
        return ["run", "--env", "semi-bandit", "--d", "3", "--arms", "5", "--horizon", "20", "--seeds", "6",
                "--agents", "ucb,ts", "--record-every", "10", "--out", str(out)]

    out = tmp_path / "run"
    real_fsync, calls = os.fsync, []

    def full_after_first_chunk(fd):
        calls.append(fd)
        if len(calls) > 4:  # the manifest and the first chunk (file and directory each) fit
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(_files.os, "fsync", full_after_first_chunk)
    with pytest.raises(SystemExit) as exc:
        cli.main(args(out))
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert "no space left" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")], "a temporary file was left"
    assert not (out / "results.parquet").exists()
    kept = sorted(p.relative_to(out) for p in (out / "chunks").rglob("*.npz"))
    assert len(kept) == 1
    np.load(out / kept[0])  # complete and readable
    monkeypatch.undo()
    assert cli.main(args(out) + ["--resume"]) == 0
    assert cli.main(args(tmp_path / "clean")) == 0
    resumed, clean = (pd.read_parquet(d / "results.parquet") for d in (out, tmp_path / "clean"))
    np.testing.assert_array_equal(resumed["final_regret"].to_numpy(), clean["final_regret"].to_numpy())


def test_reproduce_x64_computes_every_sweep_in_float64():
    """``reproduce ... --x64`` makes every sweep of the reproduction a float64 one; horizons is
    float64 without it."""
    def specs(*argv):
        return cli_commands._reproduce_specs(build_parser().parse_args(["reproduce", *argv]))

    assert [s.x64 for s in specs("all")] == [False, False]
    assert [s.x64 for s in specs("all", "--x64")] == [True, True]
    assert all(s.dtype == "float64" for s in specs("horizons", "--horizon", "100"))
