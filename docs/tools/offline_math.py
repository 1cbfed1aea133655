"""mkdocs hook: the site serves its own MathJax, so formulas render with no network.

The renderer is MathJax 2.7 as the ``jupyter-server-mathjax`` package ships it (the copy
Jupyter serves to its own notebooks; the ``docs`` extra installs it). After every build this
hook copies the package's ``static/`` folder into the site as ``assets/mathjax/``;
``mkdocs.yml`` loads ``javascripts/mathjax-config.js`` and then ``assets/mathjax/MathJax.js``.
Nothing of MathJax is kept in the repository.
"""
from __future__ import annotations

import importlib.util
import pathlib
import shutil

from mkdocs.exceptions import PluginError

PACKAGE = "jupyter_server_mathjax"
#: Where the files go in the site, and the script mkdocs.yml must load from there.
TARGET = "assets/mathjax"
SCRIPT = f"{TARGET}/MathJax.js"


def mathjax_files() -> pathlib.Path:
    """The folder of MathJax's files in the installed package (found without importing it:
    its ``__init__`` imports the Jupyter server, which the docs do not need)."""
    spec = importlib.util.find_spec(PACKAGE)
    static = pathlib.Path(next(iter(spec.submodule_search_locations))) / "static" if spec else None
    if static is None or not (static / "MathJax.js").is_file():
        raise PluginError(f"the docs serve MathJax from the {PACKAGE.replace('_', '-')} package, which is not "
                          "installed (pip install '.[docs]')")
    return static


def on_config(config):
    mathjax_files()  # before anything is built
    if SCRIPT not in [str(script) for script in config.extra_javascript]:
        raise PluginError(f"mkdocs.yml: extra_javascript must load {SCRIPT} (after the MathJax configuration), "
                          f"which this hook copies into the site")
    return config


def on_post_build(config):
    shutil.copytree(mathjax_files(), pathlib.Path(config.site_dir) / TARGET, dirs_exist_ok=True)
