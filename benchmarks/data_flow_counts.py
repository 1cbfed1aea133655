"""How often a sweep computes its plan and reads its chunk files, on any checkout.

What: runs one small sweep (``run_sweep``: semi-bandit d=3, K=5, Anytime-E2D with a grid of
two eps2 scales and TS, two instances, 10 seeds in chunks of 4, n = 30) three times in one
process: fresh, then again on the finished directory (a resume that finds every unit done),
then with ``overwrite``; and counts, per pass, the calls of the experiment layer's functions
that expand a sweep (``units``, ``plan``, ``instance_shapes``, ``agent_factories``; a name a
checkout lacks counts 0) and how many times each chunk file is opened (``numpy.load`` and
``open`` of a path under ``chunks/``). A profiler hook counts the calls, so nothing in the
library is changed.

Run:  PYTHONPATH=CHECKOUT python benchmarks/data_flow_counts.py [--json OUT]
"""
from __future__ import annotations

import argparse
import builtins
import collections
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

WATCHED = ("units", "plan", "instance_shapes", "agent_factories")


def count_pass(fn):
    calls = collections.Counter()
    opens = collections.Counter()

    def profiler(frame, event, arg):
        if event == "call":
            code = frame.f_code
            if code.co_name in WATCHED and "e2d_jax" in code.co_filename:
                calls[code.co_name] += 1

    real_load, real_open = np.load, builtins.open

    def chunk(file):
        text = str(getattr(file, "name", file))
        return text.partition("chunks")[2] if "chunks" in text else None

    def load(file, *a, **k):
        if chunk(file):
            opens[chunk(file)] += 1
        return real_load(file, *a, **k)

    def opener(file, *a, **k):
        if chunk(file):
            opens[chunk(file)] += 1
        return real_open(file, *a, **k)

    np.load, builtins.open = load, opener
    sys.setprofile(profiler)
    try:
        fn()
    finally:
        sys.setprofile(None)
        np.load, builtins.open = real_load, real_open
    return dict(calls={k: calls.get(k, 0) for k in WATCHED},
                chunk_files=len(opens), chunk_opens=sum(opens.values()),
                opens_per_chunk=sorted(set(opens.values())))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    import e2d_jax
    from e2d_jax.experiments.runner import run_sweep
    from e2d_jax.experiments.spec import SweepAgent, SweepSpec

    spec = SweepSpec(env="semi-bandit", d=3, arms=5, horizon=30, seeds=10, record_every=10, chunk_size=4,
                     instance_seeds=(0, 1),
                     agents=(SweepAgent.make("anytime-e2d", {}, {"eps2_scale": [0.3, 1.0]}), SweepAgent.make("ts")))
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep"
        rows["fresh"] = count_pass(lambda: run_sweep(spec, out, progress=False))
        rows["finished, again"] = count_pass(lambda: run_sweep(spec, out, progress=False))
        rows["overwrite"] = count_pass(lambda: run_sweep(spec, out, overwrite=True, progress=False))
    print(f"e2d_jax from {Path(e2d_jax.__file__).parent}")
    for name, row in rows.items():
        print(f"{name:16s} calls {row['calls']}  chunk files opened {row['chunk_files']}, "
              f"{row['chunk_opens']} opens (per file: {row['opens_per_chunk']})")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
