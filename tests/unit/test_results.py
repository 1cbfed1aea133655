"""The results object: what ``simulate`` returns answers with tables, figures and the command
line's files."""
import json

import jax
import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

import e2d_jax as e2d
from e2d_jax import cli

matplotlib.use("Agg")

HORIZON, SEEDS = 40, 6


@pytest.fixture(scope="module")
def sims():
    params = e2d.semi_bandit(e2d.instance_key(0), 3, 5)
    return [e2d.simulate(params, agent, horizon=HORIZON, num_seeds=SEEDS, record_every=10, label=label)
            for label, agent in (("anytime-e2d", e2d.anytime_e2d()), ("ts", e2d.thompson_sampling()))]


def test_summary_matches_the_per_seed_numbers(sims):
    summary = e2d.Results(sims).summary()
    assert list(summary["cell"]) == ["anytime-e2d", "ts"]
    for sim, (_, row) in zip(sims, summary.iterrows()):
        final = sim.final_regret.astype(np.float64)
        assert row["seeds"] == SEEDS and row["seeds_invalid"] == 0
        assert row["final_regret_mean"] == pytest.approx(final.mean(), rel=1e-6)
        half = 1.96 * final.std(ddof=1) / np.sqrt(SEEDS)
        assert row["ci95_low"] <= row["final_regret_mean"] <= row["ci95_high"]
        assert row["ci95_high"] - row["ci95_low"] == pytest.approx(2 * half, rel=0.3)  # t vs normal quantile
    status = np.asarray(sims[0].result.solver.status_counts)  # (S, statuses)
    flagged = status[:, e2d.Status.MAX_ITER].sum() / status.sum()
    assert summary.loc[0, "flagged_fraction"] == pytest.approx(flagged)
    assert 0 < summary.loc[0, "rel_gap_p50"] <= summary.loc[0, "rel_gap_p90"] <= summary.loc[0, "rel_gap_p99"]
    assert np.isnan(summary.loc[1, "flagged_fraction"])  # TS certifies nothing


def test_to_frame_has_one_row_per_seed(sims):
    frame = sims[0].to_frame()
    assert len(frame) == SEEDS
    np.testing.assert_array_equal(frame["seed"], np.arange(SEEDS))
    np.testing.assert_allclose(frame["final_regret"], sims[0].final_regret, rtol=1e-6)
    assert frame["valid"].all()
    assert (frame["ok_rounds"] + frame["max_iter_rounds"] <= HORIZON).all()
    assert [sum(c) for c in frame["action_counts"]] == [HORIZON] * SEEDS


def test_figures_are_matplotlib_figures(sims):
    results = e2d.Results(sims, name="mine")
    for fig in (results.plot(), results.plot_final(), e2d.Results(sims[1]).plot()):
        assert isinstance(fig, Figure)
        labels = [t.get_text() for ax in fig.axes for t in (ax.get_legend().get_texts() if ax.get_legend() else [])]
        assert labels or fig.axes[0].get_xticklabels()
    assert "mine" in results.plot().axes[0].get_title()


def test_walk_through_python_save_then_the_command_line_plots(sims, tmp_path):
    out = e2d.Results(sims, name="mine").save(tmp_path / "mine")
    table = pd.read_parquet(out / "results.parquet")
    pd.testing.assert_frame_equal(table, e2d.Results(sims).to_frame(), check_dtype=False)
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["agents"]) == {"anytime-e2d", "ts"} and summary["config"]["horizon"] == HORIZON
    assert cli.main(["plot", str(out)]) == 0
    for name in ("regret", "final_regret"):
        assert (out / f"{name}.png").stat().st_size > 0 and (out / f"{name}.pdf").exists()


def test_a_grid_over_instances_keeps_cells_and_instances(tmp_path):
    batch = jax.vmap(lambda k: e2d.semi_bandit(k, 2, 3))(e2d.instance_keys(range(2)))
    sim = e2d.simulate(batch, e2d.ucb, horizon=20, num_seeds=3, instances=True,
                       hparams=e2d.hparam_grid(delta=[0.01, 0.1]), label="ucb")
    frame = sim.to_frame()
    assert len(frame) == 2 * 2 * 3
    assert sorted(set(frame["cell"])) == ["ucb[delta=0.01]", "ucb[delta=0.1]"]
    assert sorted(set(frame["instance_seed"])) == [0, 1]
    summary = sim.summary()
    assert list(summary["hp_delta"]) == [0.01, 0.1] and list(summary["instances"]) == [2, 2]
    e2d.Results(sim).save(tmp_path / "grid", diagnostics=True)
    assert (tmp_path / "grid" / "diagnostics.npz").exists()


def test_results_need_distinct_labels(sims):
    with pytest.raises(ValueError, match="label"):
        e2d.Results([sims[0], sims[0]])
    renamed = e2d.Results({"a": sims[0], "b": sims[0]})
    assert [s.label for s in renamed] == ["a", "b"]
    with pytest.raises(ValueError, match="simulations"):
        e2d.Results([])
