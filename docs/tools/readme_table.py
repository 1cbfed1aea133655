"""Writes README.md's Figure 1 table from the results of an ``e2d-jax reproduce all`` run::

    python docs/tools/readme_table.py RUN_DIR [--readme README.md] [--check]

The table is :func:`e2d_jax.paper.figures.final_regret_table` of ``RUN_DIR/exp1`` and
``RUN_DIR/exp2`` (their ``summary.json``), a column each, titled by the experiment's d and
horizon; it replaces the lines between the README's markers ``<!-- figure1-table: ... -->``
and ``<!-- /figure1-table -->``. With ``--check`` nothing is written, and the exit status is
1 when the README's table differs. The caption above the table (seeds, conventions) is the
README's own: the script prints what the run used, to compare.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
BEGIN = "<!-- figure1-table: docs/tools/readme_table.py RUN_DIR writes it from a reproduce all run -->"
END = "<!-- /figure1-table -->"
EXPERIMENTS = {"exp1": "Experiment 1", "exp2": "Experiment 2"}


def table(run: pathlib.Path) -> tuple[str, list[str]]:
    """The table of ``run`` and one line per experiment on what the run used."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from e2d_jax.paper.figures import final_regret_table

    dirs, notes = {}, []
    for name, title in EXPERIMENTS.items():
        path = run / name / "summary.json"
        if not path.is_file():
            raise SystemExit(f"{run} is not the output of `e2d-jax reproduce all`: {path} is missing")
        summary = json.loads(path.read_text())
        cfg = summary["config"]
        dirs[f"{title} (d={cfg['d']}, n={cfg['horizon']:,})"] = run / name
        notes.append(f"{name}: {cfg['seeds']:,} seeds on instance seeds {cfg['instance_seeds']}, "
                     f"{summary['conventions']} conventions, e2d_jax {summary['versions']['e2d_jax']}")
    return final_regret_table(dirs), notes


def replace(readme: str, new_table: str) -> str:
    """``readme`` with the lines between the markers replaced by ``new_table``."""
    block = re.compile(rf"^{re.escape(BEGIN)}\n.*?^{re.escape(END)}$", re.S | re.M)
    if len(block.findall(readme)) != 1:
        raise SystemExit(f"the README must hold one table between {BEGIN} and {END}, each on a line of its own")
    return block.sub(lambda _: f"{BEGIN}\n{new_table}{END}", readme)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=pathlib.Path, help="the --out directory of `e2d-jax reproduce all`")
    parser.add_argument("--readme", type=pathlib.Path, default=ROOT / "README.md")
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    new_table, notes = table(args.run)
    print("\n".join(notes))
    text = args.readme.read_text()
    updated = replace(text, new_table)
    if args.check:
        print("the README's table is the run's" if updated == text else "the README's table differs from the run's")
        return 0 if updated == text else 1
    args.readme.write_text(updated)
    print(f"wrote the table into {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
