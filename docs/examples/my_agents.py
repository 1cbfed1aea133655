"""An epsilon-greedy agent of one's own on linear models: explore uniformly with probability
min(1, eps0 / t), else play the arm that is best for the ridge estimate. Used by the docs'
'Your own agent'."""
from typing import NamedTuple

import jax
import jax.numpy as jnp

from e2d_jax import ActInfo, Agent, Status
from e2d_jax.estimators import ridge


class GreedyState(NamedTuple):
    ridge: ridge.RidgeState
    t: jax.Array  # () int32, rounds played


def epsilon_greedy(*, eps0=1.0, reg=1.0) -> Agent:
    """Epsilon-greedy with exploration rate min(1, eps0 / t); ``eps0`` and ``reg`` may be
    traced (a grid of them is one vmapped axis of a sweep)."""

    def init(key, model):
        del key
        return GreedyState(ridge.init(model.dim, reg=reg, dtype=model.features.dtype), jnp.zeros((), jnp.int32))

    def act(key, state, model):
        key_explore, key_arm = jax.random.split(key)
        t = state.t + 1
        explore = jax.random.uniform(key_explore) < jnp.minimum(1.0, eps0 / t)
        greedy = jnp.argmax(model.features @ state.ridge.f_hat)
        uniform = jax.random.randint(key_arm, (), 0, model.num_actions)
        action = jnp.where(explore, uniform, greedy).astype(jnp.int32)
        status = jnp.where(jnp.all(jnp.isfinite(state.ridge.f_hat)), Status.OK, Status.NONFINITE)
        return action, state._replace(t=t), ActInfo(status=status.astype(jnp.int32))

    def update(state, action, obs, model):
        return state._replace(ridge=ridge.update(state.ridge, model.obs_matrices[action], obs))

    return Agent(init=init, act=act, update=update)
