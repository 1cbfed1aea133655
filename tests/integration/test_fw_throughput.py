"""``benchmarks/fw_throughput.py`` on the base install: without cvxpy (an optional reference
oracle) its quick mode still prints every solver's rows, and says the references were skipped."""
import importlib.util
import math
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _benchmark():
    spec = importlib.util.spec_from_file_location("fw_throughput", ROOT / "benchmarks" / "fw_throughput.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_mode_runs_without_the_reference_oracles(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cvxpy", None)  # `import cvxpy` raises ImportError
    bench = _benchmark()
    report = bench.main(["--quick", "--solvers", "fw-offset"])
    out = capsys.readouterr().out

    assert "reference oracles: skipped (cvxpy is not installed" in out
    assert "reference checks: skipped (cvxpy is not installed" in out
    assert report["meta"]["references"] is None and report["references"] == []
    lines = out.splitlines()
    rows = report["rows"]
    # --quick runs each solver's default budget, and its rows say so.
    assert [(r["solver"], r["budget"], r["batch"]) for r in rows] == [("fw-offset", "default", 1),
                                                                     ("fw-offset", "default", 10)]
    assert sum(line.startswith("fw-offset      default") for line in lines) == 2
    for r in rows:
        assert r["shape"] == "exp1" and r["problems"] == 10
        assert r["solves_per_s"] > 0 and r["compile_s"] > 0
        assert 0.0 <= r["ok"] <= 1.0 and math.isfinite(r["gap_p50"]) and r["gap_p50"] >= 0.0
        # The default stops each problem at its tolerance, within its budget; a vmapped loop
        # runs as long as the batch's slowest problem.
        budget = bench.solver_table()["fw-offset"][2]["default"].maxiter
        assert 0 < r["it_mean"] <= r["it_batch"] <= budget
    # The NumPy baseline needs no optional package.
    assert [r["program"] for r in report["numpy"]] == ["offset", "acdec"]
