"""The documentation site's sources, checked without building the site: a build leaves the
checkout as it was (its outputs and caches are ignored, none is tracked), and the site loads
nothing from other hosts, so it reads the same offline (formulas included: MathJax is served
with the site). The slow test builds the site and opens a page of formulas in headless
Chromium (``docs/tools/check_site.py``).
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


def _site_check():
    spec = importlib.util.spec_from_file_location("check_site", ROOT / "docs" / "tools" / "check_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_built_site_typesets_formulas_offline(tmp_path):
    for package in ("mkdocs", "jupyter_server_mathjax"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"needs the docs extra (pip install '.[docs]'; {package} is missing)")
    check_site = _site_check()
    browser = check_site.find_browser()
    if browser is None:
        pytest.skip("needs Chromium (e.g. apt-get install chromium)")
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-5000:]
    failures, formulas = check_site.check(tmp_path / "site", ["ids/"], browser)
    assert failures == [] and formulas["ids/"] > 0
