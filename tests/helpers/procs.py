"""The environment of a command-line process a test starts."""
import os


def cli_env(**extra) -> dict:
    """This process's environment without a forced host device count (the command line picks
    its own), keeping every other XLA flag (the test run's optimisation level among them)."""
    env = dict(os.environ)
    flags = [f for f in env.pop("XLA_FLAGS", "").split() if not f.startswith("--xla_force_host_platform_device_count")]
    if flags:
        env["XLA_FLAGS"] = " ".join(flags)
    env.update(extra)
    return env
