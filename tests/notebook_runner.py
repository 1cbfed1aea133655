"""Run one notebook's code cells top to bottom in one namespace, in order (what "Run all"
does), in this fresh process: ``python tests/notebook_runner.py NOTEBOOK``. A cell that raises
ends the run with its traceback and a non-zero exit status. Used by ``test_notebooks.py``."""
import json
import sys

if __name__ == "__main__":
    nb = json.loads(open(sys.argv[1]).read())
    namespace = {"__name__": "__main__"}
    for i, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        source = "".join(cell["source"])
        exec(compile(source, f"{sys.argv[1]}[cell {i}]", "exec"), namespace)
