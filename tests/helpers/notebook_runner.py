"""Run one notebook's code cells top to bottom in one namespace, in order (what "Run all"
does), in this fresh process: ``python notebook_runner.py NOTEBOOK [PARAMETERS]``.

``PARAMETERS`` (Python source) replaces the notebook's cell tagged ``parameters``, as
papermill injects parameters, so a test runs the notebook at small sizes. A cell that raises
ends the run with its traceback and a non-zero exit status. Used by ``test_notebooks.py``.
"""
import json
import sys

if __name__ == "__main__":
    nb = json.loads(open(sys.argv[1]).read())
    parameters = sys.argv[2] if len(sys.argv) > 2 else None
    namespace = {"__name__": "__main__"}
    for i, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        source = "".join(cell["source"])
        if parameters is not None and "parameters" in cell.get("metadata", {}).get("tags", []):
            source = parameters
        exec(compile(source, f"{sys.argv[1]}[cell {i}]", "exec"), namespace)
