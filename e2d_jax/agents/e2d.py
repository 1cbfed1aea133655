"""One name per algorithm for both model families.

``anytime_e2d(...)`` and ``fixed_horizon_e2d(...)`` here take the arguments of the linear
(:mod:`e2d_jax.agents.e2d_linear`) and finite (:mod:`e2d_jax.agents.e2d_finite`) versions,
which share their names and defaults (``eps2_schedule``, ``eps2_scale``, ``lam``,
``lam_scale``, ``horizon``, ``gap_type="delta_f"``, ``solver``). The returned agent
dispatches on the model class it is given (``LinearModel`` or ``FiniteModel``: a Python
choice at trace time, nothing at run time). Arguments are checked when the factory is
called: those that fit neither family raise a ValueError at once, naming the valid
arguments of each, and those that fit one family only (``divergence`` and ``reg`` are
linear, ``estimate``, ``eta`` and ``lam_search`` finite; a ``solver`` that solves one
family's program only picks that family) raise when the agent meets the other family's
model, with the reason. UCB and Thompson sampling run on both families already (finite
classes through their linear view).
"""
from __future__ import annotations

import inspect

from e2d_jax.agents import e2d_finite, e2d_linear
from e2d_jax.envs.family import family_of
from e2d_jax.types import Agent, ByFamily


def _accepted(build) -> set:
    return {p.name for p in inspect.signature(build).parameters.values() if p.kind == p.KEYWORD_ONLY}


def _dispatch(name: str, builders: dict, kwargs: dict) -> Agent:
    agents, errors = {}, {}
    for family, build in builders.items():
        unknown = sorted(set(kwargs) - _accepted(build))
        if unknown:
            errors[family] = ValueError(f"{name} on {family} models takes no argument {', '.join(unknown)} "
                                        f"(valid: {', '.join(sorted(_accepted(build)))})")
            continue
        try:
            agents[family] = build(**kwargs)
        except ValueError as err:
            errors[family] = err
    if not agents:
        # Report the family the arguments were closest to: the one whose check failed on a value
        # rather than on unknown names, or both when neither accepts the names.
        named = {f: e for f, e in errors.items() if "takes no argument" not in str(e)}
        if len(named) == 1:
            raise next(iter(named.values()))
        messages = list(dict.fromkeys(str(e) for e in errors.values()))
        if len(messages) == 1:
            raise ValueError(messages[0])
        raise ValueError(f"{name}: no model family accepts these arguments ({'; '.join(messages)})")

    def pick(model) -> Agent:
        family = family_of(model)
        if family not in agents:
            raise ValueError(f"{name}({', '.join(f'{k}=...' for k in kwargs)}) cannot run on a {family} "
                             f"model: {errors[family]}")
        return agents[family]

    return Agent(
        init=lambda key, model: pick(model).init(key, model),
        act=lambda key, state, model: pick(model).act(key, state, model),
        update=lambda state, action, obs, model: pick(model).update(state, action, obs, model),
        config=ByFamily(tuple(sorted((family, agent.config) for family, agent in agents.items()))),
    )


def anytime_e2d(**kwargs) -> Agent:
    """Anytime-E2D (Algorithm 1) for linear models (ridge) or finite classes (EWA).

    Takes the keyword arguments of :func:`e2d_jax.agents.e2d_linear.anytime_e2d` (linear:
    ``eps2_schedule`` ``"rank"``, ``eps2_scale``, ``divergence``, ``gap_type``, ``solver``,
    ``reg``) and :func:`e2d_jax.agents.e2d_finite.anytime_e2d` (finite: ``eps2_schedule``
    ``"log-models"``, ``eps2_scale``, ``gap_type``, ``estimate``, ``eta``, ``lam_search``,
    ``solver``); see the module docstring.
    """
    return _dispatch("anytime_e2d", {"linear": e2d_linear.anytime_e2d, "finite": e2d_finite.anytime_e2d}, kwargs)


def fixed_horizon_e2d(**kwargs) -> Agent:
    """Fixed-horizon E2D (offset DEC at a fixed lambda) for either model family.

    ``horizon=n`` tunes lambda for n (see :func:`tune_lambda`), ``lam`` gives it,
    ``lam_scale`` multiplies it.
    """
    return _dispatch("fixed_horizon_e2d", {"linear": e2d_linear.fixed_horizon_e2d,
                                           "finite": e2d_finite.fixed_horizon_e2d}, kwargs)


def tune_lambda(horizon: int, model=None) -> float:
    """E2D's lambda for a horizon n.

    Linear models (or ``model=None``): the paper's sqrt(n / (4 log n)) (Foster et al., 2021,
    Sec. 6.1.1). A finite class: the minimiser of E2D's fixed-horizon regret bound
    n max_f dec^o_lam(f) + lam log|M| over a geometric grid, computed for the class
    (:func:`e2d_jax.agents.e2d_finite.lambda_tuning` returns the grid and the bound as well).
    """
    if model is None or family_of(model) == "linear":
        return e2d_linear.horizon_lambda(horizon)
    return e2d_finite.lambda_tuning(model, horizon).lam
