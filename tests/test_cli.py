import json
import os
import subprocess
import sys

import numpy as np
import pytest

from e2d_jax import cli


def test_run_writes_results_summary_and_plot(tmp_path):
    out = tmp_path / "run"
    rc = cli.main(["run", "--env", "semi-bandit", "--d", "3", "--arms", "5", "--horizon", "40",
                   "--seeds", "6", "--agents", "ucb,ts", "--record-every", "10", "--out", str(out)])
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    for name in ("ucb", "ts"):
        s = summary["agents"][name]
        assert s["seeds"] == 6
        lo, hi = s["final_regret_ci95"]
        assert lo <= s["final_regret_mean"] <= hi
        with np.load(out / f"{name}.npz") as z:
            assert z["regret"].shape == (6, 4)
            np.testing.assert_allclose(z["regret"][:, -1].mean(), s["final_regret_mean"], rtol=1e-6)
            assert z["action_counts"].sum() == 6 * 40
    assert summary["config"]["horizon"] == 40 and "jax" in summary["versions"]
    assert (out / "regret.png").stat().st_size > 1000
    # A second call reuses the stored results instead of recomputing them.
    before = (out / "ucb.npz").stat().st_mtime_ns
    assert cli.main(["run", "--env", "semi-bandit", "--d", "3", "--arms", "5", "--horizon", "40",
                     "--seeds", "6", "--agents", "ucb", "--record-every", "10", "--out", str(out)]) == 0
    assert (out / "ucb.npz").stat().st_mtime_ns == before


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
])
def test_bad_input_exits_2_naming_argument(args, needle, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--out", str(tmp_path / "x"), *args])
    assert exc.value.code == 2
    assert needle in capsys.readouterr().err


def test_console_script_entry_point(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "e2d_jax.cli", "run", "--horizon", "10", "--agents", "nope",
                           "--out", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "--agents" in proc.stderr


def test_default_shards_over_cores_with_identical_results(tmp_path):
    """The CLI splits the CPU into one XLA device per core by default; the per-seed results
    equal those of a single-device run (--host-devices 1) exactly. Each run is a fresh process
    (the device count is fixed when JAX starts) that reports 2 cores."""
    base = [sys.executable, "-c",
            "import os, sys; os.cpu_count = lambda: 2; from e2d_jax.cli import main; sys.exit(main(sys.argv[1:]))",
            "run", "--env", "semi-bandit", "--d", "3", "--arms", "5", "--horizon", "30", "--seeds", "5",
            "--agents", "ts", "--record-every", "10"]
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    runs = {}
    for label, extra in (("default", []), ("one", ["--host-devices", "1"])):
        out = tmp_path / label
        proc = subprocess.run(base + ["--out", str(out), *extra], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        runs[label] = (json.loads((out / "summary.json").read_text()), np.load(out / "ts.npz")["regret"])
    assert runs["default"][0]["device"] == ["cpu:0", "cpu:1"]
    assert runs["one"][0]["device"] == ["cpu:0"]
    np.testing.assert_array_equal(runs["default"][1], runs["one"][1])
