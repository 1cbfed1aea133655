"""``reproduce zoo`` end to end on a tiny size: one fixed linear instance and one random
finite game, swept, drawn and reduced to the report, whose medians are checked against the
stored per-seed table."""
import json

import numpy as np
import pandas as pd
import pytest

from e2d_jax.experiments import run_sweep, storage
from e2d_jax.experiments.figures import draw as draw_figures
from e2d_jax.paper import zoo


@pytest.mark.slow
def test_zoo_sweeps_report_and_figures(tmp_path):
    families = ["large-gaps", "apple-tasting"]
    for spec in zoo.specs(instances=2, seeds=4, horizon=40, families=families):
        summary = run_sweep(spec, tmp_path / spec.name, progress=False)
        assert all(cell["seeds_invalid"] == 0 for cell in summary["agents"].values())
        draw_figures(tmp_path / spec.name)
        assert (tmp_path / spec.name / "regret.png").stat().st_size > 0
    md = zoo.write_report(tmp_path).read_text()
    tables = json.loads((tmp_path / "zoo.json").read_text())
    assert set(tables) == set(families)
    assert "## apple-tasting — locally observable" in md and "## large-gaps" in md
    for family in families:
        report = zoo.family_report(tmp_path / f"zoo-{family}")
        expected_agents = [a.label for a in zoo.agents(family)]
        assert sorted(report["agent"]) == sorted(expected_agents)
        results = pd.read_parquet(tmp_path / f"zoo-{family}" / storage.TABLE)
        per_instance = results.groupby(["cell", "instance_seed"])["final_regret"].mean()

        for row in report.itertuples():
            means = per_instance.loc[row.agent].to_numpy()
            assert row.instances == (1 if family == "large-gaps" else 2)
            assert row.median == pytest.approx(float(np.median(means)), rel=1e-6)
            assert np.isfinite(row.growth) and row.growth > 0
            if row.agent != "anytime-e2d":
                assert 0.0 <= row.e2d_lower_95 <= row.e2d_lower <= 1.0
