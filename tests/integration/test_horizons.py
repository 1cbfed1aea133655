"""``reproduce horizons`` end to end through the command line, in-process, at a tiny size: both
environments' sweeps, the report (printed, Markdown and JSON) checked against the stored
per-seed tables, and the figure. The default run takes three of the five agents (the two
others add the most compile time and nothing to the path through the command); the slow run
takes all five."""
import json

import numpy as np
import pytest

from e2d_jax import cli
from e2d_jax.experiments import storage
from e2d_jax.paper import horizons


def _check(out, printed, agents):
    assert "## end-of-optimism" in printed and "## semi-bandit" in printed and "exponent on [n/10, n]" in printed
    report = json.loads((out / "horizons.json").read_text())
    assert list(report) == list(horizons.ENVIRONMENTS)
    for env, stored in report.items():
        assert stored["config"]["horizon"] == 200 and stored["config"]["seeds"] == 4
        rows = {r["agent"]: r for r in stored["agents"]}
        assert list(rows) == list(agents)
        table = storage.read_table(out / f"horizons-{env}")
        curves = storage.read_curves(out / f"horizons-{env}")
        assert curves["rounds"][-1] == 200 and np.sum(curves["rounds"] >= 20) == 181
        for agent, r in rows.items():
            finals = table.loc[table["cell"] == agent, "final_regret"].to_numpy()
            assert r["seeds"] == 4 and r["final"] == pytest.approx(finals.mean(), rel=1e-6)
            assert r["final_lo"] <= r["final"] <= r["final_hi"]
            assert r["window"] == [20, 200]
            assert np.isfinite([r["exponent"], r["exponent_lo"], r["exponent_hi"]]).all()
            assert r["exponent_lo"] <= r["exponent_hi"]
            assert np.isfinite([r["before"], r["before_lo"], r["before_hi"]]).all()  # [2, 20]: 19 rounds
            below = r["e2d_below_from"]
            assert below is None if agent == "anytime-e2d" else below is None or below in curves["rounds"]
    assert (out / "horizons.md").read_text().count("| anytime-e2d |") == 2
    assert (out / "horizons.png").stat().st_size > 10_000 and (out / "horizons.pdf").exists()


def test_reproduce_horizons_writes_the_report_and_figure(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(horizons, "AGENTS", ("anytime-e2d", "ucb", "ts"))
    out = tmp_path / "horizons"
    assert cli.main(["reproduce", "horizons", "--horizon", "200", "--seeds", "4", "--out", str(out), "--quiet"]) == 0
    _check(out, capsys.readouterr().out, ("anytime-e2d", "ucb", "ts"))


@pytest.mark.slow
def test_reproduce_horizons_with_every_agent(tmp_path, capsys):
    out = tmp_path / "horizons"
    assert cli.main(["reproduce", "horizons", "--horizon", "200", "--seeds", "4", "--out", str(out), "--quiet"]) == 0
    _check(out, capsys.readouterr().out, horizons.AGENTS)
