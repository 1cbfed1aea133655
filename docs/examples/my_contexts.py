"""A contextual bandit of one's own: every round the arms' features are rotated by a random
angle (a continuous context) and each arm but the first is offered with probability 0.7.
Used by the docs' 'Contexts and real data'."""
import jax
import jax.numpy as jnp

from e2d_jax.envs import contextual, linear


def _round(key, data, t):
    """Round t's instance: the base arms rotated by an angle ~ U[0, 2 pi), some arms offered."""
    key_angle, key_offer = jax.random.split(key)
    angle = jax.random.uniform(key_angle, (), maxval=2 * jnp.pi)
    rotation = jnp.array([[jnp.cos(angle), -jnp.sin(angle)], [jnp.sin(angle), jnp.cos(angle)]])
    features = data["arms"] @ rotation.T  # (K, 2)
    k = features.shape[0]
    model = linear.assemble_model(features, features[:, None, :], jnp.ones((k, 1), bool), sigma=1.0, rank=2,
                                  radius=1.0)
    offered = jax.random.bernoulli(key_offer, 0.7, (k,)).at[0].set(True)
    return linear.LinearEnvParams(model=linear.offer(model, offered), theta=data["theta"])


def rotating_arms(key, arms=6):
    """K = ``arms`` unit-norm base arms in R^2 and f* on the unit circle."""
    key_arms, key_theta = jax.random.split(key)
    base = jax.random.normal(key_arms, (arms, 2))
    theta = jax.random.normal(key_theta, (2,))
    data = {"arms": base / jnp.linalg.norm(base, axis=1, keepdims=True), "theta": theta / jnp.linalg.norm(theta)}
    return contextual.from_draw(_round, data)
