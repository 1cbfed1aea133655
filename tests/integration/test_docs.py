"""The documentation site's sources, checked without building the site: a build leaves the
checkout as it was (its outputs and caches are ignored, none is tracked), and the site loads
nothing from other hosts, so it reads the same offline (formulas included: MathJax is served
with the site), and the tables of registered environments and agents are the registry's
(``docs/tools/registry_tables.py`` draws them at build time). The slow test builds the site
and opens a page of formulas in headless Chromium (``docs/tools/check_site.py``).
"""
import importlib.util
import json
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
                     "ts": "e2d_jax.thompson_sampling", "ts-finite": "e2d_jax.posterior_sampling", "ids": "e2d_jax.ids",
                     "squarecb": "e2d_jax.squarecb", "epsilon-greedy": "e2d_jax.epsilon_greedy"}


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


def _tables_after(text: str, heading: str) -> list[list[str]]:
    """The rows (lists of cells) of the first Markdown table after ``heading``."""
    rows = []
    for line in text[text.index(heading):].splitlines()[1:]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
        elif rows:
            break
    return rows


def test_readme_results_are_the_paper_page_results():
    # README's Figure 1 table is the "impl., 1,000 seeds" column of the paper page's tables.
    readme = _tables_after((ROOT / "README.md").read_text(), "<!-- figure1-table")
    paper = (ROOT / "docs" / "paper.md").read_text()
    columns = []
    for heading in ("**Experiment 1**", "**Experiment 2**"):
        header, _, *rows = _tables_after(paper, heading)
        at = header.index("impl., 1,000 seeds")
        columns.append({row[0]: row[at] for row in rows})
    agents = list(dict.fromkeys([*columns[0], *columns[1]]))
    assert readme[2:] == [[agent, *(column.get(agent, "—") for column in columns)] for agent in agents]


def test_readme_table_is_written_between_its_markers(tmp_path):
    tool = _tool("readme_table")
    for name, d, n, agents in (("exp1", 3, 2000, {"anytime-e2d": 64.94, "e2d-n2000": 74.46}),
                               ("exp2", 30, 1000, {"anytime-e2d": 63.6})):
        (tmp_path / name).mkdir()
        cells = {label: {"final_regret_mean": mean, "final_regret_ci95": [mean - 1, mean + 1], "seeds": 4,
                         "seeds_invalid": 0} for label, mean in agents.items()}
        summary = {"agents": cells, "conventions": "implementation", "versions": {"e2d_jax": "0"},
                   "config": {"d": d, "horizon": n, "seeds": 4, "instance_seeds": [0]}}
        (tmp_path / name / "summary.json").write_text(json.dumps(summary))
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n\n{tool.BEGIN}\n| old |\n{tool.END}\n\nmore\n")
    assert tool.main([str(tmp_path), "--readme", str(readme), "--check"]) == 1
    assert tool.main([str(tmp_path), "--readme", str(readme)]) == 0
    assert readme.read_text() == (
        f"intro\n\n{tool.BEGIN}\n"
        "| agent | Experiment 1 (d=3, n=2,000) | Experiment 2 (d=30, n=1,000) |\n|---|---|---|\n"
        "| anytime-e2d | 64.9 [63.9, 65.9] | 63.6 [62.6, 64.6] |\n| e2d-n2000 | 74.5 [73.5, 75.5] | — |\n"
        f"{tool.END}\n\nmore\n")
    assert tool.main([str(tmp_path), "--readme", str(readme), "--check"]) == 0
    assert tool.BEGIN in (ROOT / "README.md").read_text() and tool.END in (ROOT / "README.md").read_text()
