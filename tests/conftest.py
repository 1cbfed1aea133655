"""Tests run with float64 enabled so references can be compared tightly; float32 paths are
exercised by passing ``dtype=jnp.float32`` explicitly.

Compiles dominate the test time on two cores, and many tests (and the CLI subprocesses they
start) compile the same programs: JAX's persistent compilation cache, in one directory per
test session (``E2D_JAX_CACHE_DIR``, which the CLI also reads), lets them share the work.
"""
import os
import tempfile

import jax

jax.config.update("jax_enable_x64", True)

_CACHE = os.environ.setdefault("E2D_JAX_CACHE_DIR", tempfile.mkdtemp(prefix="e2d_jax_test_cache_"))
jax.config.update("jax_compilation_cache_dir", _CACHE)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
