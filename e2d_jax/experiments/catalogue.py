"""The library's own environments and agents, registered by name (:mod:`e2d_jax.experiments.registry`).

Environments: the paper's revealing semi-bandit (and the authors' draw of it), linear and
multi-armed bandits, finite classes, and the instance zoo (:mod:`e2d_jax.envs.zoo`); each with
its sizes as options. Agents: Anytime-E2D, fixed-horizon E2D, IDS, UCB and Thompson sampling on
both model families where the algorithm exists, each name mapped to the factory of each family
(the same factories a notebook calls, so a name and a call give the same agent). An
environment's instance ``i`` is drawn from ``instance_key(i)``.
"""
from __future__ import annotations

import functools

from e2d_jax.agents import e2d, e2d_finite, e2d_linear
from e2d_jax.agents.ids import finite_ids, ids, linear_ids
from e2d_jax.agents.oracle import epsilon_greedy, squarecb
from e2d_jax.agents.ts import posterior_sampling, thompson_sampling
from e2d_jax.agents.ucb import ucb
from e2d_jax.envs import contextual, datasets, dueling, finite, linear, preference, zoo
from e2d_jax.experiments.registry import AGENTS, RegisteredAgent, register_env, tokens

# --------------------------------------------------------------------------------------
# Environments


@functools.partial(register_env, "semi-bandit", family="linear",
                   help="linear semi-bandit with one revealing action (the paper's experiments; d=3, K=10)")
def _semi_bandit(key, d=3, arms=10, sigma=1.0, dtype=None):
    return linear.semi_bandit(key, d, arms, sigma=sigma, dtype=dtype)


@functools.partial(register_env, "semi-bandit-authors", family="linear",
                   help="the revealing semi-bandit as the authors' code draws it: f* = e1, N(0,1) features not "
                        "normalised, action 0 revealing (possibly optimal) (d=3, K=10)")
def _semi_bandit_authors(key, d=3, arms=10, sigma=1.0, dtype=None):
    return linear.semi_bandit_authors(key, d, arms, sigma=sigma, dtype=dtype)


@functools.partial(register_env, "linear-bandit", family="linear",
                   help="plain linear bandit, M_pi = phi_pi^T (d=3, K=10)")
def _linear_bandit(key, d=3, arms=10, sigma=1.0, dtype=None):
    return linear.linear_bandit(key, d, arms, sigma=sigma, dtype=dtype)


@functools.partial(register_env, "mab", family="linear",
                   help="K-armed Gaussian bandit as a linear bandit (phi_pi = e_pi; K=10)")
def _mab(key, arms=10, sigma=1.0, dtype=None):
    return linear.multi_armed_bandit(key, arms, sigma=sigma, dtype=dtype)


@functools.partial(register_env, "finite-mab", family="finite",
                   help="K-armed Gaussian bandit with M random mean vectors (finite class; K=5, M=30)")
def _finite_mab(key, arms=5, models=30, sigma=1.0, dtype=None):
    return finite.multi_armed_bandit_class(key, arms, models, sigma=sigma, dtype=dtype)


@functools.partial(register_env, "finite-revealing", family="finite",
                   help="finite class with an informative but costly revealing action, gain 3 (K=10, M=30)")
def _finite_revealing(key, arms=10, models=30, sigma=1.0, gain=3.0, dtype=None):
    return finite.revealing_class(key, arms, models, sigma=sigma, gain=gain, dtype=dtype)


@functools.partial(register_env, "finite-revealing-plain", family="finite",
                   help="finite class with the paper's revealing action, gain 1 (K=10, M=30)")
def _finite_revealing_plain(key, arms=10, models=30, sigma=1.0, dtype=None):
    return finite.revealing_class(key, arms, models, sigma=sigma, gain=1.0, dtype=dtype)


@functools.partial(register_env, "finite-bernoulli", family="finite",
                   help="K-armed Bernoulli bandit with M random probability vectors (K=5, M=30)")
def _finite_bernoulli(key, arms=5, models=30, dtype=None):
    return finite.bernoulli_bandit_class(key, arms, models, dtype=dtype)


# The instance zoo (e2d_jax.envs.zoo): the instances the paper argues from and partial-monitoring games.
register_env("end-of-optimism", lambda key, eps=0.01, alpha=1.0, sigma=1.0, dtype=None: zoo.end_of_optimism(
    key, eps=eps, alpha=alpha, sigma=sigma, dtype=dtype), family="linear",
    help="the end-of-optimism instance: 3 actions in R^2, the second eps-suboptimal, the third informative (eps=0.01)")
register_env("hard-semi-bandit", lambda key, d=3, sigma=1.0, dtype=None: zoo.hard_semi_bandit(
    key, d=d, sigma=sigma, dtype=dtype), family="linear",
    help="a semi-bandit whose revealing action has zero reward (d=3, K=4)")
register_env("large-gaps", lambda key, sigma=1.0, dtype=None: zoo.large_gaps(key, sigma=sigma, dtype=dtype),
             family="linear", help="a linear bandit in R^2 with large gaps (K=4)")
register_env("heteroscedastic", lambda key, d=3, rho=0.5, eps=0.1, sigma=1.0, dtype=None: zoo.heteroscedastic(
    key, d=d, rho=rho, eps=eps, sigma=sigma, dtype=dtype), family="linear",
    help="two copies of the unit sign vectors with different noise and rewards (d=3, K=16)")
register_env("simple-bandit", lambda key, d=3, arms=10, sigma=1.0, dtype=None: zoo.simple_bandit(
    key, d=d, arms=arms, sigma=sigma, dtype=dtype), family="linear",
    help="a linear bandit with N(0,1) features and f* = e1, as the authors' code draws it (d=3, K=10)")
register_env("dueling", lambda key, d=3, arms=10, normalize=False, sigma=1.0, dtype=None: dueling.random_dueling(
    key, d, arms, normalize=normalize, sigma=sigma, dtype=dtype), family="linear",
    help="linear duelling bandit: the arms^2 ordered pairs of N(0,1) base arms, reward <x_a + x_b, f*>, observation "
         "<x_a - x_b, f*> + noise, f* = e1 (the authors' random_dueling; d=3, 10 base arms: K=100)")
register_env("dueling-localized", lambda key, d=3, min_gap=0.1, sigma=1.0, dtype=None: dueling.localized_dueling(
    d, min_gap=min_gap, sigma=sigma, dtype=dtype), family="linear",
    help="localized duelling: neighbour pairs and self-duels of e_1..e_d, the reward level unobservable (E2D needs "
         "gaps Delta, gap_type delta; the authors' localized_dueling; d=3: K=5)")
register_env("preference", lambda key, d=3, arms=10, normalize=False, dtype=None: preference.random_preference(
    key, d, arms, normalize=normalize, dtype=dtype), family="linear",
    help="preference (Bradley-Terry) feedback: the arms^2 ordered pairs of N(0,1) base arms, reward <x_a + x_b, f*>, "
         "observation 1 with probability sigmoid(<x_a - x_b, f*>), f* = e1; logistic estimation (d=3, 10 base arms: "
         "K=100)")
register_env("laser", lambda key, sigma=1.0, dtype=None: zoo.laser(key, sigma=sigma, dtype=dtype), family="linear",
             help="the authors' laser game: 25 Gaussian bumps, 9 invasive measurements (no reward) and 9 "
                  "integrated ones (K=18, d=25)")
register_env("contextual-linear", lambda key, d=3, arms=10, contexts=10, normalize=True, sigma=1.0, dtype=None:
             contextual.random_contextual(key, d, arms, contexts, normalize=normalize, sigma=sigma, dtype=dtype),
             family="linear",
             help="a contextual linear bandit: every round one of `contexts` contexts, uniformly, each with its own "
                  "N(0,I) action features (unit norm with normalize), f* uniform on the sphere; contexts=0: new "
                  "features every round (d=3, K=10, 10 contexts)")
register_env("contextual-authors", lambda key, d=3, arms=10, contexts=3, normalize=False, sigma=1.0, dtype=None:
             contextual.authors_contextual(key, d, arms, contexts, normalize=normalize, sigma=sigma, dtype=dtype),
             family="linear",
             help="the authors' contextual_simple_bandit: contexts drawn uniformly, each with N(0,1) action "
                  "features, f* = e1 (d=3, K=10, 3 contexts)")
register_env("contextual-revealing", lambda key, d=3, arms=10, contexts=10, share=0.5, sigma=1.0, dtype=None:
             contextual.revealing_contextual(key, d, arms, contexts, share=share, sigma=sigma, dtype=dtype),
             family="linear",
             help="contexts in a share of which a costly revealing action (action 0: the round's worst reward, observes "
                  "every action's) is offered; unit-norm N(0,I) features, bandit feedback otherwise (d=3, K=10, 10 "
                  "contexts, share 0.5)")


def _dataset(name):
    def build(key, dims=datasets.DEFAULT_DIMS, dtype=None):
        del key  # every instance is the dataset; each seed draws its own order of the rows
        return datasets.classification(name, dims=dims, dtype=dtype, argument="env")

    return build


for _name in datasets.DATASETS:
    register_env(f"data-{_name}", _dataset(_name), family="linear",
                 help=f"scikit-learn's {_name} dataset as a contextual bandit: a row per round in the seed's order, a "
                      f"label per action, reward 1 for the row's label; standardised features, {datasets.DEFAULT_DIMS} "
                      f"principal components and a constant, one linear model per label (needs "
                      f"{datasets.INSTALL})")

register_env("apple-tasting", lambda key, models=19, dtype=None: zoo.apple_tasting(key, models=models, dtype=dtype),
             family="finite", help="apple tasting, a locally observable partial-monitoring game (M=19)")
register_env("label-efficient", lambda key, models=19, dtype=None: zoo.label_efficient(key, models=models, dtype=dtype),
             family="finite", help="label-efficient prediction, globally but not locally observable (M=19)")
register_env("dynamic-pricing", lambda key, arms=4, levels=4, dtype=None: zoo.dynamic_pricing(
    key, prices=arms, levels=levels, dtype=dtype), family="finite",
    help="dynamic pricing with K prices and a grid of valuation distributions, not locally observable (K=4)")


# --------------------------------------------------------------------------------------
# Agents


def _e2d_horizon(text: str) -> dict:
    """``e2d@N`` / ``e2d-nN``: E2D tuned for the horizon N."""
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"e2d-nN (or e2d@N) needs an integer horizon N >= 2, got {text!r}") from None
    if n < 2:
        raise ValueError(f"e2d needs a tuning horizon >= 2, got {n}")
    return {"horizon": n}


def _agent(name: str, builders: dict, help: str, param=None, front=None) -> None:
    AGENTS[name] = RegisteredAgent(name, builders=builders, param=param, help=help, front=front)


_agent("anytime-e2d", {"linear": e2d_linear.anytime_e2d, "finite": e2d_finite.anytime_e2d},
       "Anytime-E2D (Algorithm 1): ridge and eps_t^2 = r/t on linear models (the paper's d/t: eps2_schedule dim), "
       "EWA and log|M|/t on finite classes (finite: @delta, @mixture, @track joined by '+')",
       tokens({"delta": ("gap_type", "delta"), "delta_f": ("gap_type", "delta_f"),
               "sample": ("estimate", "sample"), "mixture": ("estimate", "mixture"),
               "track": ("lam_search", "track"), "global": ("lam_search", "global")}), front=e2d.anytime_e2d)
_agent("e2d", {"linear": e2d_linear.fixed_horizon_e2d, "finite": e2d_finite.fixed_horizon_e2d},
       "fixed-horizon E2D tuned for the run's horizon; e2d-nN tunes for horizon N (linear: lambda = sqrt(N/(4 log N)); "
       "finite: the regret-bound minimiser)", _e2d_horizon, front=e2d.fixed_horizon_e2d)
_agent("ucb", {"linear": ucb, "finite": ucb},
       "OFUL / LinUCB on all observations, ||f*|| bound from the class (finite: its linear view); delta = 0.01, "
       "ucb@anytime (option delta = \"anytime\"): delta_s = 1/(s log s) as in the authors' code",
       tokens({"anytime": ("delta", "anytime")}))
_agent("ts", {"linear": thompson_sampling, "finite": thompson_sampling},
       "Thompson sampling with the ridge Gaussian posterior (finite: linear view)")
_agent("ts-finite", {"finite": posterior_sampling}, "Thompson sampling on the finite class (EWA posterior, eta = 1)")
_agent("squarecb", {"linear": squarecb, "finite": squarecb},
       "inverse gap weighting on a least-squares oracle (SquareCB, Foster and Rakhlin 2020): gamma_t = gamma_scale "
       "sqrt(t), gamma_scale = 10 (finite: linear view)")
_agent("epsilon-greedy", {"linear": epsilon_greedy, "finite": epsilon_greedy},
       "epsilon-greedy on a least-squares oracle, epsilon = 0.05 (finite: linear view)")
_agent("ids", {"linear": linear_ids, "finite": finite_ids},
       "information-directed sampling: directed information gain and difference gaps on linear models, Bayesian "
       "(EWA posterior, variance gain) on finite classes (linear: @worst-case, @value, @fast joined by '+')",
       tokens({"directed": ("info_gain", "directed"), "worst-case": ("info_gain", "worst-case"),
               "difference": ("gap_estimate", "difference"), "value": ("gap_estimate", "value"),
               "full": ("sampling", "full"), "fast": ("sampling", "fast")}), front=ids)
