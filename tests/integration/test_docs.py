"""The documentation site's sources, checked without building the site: a build leaves the
checkout as it was (its outputs and caches are ignored, none is tracked).
"""
import pathlib
import shutil
import subprocess

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
