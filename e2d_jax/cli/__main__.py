"""``python -m e2d_jax.cli``: the ``e2d-jax`` command line."""
from e2d_jax.cli import entry

entry()
