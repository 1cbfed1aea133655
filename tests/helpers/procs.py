"""The environment of a command-line process a test starts."""
import os

#: The optimisation level of a process that runs a long sweep: its rounds, not its compiles,
#: take the time.
LONG_RUN_FLAG = "--xla_backend_optimization_level=1"


def cli_env(*, long_run: bool = False, **extra) -> dict:
    """This process's environment without a forced host device count (the command line picks
    its own), keeping every other XLA flag (the test run's optimisation level among them, or
    level 1 with ``long_run``)."""
    env = dict(os.environ)
    flags = [f for f in env.pop("XLA_FLAGS", "").split() if not f.startswith("--xla_force_host_platform_device_count")]
    if long_run and any(f.startswith("--xla_backend_optimization_level") for f in flags):
        flags = [f for f in flags if not f.startswith("--xla_backend_optimization_level")] + [LONG_RUN_FLAG]
    if flags:
        env["XLA_FLAGS"] = " ".join(flags)
    env.update(extra)
    return env
