"""Sweep throughput and peak memory: every linear agent against seeds, devices and executors.

What: ``run_sweep`` (what ``e2d-jax run`` calls) on the Experiment-1 instance (revealing
semi-bandit, d=3, K=10, float32), one agent at a time, for each number of seeds, XLA device
count (forced host devices on CPU; the GPUs of the machine otherwise) and executor (``local``,
or ``ray``: a local Ray instance with ``--ray-workers`` workers). Each configuration runs in a
fresh Python process, so its compile, its device count and its peak memory are its own.

How to read a row (JSON: one object per configuration under ``rows``):
  ``seed_rounds_per_s``  seeds x horizon / the simulate calls' run time summed over the units
                         (compile excluded; for ray the workers' run time, so Ray's overhead is
                         not in it);
  ``units_wall_s``       the driver's wall time of the units (with the compile; for ray also
                         Ray's start, the workers' start and their compiles);
  ``end_to_end_s``       the whole ``run_sweep`` call: instances, compile, units, tables;
  ``peak_rss_mib``       the driver process's peak resident memory (``ru_maxrss``) and, for
                         ray, ``workers_peak_rss_mib``: the largest sum of the Ray worker
                         processes' resident memory seen (sampled every 0.2 s).
The ``device`` field names the machine's JAX devices; compare rows of one run only (the
machine is shared and noisy).

Run:  python benchmarks/sweep_throughput.py [--agents ucb,ts,anytime-e2d,e2d] [--seeds 1,100,1000,10000]
      [--horizon 200] [--record-every 10] [--devices 1,2] [--executors local,ray] [--json out.json]
  quick check:  python benchmarks/sweep_throughput.py --agents ucb,anytime-e2d --seeds 4 --horizon 20 \\
                    --devices 1,2 --executors local

A memory check at scale (100,000 seeds of Exp. 1, n=2000, recorded every 10 rounds, UCB and
TS):  python benchmarks/sweep_throughput.py --agents ucb,ts --seeds 100000 --horizon 2000 \\
          --record-every 10 --devices 1 --executors local,ray

Typical printout (2-core shared x86-64 CPU, jax 0.10.2, e2d_jax 0.3.0, ``--agents
ucb,anytime-e2d,e2d --seeds 4 --horizon 20 --devices 1,2 --executors local``; at 4 seeds the
compile is most of the time, so the second device does not pay)::

    agent          seeds dev executor  seed-rounds/s end-to-end s compile s  peak MiB workers MiB
    ucb                4   1 local            16,890         11.8       5.9       521           0
    ucb                4   2 local            10,723          8.6       5.1       526           0
    anytime-e2d        4   1 local             3,611         18.4      13.9       644           0
    anytime-e2d        4   2 local             3,312         18.5      13.9       658           0
    e2d                4   1 local             3,346         20.1      14.4       621           0
    e2d                4   2 local             3,030         19.6      14.2       630           0
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time


def _worker(cfg: dict) -> dict:
    import jax

    from e2d_jax.experiments import SweepAgent, SweepSpec, run_sweep
    from e2d_jax.experiments.executors import make_executor

    agent = cfg["agent"] if cfg["agent"] != "e2d" else f"e2d-n{cfg['horizon']}"
    spec = SweepSpec(env="semi-bandit", d=3, arms=10, agents=(SweepAgent.make(agent),), horizon=cfg["horizon"],
                     seeds=cfg["seeds"], record_every=cfg["record_every"], name="bench")
    ex = make_executor(cfg["executor"], workers=cfg["ray_workers"] if cfg["executor"] == "ray" else None)
    peak_workers = [0.0]
    stop = threading.Event()
    if cfg["executor"] == "ray":
        import psutil

        def sample():
            while not stop.is_set():
                total = 0
                for p in psutil.process_iter(["cmdline", "memory_info"]):
                    cmd = " ".join(p.info["cmdline"] or [])
                    if "ray::" in cmd and p.info["memory_info"] is not None:
                        total += p.info["memory_info"].rss
                peak_workers[0] = max(peak_workers[0], total / 2**20)
                time.sleep(0.2)

        threading.Thread(target=sample, daemon=True).start()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        summary = run_sweep(spec, os.path.join(tmp, "out"), progress=False, executor=ex)
        end_to_end = time.perf_counter() - t0
    stop.set()
    cell = next(iter(summary["agents"].values()))
    run_s = summary["run_seconds_this_call"]
    # The units' simulate calls without their compile (what the chunk files record; the summary
    # gives their rate); for ray, the workers' own run time (Ray's overhead shows in
    # end_to_end_s and units_wall_s).
    sim_s = cfg["seeds"] * cfg["horizon"] / cell["seed_rounds_per_second"]
    out = dict(cfg, device=str(jax.devices()), n_devices=len(jax.devices()), end_to_end_s=end_to_end,
               units_wall_s=run_s, run_s=sim_s, compile_s=cell["compile_seconds"],
               seed_rounds_per_s=cfg["seeds"] * cfg["horizon"] / sim_s,
               final_regret_mean=cell["final_regret_mean"],
               peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    if cfg["executor"] == "ray":
        out["workers_peak_rss_mib"] = peak_workers[0]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agents", default="ucb,ts,anytime-e2d,e2d")
    ap.add_argument("--seeds", default="1,100,1000,10000")
    ap.add_argument("--horizon", type=int, default=200)
    ap.add_argument("--record-every", type=int, default=10)
    ap.add_argument("--devices", default="1,2")
    ap.add_argument("--executors", default="local,ray")
    ap.add_argument("--ray-workers", type=int, default=2)
    ap.add_argument("--json", default=None)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print("RESULT " + json.dumps(_worker(json.loads(args.worker))), flush=True)
        return
    report = {"platform": platform.platform(), "python": platform.python_version(), "rows": []}
    try:
        import jax

        import e2d_jax

        report.update(jax=jax.__version__, e2d_jax=e2d_jax.__version__)
    except ImportError:
        pass
    print(f"{'agent':12s} {'seeds':>7s} {'dev':>3s} {'executor':8s} {'seed-rounds/s':>14s} {'end-to-end s':>12s} "
          f"{'compile s':>9s} {'peak MiB':>9s} {'workers MiB':>11s}", flush=True)
    for agent in args.agents.split(","):
        for seeds in (int(s) for s in args.seeds.split(",")):
            for dev in (int(d) for d in args.devices.split(",")):
                for executor in args.executors.split(","):
                    cfg = dict(agent=agent, seeds=seeds, horizon=args.horizon, record_every=args.record_every,
                               executor=executor, ray_workers=args.ray_workers)
                    env = dict(os.environ)
                    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={dev}").strip()
                    proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps(cfg)], env=env,
                                          capture_output=True, text=True)
                    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
                    if proc.returncode != 0 or not lines:
                        print(f"{agent} {seeds} {dev} {executor}: failed: {proc.stderr.strip().splitlines()[-1:]}")
                        continue
                    row = json.loads(lines[-1][len("RESULT "):])
                    report["rows"].append(row)
                    report.setdefault("device", row["device"])
                    print(f"{agent:12s} {seeds:7d} {row['n_devices']:3d} {executor:8s} {row['seed_rounds_per_s']:14,.0f} "
                          f"{row['end_to_end_s']:12.1f} {row['compile_s']:9.1f} {row['peak_rss_mib']:9.0f} "
                          f"{row.get('workers_peak_rss_mib', 0):11.0f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
