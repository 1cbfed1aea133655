"""The XLA options of the tests' own compiles.

The default run (``-m 'not slow'``) compiles for speed (``tests/conftest.py``): CPU optimisation
level 0 and XLA's loop-emitter code for fusions instead of its fusion emitters, which together
compile in about half the time of level 0 alone. Every tolerance holds either way, but the bits
can differ from those of the compile users get (the fusion emitters vectorise a batch
differently). A test that compares the bits of two programs it compiles itself (a problem
alone and in a batch, two equivalent parametrisations of one agent) compiles them with
:data:`AS_USERS_FUSE`. The per-seed invariance of ``simulate`` and the command line (a seed's
bits whatever the seeds beside it) is checked with the default run's flags, which guards the
library's own code (every seed its own copy of the instance); the slow run checks it across
device counts with the compile users get (``tests/integration/test_invariance.py``).
"""

#: The XLA flags of the default run.
FAST_FLAGS = "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"

#: ``jax.jit(..., compiler_options=AS_USERS_FUSE)``: the CPU fusion code of users' programs.
AS_USERS_FUSE = {"xla_cpu_use_fusion_emitters": True}
