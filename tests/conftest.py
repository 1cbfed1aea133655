"""Tests run with float64 enabled so references can be compared tightly; float32 paths are
exercised by passing ``dtype=jnp.float32`` explicitly."""
import jax

jax.config.update("jax_enable_x64", True)
