"""Wall time of ``e2d-jax reproduce EXPERIMENT`` with a cold compilation cache, checkouts side by side.

What: runs ``e2d-jax reproduce EXPERIMENT --seeds S`` (default ``exp1``, 100 seeds) with JAX's
persistent compilation cache off (``E2D_JAX_CACHE_DIR=off``), as a user's first run of the
day, for every arm in turn and ``--repeats`` times (arms interleaved, so a before/after pair
shares the machine's state), and reports per arm the median wall time with its range, the
speed-up of each arm against the first one, and, per agent, the final regret with its 95% CI
(from the run's ``summary.json``). Then, for every agent present in two arms' tables,
whether the per-seed results (``final_regret`` and ``action_counts`` of ``results.parquet``)
are the same bits.

Arms: ``LABEL=ROOT`` or ``LABEL=ROOT|EXTRA ARGS`` (e.g. ``"fast=.|--solver fast"``); ROOT is a
checkout, run with ``PYTHONPATH=ROOT`` by this interpreter (``--python`` overrides) through
``e2d_jax.cli.entry``, the console script's function.

Run:  python benchmarks/reproduce_wall.py before=PATH/TO/OLD after=. ["after-fast=.|--solver fast"]
          [--experiment exp1] [--seeds 100] [--repeats 3] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def _arm(text):
    label, _, rest = text.partition("=")
    root, _, extra = rest.partition("|")
    if not label or not root:
        raise argparse.ArgumentTypeError(f"an arm is LABEL=ROOT or LABEL=ROOT|ARGS, got {text!r}")
    return label, Path(root).resolve(), shlex.split(extra)


def run_once(python, root, experiment, seeds, extra, out):
    env = dict(os.environ, PYTHONPATH=str(root), E2D_JAX_CACHE_DIR="off")
    env.pop("XLA_FLAGS", None)
    cmd = [python, "-c", "from e2d_jax.cli import entry; entry()", "reproduce", experiment, "--seeds", str(seeds),
           "--out", str(out), "--quiet", *extra]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall


def summaries(out):
    rows = {}
    for path in sorted(Path(out).rglob("summary.json")):
        for label, cell in json.loads(path.read_text())["agents"].items():
            rows[label] = (cell["final_regret_mean"], *cell["final_regret_ci95"])
    return rows


def tables(out):
    frames = [pd.read_parquet(p) for p in sorted(Path(out).rglob("results.parquet"))]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def same_bits(a, b, label):
    key = ["instance_seed", "seed"]
    x = a[a["cell"] == label].sort_values(key).reset_index(drop=True)
    y = b[b["cell"] == label].sort_values(key).reset_index(drop=True)
    if len(x) == 0 or len(x) != len(y):
        return None
    return bool(np.array_equal(x["final_regret"].to_numpy(), y["final_regret"].to_numpy())
                and np.array_equal(np.stack(x["action_counts"]), np.stack(y["action_counts"])))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("arms", nargs="+", type=_arm)
    parser.add_argument("--experiment", default="exp1")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    walls = {label: [] for label, _, _ in args.arms}
    last = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeats):
            for label, root, extra in args.arms:
                out = Path(tmp) / f"{label}-{rep}"
                wall = run_once(args.python, root, args.experiment, args.seeds, extra, out)
                walls[label].append(wall)
                last[label] = out
                print(f"rep {rep} {label:14s} {wall:7.1f} s", flush=True)
        regrets = {label: summaries(out) for label, out in last.items()}
        frames = {label: tables(out) for label, out in last.items()}
    first = args.arms[0][0]
    print("\nmedian wall (range), speed-up against", first)
    for label in walls:
        med = statistics.median(walls[label])
        print(f"  {label:14s} {med:7.1f} s ({min(walls[label]):.1f}-{max(walls[label]):.1f})"
              f"  x{statistics.median(walls[first]) / med:.2f}")
    agents = sorted({a for r in regrets.values() for a in r}, key=lambda a: list(regrets[first]).index(a)
                    if a in regrets[first] else 99)
    print("\nfinal regret, mean [95% CI]")
    for agent in agents:
        cells = "  ".join(f"{label}: " + (f"{r[agent][0]:.2f} [{r[agent][1]:.2f}, {r[agent][2]:.2f}]" if agent in r else "-")
                          for label, r in regrets.items())
        print(f"  {agent:12s} {cells}")
    bits = {}
    labels = list(walls)
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            for agent in agents:
                same = same_bits(frames[a], frames[b], agent)
                if same is not None:
                    bits[f"{a} vs {b}: {agent}"] = same
    print("\nper-seed bits identical")
    for k, v in bits.items():
        print(f"  {k}: {v}")
    if args.json:
        meta = dict(date=time.strftime("%Y-%m-%d"), machine=platform.platform(), cpus=os.cpu_count(),
                    experiment=args.experiment, seeds=args.seeds, repeats=args.repeats,
                    arms={label: dict(root=str(root), extra=extra) for label, root, extra in args.arms})
        Path(args.json).write_text(json.dumps(dict(meta=meta, walls=walls, regrets=regrets, bits=bits), indent=1))


if __name__ == "__main__":
    main()
