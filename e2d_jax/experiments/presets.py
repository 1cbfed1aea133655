"""The paper's experiments (Appendix 'Experiments') as sweep specs, with named conventions.

* ``exp1``: revealing semi-bandit, d = 3, K = 10, n = 2000; Anytime-E2D, E2D tuned for
  n = 200, 500, 1000, 2000, UCB and TS.
* ``exp2``: d = 30, K = 10, n = 1000; the same agents with E2D tuned for 200, 500, 1000.

One instance (instance seed 0) drawn once and kept fixed, as in the paper (``instances``
redraws: seeds 0..N-1, vmapped); 100 seeds by default, as in the paper.

Conventions. The paper's text writes the information as sigma^2/2 <phi, g - f>^2, but the
authors' implementation (the code behind the paper's figure) uses ||M_pi (g - f)||^2 with no
1/2 in both the offset and the constrained program; both use eps_t^2 = d / t,
lambda = sqrt(n / (4 log n)) for E2D and the gaps Delta_f.

* ``"implementation"`` (default): E2D agents with ``divergence="squared"``;
* ``"paper-text"``: ``divergence="kl"`` (the Gaussian KL ||M (g - f)||^2 / (2 sigma^2); with
  sigma = 1 the text's factor 1/2).

UCB and TS do not depend on the convention. The DEC solver is the library's exact saddle
point solver in both (the authors' 100 Frank-Wolfe steps on a 50-point lambda grid is
``--solver paper``).
"""
from __future__ import annotations

from e2d_jax.experiments.spec import CONVENTIONS, AgentEntry, SweepSpec

EXPERIMENTS = {
    "exp1": dict(d=3, arms=10, horizon=2000, tunings=(200, 500, 1000, 2000)),
    "exp2": dict(d=30, arms=10, horizon=1000, tunings=(200, 500, 1000)),
}

DIVERGENCE = {"implementation": "squared", "paper-text": "kl"}


def experiment(name: str, *, seeds: int = 100, conventions: str = "implementation", instances: int = 1,
               seed: int = 0, solver: str | None = None) -> SweepSpec:
    """The sweep of the paper's Experiment 1 (``"exp1"``) or 2 (``"exp2"``)."""
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {name!r}")
    if conventions not in CONVENTIONS:
        raise ValueError(f"--conventions must be one of {CONVENTIONS}, got {conventions!r}")
    if instances < 1:
        raise ValueError(f"--instances must be >= 1, got {instances}")
    e = EXPERIMENTS[name]
    options = {"divergence": DIVERGENCE[conventions]}
    if solver is not None:
        options["solver"] = solver
    agents = [AgentEntry.make("anytime-e2d", options)]
    agents += [AgentEntry.make(f"e2d-n{n}", options) for n in e["tunings"]]
    agents += [AgentEntry.make("ucb"), AgentEntry.make("ts")]
    return SweepSpec(env="semi-bandit", d=e["d"], arms=e["arms"], horizon=e["horizon"], seeds=seeds, seed=seed,
                     agents=tuple(agents), instance_seeds=tuple(range(instances)),
                     record_every=max(1, e["horizon"] // 200), conventions=conventions, name=name)
