"""The notebooks under notebooks/ run top to bottom against the installed package.

Each code cell is executed in one namespace, in order (what "Run all" does); a cell that
raises fails the test. The quickstart checks its own claims with asserts (the certificate
brackets the value).
"""
import json
import pathlib

import pytest

NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_is_a_notebook():
    assert NOTEBOOKS, "notebooks/ should hold at least the quickstart"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, capsys):
    nb = json.loads(path.read_text())
    namespace = {"__name__": "__main__"}
    for i, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        source = "".join(cell["source"])
        exec(compile(source, f"{path.name}[cell {i}]", "exec"), namespace)
    out = capsys.readouterr().out
    assert "final regret" in out and "bound holds: True" in out
