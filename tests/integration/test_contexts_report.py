"""``e2d-jax reproduce contexts`` end to end at a tiny size: a synthetic family and a dataset,
the report's tables (final regret, and on real data the average reward), its JSON and figure,
and the flags that do not apply refused."""
import json

import pytest

pytest.importorskip("sklearn")

from e2d_jax.cli import main as cli_main  # noqa: E402
from e2d_jax.paper import contexts  # noqa: E402


def test_reproduce_contexts_writes_the_report(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(contexts, "AGENTS", ("ucb", "squarecb"))
    out = tmp_path / "contexts"
    code = cli_main(["reproduce", "contexts", "--families", "contextual-authors,iris", "--seeds", "3",
                     "--horizon", "12", "--out", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    report = json.loads((out / "contexts.json").read_text())
    assert list(report) == ["contextual-authors", "iris"]
    for family, rows in report.items():
        assert [r["agent"] for r in rows] == ["ucb", "squarecb"] and all(r["seeds"] == 3 for r in rows)
        for r in rows:
            assert r["final_lo"] <= r["final"] <= r["final_hi"]
            if family == "iris":  # mistakes out of 12 rounds, and the share of right labels
                assert 0 <= r["final"] <= 12 and r["reward"] == pytest.approx(1 - r["final"] / 12)
            else:
                assert r["reward"] is None
    text = (out / "contexts.md").read_text()
    assert "## iris" in text and "average reward" in text
    assert (out / "contexts.png").stat().st_size > 10_000 and (out / "contexts.pdf").exists()


def test_reproduce_contexts_refuses_what_does_not_apply(tmp_path, capsys):
    for flags, name in ((["--families", "iris,nope"], "--families"), (["--instances", "3"], "--instances")):
        with pytest.raises(SystemExit) as exit_:
            cli_main(["reproduce", "contexts", *flags, "--out", str(tmp_path / "x")])
        assert exit_.value.code == 2 and name in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_the_shipped_contexts_sweep_file_is_one_program_per_agent():
    import pathlib

    from e2d_jax.experiments import load_toml
    from e2d_jax.experiments.spec import plan

    spec = load_toml(pathlib.Path(__file__).resolve().parents[2] / "sweeps" / "squarecb_gamma.toml")
    assert spec.env == "data-wine" and dict(spec.env_options) == {"dims": 8}
    programs = plan(spec, "linear", 64).programs
    assert [(p.label, p.num_cells) for p in programs] == [("squarecb", 5), ("epsilon-greedy", 3), ("anytime-e2d", 1)]
