"""The documentation site's sources, checked without building the site: a build leaves the
checkout as it was (its outputs and caches are ignored, none is tracked), and the site loads
nothing from other hosts, so it reads the same offline (formulas included: MathJax is served
with the site), and the tables of registered environments and agents are the registry's
(``docs/tools/registry_tables.py`` draws them at build time). The slow test builds the site
and opens a page of formulas in headless Chromium (``docs/tools/check_site.py``).
"""
import importlib.util
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: What a docs build writes into the checkout: mkdocs-jupyter's cache of rendered notebooks
#: (``.cache/mkdocs-jupyter/``) and the site itself when no ``--site-dir`` is given.
BUILD_OUTPUTS = (".cache/", "site/")


def _git(*args: str) -> subprocess.CompletedProcess:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout of the project")
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def test_no_build_output_is_tracked():
    listed = _git("ls-files", "--", *BUILD_OUTPUTS)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == [], f"build outputs are tracked (git rm -r --cached them):\n{listed.stdout}"


@pytest.mark.parametrize("path", [".cache/mkdocs-jupyter/0123abcd.json", "site/index.html"])
def test_build_outputs_are_ignored(path):
    ignored = _git("check-ignore", "--no-index", "-q", path)
    assert ignored.returncode == 0, f"{path} is not ignored: a docs build would leave it in git status"


def test_notebooks_have_one_source():
    # The site renders notebooks/ itself (docs/notebooks links to it), so no copy can drift.
    link = ROOT / "docs" / "notebooks"
    assert link.is_symlink() and link.resolve() == (ROOT / "notebooks").resolve(), \
        "docs/notebooks must be a link to ../notebooks, not a copy"


def test_site_loads_nothing_from_other_hosts():
    config = (ROOT / "mkdocs.yml").read_text()
    assert re.findall(r"https?://\S+", config) == [], "mkdocs.yml names other hosts: the site must work offline"
    assert re.search(r"^\s+font: false\s*$", config, re.M), \
        "mkdocs.yml: theme.font must be false (otherwise the theme loads its fonts from Google Fonts)"
    remote = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)
    sources = [*(ROOT / "docs").rglob("*.md"), *(ROOT / "docs").rglob("*.js"), *(ROOT / "docs").rglob("*.html")]
    found = [f"{path.relative_to(ROOT)}: {m.group(0)}" for path in sources for m in remote.finditer(path.read_text())]
    assert found == [], "pages load from other hosts:\n" + "\n".join(found)


def _tool(name: str):
    """A module of ``docs/tools/`` (the build's own code, not a package)."""
    spec = importlib.util.spec_from_file_location(f"docs_tools_{name}", ROOT / "docs" / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sweeps_page_lists_every_registered_name():
    from e2d_jax.experiments import registry

    tables = _tool("registry_tables")
    page = (ROOT / "docs" / "sweeps.md").read_text()
    assert tables.PLACEHOLDER.findall(page) == ["environments", "agents"], \
        "docs/sweeps.md must draw its tables of names from the registry (<!-- registry: environments --> and " \
        "<!-- registry: agents --> on lines of their own)"
    listed = re.findall(r"^\| `([^`]+)` \|", tables.fill(page), re.M)
    assert sorted(set(registry.ENVIRONMENTS) | set(registry.AGENTS) | {"e2d-nN"}) == sorted(listed)


def test_agent_names_are_paired_with_their_python_functions():
    from e2d_jax.experiments import registry

    rows = {name: python for name, _, python, _, _ in _tool("registry_tables").agent_rows(registry)}
    shown = {name: re.fullmatch(r"\[`([^`]+)`\]\[[\w.]+\]", python).group(1) for name, python in rows.items()}
    assert shown == {"anytime-e2d": "e2d_jax.anytime_e2d", "e2d": "e2d_jax.fixed_horizon_e2d(horizon=n)",
                     "e2d-nN": "e2d_jax.fixed_horizon_e2d(horizon=N)", "ucb": "e2d_jax.ucb",
                     "ts": "e2d_jax.thompson_sampling", "ts-finite": "e2d_jax.posterior_sampling", "ids": "e2d_jax.ids"}


def test_environment_names_are_paired_with_their_builders():
    from e2d_jax.envs import finite, linear, zoo
    from e2d_jax.experiments import registry

    tables = _tool("registry_tables")
    builders = {name: tables.builder_function(entry) for name, entry in registry.ENVIRONMENTS.items()}
    assert all(fn.__module__.startswith("e2d_jax.envs.") for fn in builders.values()), builders
    assert builders["semi-bandit"] is linear.semi_bandit
    assert builders["finite-revealing-plain"] is finite.revealing_class
    assert builders["end-of-optimism"] is zoo.end_of_optimism
    assert tables.public_name(linear.semi_bandit) == "e2d_jax.semi_bandit"
    assert tables.public_name(zoo.end_of_optimism) == "e2d_jax.envs.zoo.end_of_optimism"


@pytest.mark.slow
def test_built_site_typesets_formulas_offline(tmp_path):
    for package in ("mkdocs", "jupyter_server_mathjax"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"needs the docs extra (pip install '.[docs]'; {package} is missing)")
    check_site = _tool("check_site")
    browser = check_site.find_browser()
    if browser is None:
        pytest.skip("needs Chromium (e.g. apt-get install chromium)")
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-5000:]
    failures, formulas = check_site.check(tmp_path / "site", ["ids/"], browser)
    assert failures == [] and formulas["ids/"] > 0
