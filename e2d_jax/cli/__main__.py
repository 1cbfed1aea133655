from e2d_jax.cli import entry

entry()
