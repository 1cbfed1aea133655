"""What one Anytime-E2D round executes: XLA thunks per round, by loop, from a profiler trace.

What: builds the rollout that ``simulate`` compiles for a case of ``compile_time.py``
(``exp1``, ``exp2``, ``finite-mab``, ``finite-revealing``; Anytime-E2D with the command
line's options, ``--lanes`` = 64 seeds per call, one device, float32), runs it once to warm
up, then once for ``--horizon`` rounds (a multiple of the rollout's ``KEY_BLOCK``, so that every
round runs the same copy of the loop body) under ``jax.profiler.trace`` and reads the trace back
with ``jax.profiler.ProfileData``. XLA's CPU runtime records every thunk it executes (a fusion,
a dot, a copy, a library call, a loop) as one event, so the trace gives the *executed*
operations, where ``compile_time.py`` counts the program's text (a loop body once):

  thunks/round    leaf thunks executed per round (loops themselves left out);
  by trip count   how many distinct thunks run once a round, ten times a round (the
                  mirror-prox steps of the linear agents), ... with their share of the thunks;
  busiest         the thunks with the most time in the trace (profiled time, inflated by
                  the profiler's own cost; for ranking only).

The JSON keeps the wall time of the profiled call, which is mostly the profiler's own cost:
speed is measured by ``cli_two_horizon.py`` (through the command line, versions alternated).

Run:  python benchmarks/round_profile.py [--cases exp1,exp2] [--horizon 256] [--top 12] [--json OUT]

Typical printout (2-core shared x86-64 CPU, jax 0.10.2, e2d_jax 0.3.0, ``--top 6``;
``results/cpu-2core/round_profile.log``)::

    exp1: 1,013 thunks/round (64 lanes, 256 rounds)
      executed 0x a round: 141 thunks (7 a round, 1%)
      executed 1x a round: 236 thunks (236 a round, 23%)
      executed 5x a round: 32 thunks (160 a round, 16%)
      executed 10x a round: 61 thunks (610 a round, 60%)
        ...
    exp2: 1,951 thunks/round (64 lanes, 256 rounds)
      ...
      executed 10x a round: 128 thunks (1,280 a round, 66%)

On the linear shapes the thunks executed ten times a round are the mirror-prox steps and those
executed five times the round's two random draws (JAX's threefry runs as a loop of five on CPU);
those run less than once a round derive the round keys of 32 rounds at a time.
"""
import argparse, collections, glob, json, os, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax

import compile_time as ct


def profile_case(case: str, horizon: int, lanes: int, top: int) -> dict:
    env, params, agent, make, version = ct._build(case, horizon, "squared")
    fn, args = make(env, agent, params, horizon, horizon, lanes, jax.devices()[0])
    compiled = fn.lower(*args).compile()
    jax.block_until_ready(compiled(*args))
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        with jax.profiler.trace(tmp):
            jax.block_until_ready(compiled(*args))
        wall = time.perf_counter() - t0
        path = glob.glob(os.path.join(tmp, "**", "*.xplane.pb"), recursive=True)[0]
        data = jax.profiler.ProfileData.from_file(path)
    count, total = collections.Counter(), collections.Counter()
    for plane in data.planes:
        for line in plane.lines:
            if "XLAEigen" not in line.name and "XLAPjRtCpu" not in line.name:
                continue  # XLA's CPU threads only (not Python's)
            for event in line.events:
                name = event.name
                if name.startswith(("ThunkExecutor", "ThreadpoolListener", "end:", "while")):
                    continue  # executor bookkeeping and loops (their bodies' thunks count)
                count[name] += 1
                total[name] += event.duration_ns
    per_round = {name: n / horizon for name, n in count.items()}
    by_trips = collections.defaultdict(list)
    for name, n in per_round.items():
        by_trips[round(n)].append(name)
    thunks = sum(per_round.values())
    return {
        "case": case, "lanes": lanes, "horizon": horizon, "version": version, "wall_profiled_s": wall,
        "thunks_per_round": thunks,
        "by_trip_count": {str(k): {"distinct": len(v), "per_round": sum(per_round[n] for n in v)}
                          for k, v in sorted(by_trips.items())},
        "busiest": [{"name": n, "per_round": per_round[n], "profiled_ms": total[n] / 1e6}
                    for n, _ in total.most_common(top)],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="exp1,exp2")
    ap.add_argument("--horizon", type=int, default=256)
    ap.add_argument("--lanes", type=int, default=64)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    from e2d_jax.sim.rollout import KEY_BLOCK
    if args.horizon <= 0 or args.horizon % KEY_BLOCK:
        ap.error(f"--horizon must be a positive multiple of {KEY_BLOCK} (the rollout's KEY_BLOCK), got {args.horizon}")
    out = []
    for case in args.cases.split(","):
        r = profile_case(case, args.horizon, args.lanes, args.top)
        out.append(r)
        print(f"{case}: {r['thunks_per_round']:,.0f} thunks/round ({r['lanes']} lanes, {r['horizon']} rounds)")
        for trips, v in r["by_trip_count"].items():
            if v["per_round"] >= 1:
                print(f"  executed {trips}x a round: {v['distinct']} thunks ({v['per_round']:,.0f} a round, "
                      f"{v['per_round'] / r['thunks_per_round']:.0%})")
        for b in r["busiest"]:
            print(f"    {b['name']:40s} {b['per_round']:6.1f}/round {b['profiled_ms']:8.2f} ms profiled")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
