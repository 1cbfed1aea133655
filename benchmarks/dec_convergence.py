"""Do the DEC functions finish at their defaults? Status, certified gap and time per solve on
random problems.

Every public DEC function (``linear_acdec``, ``linear_offset_dec``, ``finite_acdec``,
``finite_offset_dec``) is called as a user calls it, at its default options, on random
problems of the sizes the library is made for:

* linear: the revealing semi-bandit and the plain linear bandit, (d, K) in a fixed set with
  d <= 30, K <= 20, a random reference f_hat (norm about 1), both gap types, eps^2
  log-uniform in [1e-3, 1] (ac-DEC) or lambda log-uniform in [0.1, 100] (offset);
* finite: Gaussian and Bernoulli bandit classes with up to 50 models and 10 actions, the
  reference model a random member, both gap types, the same eps^2 and lambda ranges.

A solve *meets* the target when its status is ``OK`` and its certified relative gap is
<= 1e-3, or its absolute gap <= 1e-5 (the float32 floor where the value is near 0). Times are
per solve after the first call of each shape (which compiles), on this machine.

Run::

    python benchmarks/dec_convergence.py [--problems 36] [--seed 0] [--x64] [--out FILE.json]

Typical printout (2-core x86-64 VM, jax 0.10.2, float32)::

    function            gap      n   OK   meets  rel gap p50 / p90 / max     s/solve p50 / max
    linear_acdec        delta_f 36  1.00  1.00   3.1e-04 / 8.7e-04 / 9.9e-04  0.02 / 0.31
    ...
"""
from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

LINEAR_SHAPES = [(2, 3), (3, 10), (5, 20), (10, 10), (20, 5), (30, 10), (30, 20)]
FINITE_SHAPES = [(2, 5), (3, 10), (5, 30), (8, 20), (10, 50)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, default=36, help="problems per function and gap type")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--x64", action="store_true", help="float64 problems")
    parser.add_argument("--only", default=None, help="comma-separated functions to run")
    parser.add_argument("--out", default=None, help="write the rows and the table as JSON")
    args = parser.parse_args(argv)

    import jax

    if args.x64:
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    import e2d_jax as e2d
    from e2d_jax.envs import finite as fe

    dtype = jnp.float64 if args.x64 else jnp.float32
    rng = np.random.default_rng(args.seed)
    only = set(args.only.split(",")) if args.only else None
    rows, seen = [], set()

    def record(fn, gap_type, shape, res, seconds, param, model=None):
        value, gap = float(res.value), float(res.gap)
        rel = gap / max(abs(value), 1e-30)
        ok = int(res.status) == 0
        # A compile per distinct array shapes of the model (a semi-bandit and a linear bandit of
        # one (d, K) observe differently shaped outcomes), not only per (d, K).
        shapes = tuple(np.shape(x) for x in jax.tree_util.tree_leaves(model)) if model is not None else ()
        key = (fn, gap_type, shape, shapes)
        compiled = key not in seen
        seen.add(key)
        rows.append(dict(function=fn, gap_type=gap_type, shape=list(shape), param=param, status=int(res.status),
                         value=value, gap=gap, rel_gap=rel, ok=ok, meets=ok and (rel <= 1e-3 or gap <= 1e-5),
                         seconds=seconds, first_of_shape=compiled))

    def timed(call):
        t0 = time.perf_counter()
        res = call()
        jax.block_until_ready(res.value)
        return res, time.perf_counter() - t0

    for i in range(args.problems):
        d, k = LINEAR_SHAPES[i % len(LINEAR_SHAPES)]
        key = jax.random.key(int(rng.integers(1 << 30)))
        maker = e2d.semi_bandit if rng.random() < 0.5 else e2d.linear_bandit
        params = maker(key, d, k, dtype=dtype)
        f_hat = jnp.asarray(rng.normal(size=d) / np.sqrt(d), dtype)
        eps2 = float(10 ** rng.uniform(-3, 0))
        lam = float(10 ** rng.uniform(-1, 2))
        for gap_type in ("delta_f", "delta"):
            if not only or "linear_acdec" in only:
                res, s = timed(lambda: e2d.linear_acdec(params.model, f_hat, eps2, gap_type=gap_type))
                record("linear_acdec", gap_type, (d, k), res, s, eps2, params.model)
            if not only or "linear_offset_dec" in only:
                res, s = timed(lambda: e2d.linear_offset_dec(params.model, f_hat, lam, gap_type=gap_type))
                record("linear_offset_dec", gap_type, (d, k), res, s, lam, params.model)
        k, m = FINITE_SHAPES[i % len(FINITE_SHAPES)]
        key = jax.random.key(int(rng.integers(1 << 30)))
        if rng.random() < 0.5:
            cls = fe.multi_armed_bandit_class(key, k, m, dtype=dtype)
        else:
            cls = fe.bernoulli_bandit_class(key, k, m, dtype=dtype)
        f = int(rng.integers(m))
        for gap_type in ("delta_f", "delta"):
            if not only or "finite_acdec" in only:
                res, s = timed(lambda: e2d.finite_acdec(cls.model, f, eps2, gap_type=gap_type))
                record("finite_acdec", gap_type, (k, m), res, s, eps2, cls.model)
            if not only or "finite_offset_dec" in only:
                res, s = timed(lambda: e2d.finite_offset_dec(cls.model, f, lam, gap_type=gap_type))
                record("finite_offset_dec", gap_type, (k, m), res, s, lam, cls.model)

    table = []
    print(f"{'function':20s}{'gap':8s}{'n':>4s}{'OK':>6s}{'meets':>7s}   rel gap p50 / p90 / max      "
          f"s/solve p50 / max")
    for fn in ("linear_acdec", "linear_offset_dec", "finite_acdec", "finite_offset_dec"):
        for gap_type in ("delta_f", "delta"):
            sel = [r for r in rows if r["function"] == fn and r["gap_type"] == gap_type]
            if not sel:
                continue
            rel = np.array([r["rel_gap"] for r in sel])
            secs = np.array([r["seconds"] for r in sel if not r["first_of_shape"]] or [np.nan])
            row = dict(function=fn, gap_type=gap_type, n=len(sel), ok=float(np.mean([r["ok"] for r in sel])),
                       meets=float(np.mean([r["meets"] for r in sel])),
                       rel_gap_p50=float(np.median(rel)), rel_gap_p90=float(np.percentile(rel, 90)),
                       rel_gap_max=float(rel.max()), seconds_p50=float(np.nanmedian(secs)),
                       seconds_max=float(np.nanmax(secs)))
            table.append(row)
            print(f"{fn:20s}{gap_type:8s}{row['n']:4d}{row['ok']:6.2f}{row['meets']:7.2f}   "
                  f"{row['rel_gap_p50']:.1e} / {row['rel_gap_p90']:.1e} / {row['rel_gap_max']:.1e}   "
                  f"{row['seconds_p50']:.3f} / {row['seconds_max']:.3f}")
    total = np.mean([r["meets"] for r in rows])
    print(f"all: {len(rows)} solves, {total:.3f} meet the target")
    if args.out:
        meta = dict(date=time.strftime("%Y-%m-%d"), machine=platform.platform(), processor=platform.processor(),
                    jax=jax.__version__, dtype=str(jnp.dtype(dtype)), problems=args.problems, seed=args.seed)
        with open(args.out, "w") as f:
            json.dump(dict(meta=meta, table=table, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
