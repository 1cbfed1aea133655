"""Figure 1's table of final regrets (:func:`e2d_jax.paper.figures.final_regret_table`), on
summaries written here: the figures of ``summary.json`` as mean [95% CI], rows in the order
the directories list the agents, a dash for an agent a directory lacks, the valid seeds where
some were left out."""
import json

import pytest

from e2d_jax.paper.figures import final_regret_table


def _summary(path, agents: dict):
    path.mkdir()
    cells = {label: {"final_regret_mean": mean, "final_regret_ci95": ci, "seeds": seeds, "seeds_invalid": invalid}
             for label, (mean, ci, seeds, invalid) in agents.items()}
    (path / "summary.json").write_text(json.dumps({"agents": cells}))
    return path


def test_final_regret_table(tmp_path):
    one = _summary(tmp_path / "exp1", {"anytime-e2d": (64.94, [63.61, 66.25], 1000, 0),
                                       "e2d-n2000": (74.46, [73.05, 75.94], 1000, 0),
                                       "ts": (51.2, [49.6, 52.7], 1000, 0)})
    two = _summary(tmp_path / "exp2", {"anytime-e2d": (63.6, [62.6, 64.6], 1000, 0),
                                       "e2d-n1000": (51.74, [50.46, 53.01], 999, 1),
                                       "ts": (73.4, [71.5, 75.3], 1000, 0)})
    assert final_regret_table({"Experiment 1 (d=3)": one, "Experiment 2 (d=30)": two}) == (
        "| agent | Experiment 1 (d=3) | Experiment 2 (d=30) |\n"
        "|---|---|---|\n"
        "| anytime-e2d | 64.9 [63.6, 66.2] | 63.6 [62.6, 64.6] |\n"
        "| e2d-n2000 | 74.5 [73.0, 75.9] | — |\n"
        "| ts | 51.2 [49.6, 52.7] | 73.4 [71.5, 75.3] |\n"
        "| e2d-n1000 | — | 51.7 [50.5, 53.0] (999 valid) |\n")


def test_final_regret_table_names_a_directory_without_results(tmp_path):
    with pytest.raises(ValueError, match=r"dirs\['exp1'\]: .* has no summary.json"):
        final_regret_table({"exp1": tmp_path})
