"""The notebooks under notebooks/ run top to bottom against the installed package, at small
sizes: each notebook's ``parameters`` cell is replaced by the values below (as papermill
injects parameters) and its code cells run in a fresh Python process
(``tests/helpers/notebook_runner.py``: every code cell in one namespace, in order, what "Run
all" does), as a user's kernel would, with JAX's defaults (float32). A cell that raises, or a
crash of the process, fails the test with the notebook's output. Every notebook checks its own
claims (certificates bracket values, bounds hold) and prints what the test looks for.

The notebooks are stored with the outputs of a run at their own sizes, for the documentation,
which renders them without running them; each stored output must come from the code beside it
(no cell's source changed after its output was made: ``execution_count`` runs 1, 2, ...),
and names no file by a machine's absolute path.
"""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

RUNNER = pathlib.Path(__file__).parents[1] / "helpers" / "notebook_runner.py"
NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
SMALL = {
    "01_quickstart.ipynb": ("SEEDS, HORIZON = 8, 40", ("final regret", "bound holds: True")),
    "02_reproduce_paper.ipynb": ("import tempfile\nSEEDS, CONVENTIONS = 2, 'implementation'\nEXPERIMENTS = ('exp1',)\n"
                                 "OUT = tempfile.mkdtemp()", ("exp1 (implementation conventions", "final regret")),
    "03_dec_explorer.ipynb": ("EPS = [0.05, 0.2]\nMODELS = 8\nINSTANCES = 2", ("bound holds: True",
                                                                             "Table 1 bound holds: True")),
    "04_sensitivity.ipynb": ("import tempfile\nSIZES = {'sensitivity': (2, 2), 'candidates': (2, 2)}\nHORIZON = 20\n"
                             "CANDIDATES = ('semi-bandit',)\nDIR = tempfile.mkdtemp()",
                             ("Experiment 1 claim holds on", "Experiment 2 claim")),
    "05_real_data.ipynb": ("DATASET, SEEDS, HORIZON = 'iris', 4, 30", ("average reward", "every agent beats guessing")),
}
SLOW = {"02_reproduce_paper.ipynb", "03_dec_explorer.ipynb", "04_sensitivity.ipynb", "05_real_data.ipynb"}


def test_every_notebook_is_checked_and_stored_with_its_outputs():
    assert sorted(p.name for p in NOTEBOOKS) == sorted(SMALL)
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert sum("parameters" in c["metadata"].get("tags", []) for c in code) == 1, path.name
        assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1)), f"{path.name}: rerun it"
        assert any(c["outputs"] for c in code), f"{path.name}: stored without outputs"


#: An absolute path in printed text: a POSIX path of two or more parts that starts at the root
#: (not a URL, not a relative path, not a ratio such as d/t), a Windows drive path, a file URL.
ABSOLUTE_PATH = re.compile(r"(?<![\w.~:/\\])/(?:[\w.@+-]+/)+[\w.@+-]*|\b[A-Za-z]:\\[\w.]|file://")


def _output_texts(cell):
    """The text of a code cell's outputs (streams, text and JSON data, tracebacks; not images)."""
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            yield "".join(out["text"])
        elif out["output_type"] == "error":
            yield "\n".join([out["ename"], out["evalue"], *out["traceback"]])
        else:
            for mime, data in out.get("data", {}).items():
                if mime.endswith("json"):
                    yield json.dumps(data)
                elif mime.startswith("text/"):
                    yield data if isinstance(data, str) else "".join(data)


@pytest.mark.parametrize("text, found", [
    ("/home/ann/.venv/lib/tqdm/auto.py:21: TqdmWarning", "/home/ann/.venv/lib/tqdm/auto.py"),
    ("wrote (/tmp/tmpab12/exp1)", "/tmp/tmpab12/exp1"),
    ("saved to C:\\Users\\ann\\runs", "C:\\U"),
    ("see https://ipywidgets.readthedocs.io/en/stable/user_install.html", None),
    ("runs/notebook-reproduce/exp1 and ./runs/x/y", None),
    ("eps 0.05  dec / (2 eps sqrt K) = 0.39, d/t, r(1+log t)/t, 0.1 d/t", None),
])
def test_absolute_path_pattern(text, found):
    match = ABSOLUTE_PATH.search(text)
    assert (match.group(0) if match else None) == found


def test_stored_outputs_name_no_absolute_path():
    found = []
    for path in NOTEBOOKS:
        code = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        for i, cell in enumerate(code):
            for text in _output_texts(cell):
                found += [f"{path.name} cell {i + 1}: {m.group(0)!r}" for m in ABSOLUTE_PATH.finditer(text)]
    assert found == [], "stored outputs name paths of the machine that ran them (print paths relative to the " \
                        "working directory, or file names):\n" + "\n".join(found)


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW else p
                                  for p in NOTEBOOKS], ids=lambda p: p.name)
def test_notebook_runs(path):
    parameters, expected = SMALL[path.name]
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-X", "faulthandler", str(RUNNER), str(path), parameters],
                          capture_output=True, text=True, timeout=900, cwd=path.parents[1], env=env)
    assert proc.returncode == 0, f"{path.name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    for needle in expected:
        assert needle in proc.stdout, f"{path.name} did not print {needle!r}:\n{proc.stdout[-3000:]}"
