"""The notebooks under notebooks/ run top to bottom against the installed package, at tiny
sizes (``E2D_JAX_NOTEBOOK_SMALL=1``, which each notebook reads in its first code cell).

Each notebook runs in a fresh Python process (``tests/notebook_runner.py``: every code cell
in one namespace, in order, what "Run all" does), as a user's kernel would, with JAX's
defaults (float32); a cell that raises, or a crash of the process, fails the test with the
notebook's output. Every notebook checks its own claims (certificates bracket values,
bounds hold) and prints what the test looks for; outputs are stored stripped.
"""
import json
import os
import pathlib
import subprocess
import sys

import pytest

RUNNER = pathlib.Path(__file__).with_name("notebook_runner.py")
NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
EXPECT = {
    "01_quickstart.ipynb": ("final regret", "bound holds: True"),
    "02_reproduce_paper.ipynb": ("exp1 (implementation conventions", "final regret"),
    "03_dec_explorer.ipynb": ("bound holds: True", "Table 1 bound holds: True"),
    "04_sensitivity.ipynb": ("Experiment 1 claim holds on", "Experiment 2 claim"),
}


def test_every_notebook_is_checked_and_stripped():
    assert sorted(p.name for p in NOTEBOOKS) == sorted(EXPECT)
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"), f"{path.name}: outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path):
    env = dict(os.environ, E2D_JAX_NOTEBOOK_SMALL="1", MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-X", "faulthandler", str(RUNNER), str(path)], capture_output=True,
                          text=True, timeout=900, cwd=path.parents[1], env=env)
    assert proc.returncode == 0, f"{path.name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    for needle in EXPECT[path.name]:
        assert needle in proc.stdout, f"{path.name} did not print {needle!r}:\n{proc.stdout[-3000:]}"
