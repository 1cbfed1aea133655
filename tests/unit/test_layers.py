"""The house: imports flow one way through the layers, no circle, no private name crosses a
module, no import of the library hides inside a function, no module reaches into JAX's
private modules, and only the command line knows flags. Checked on the source (AST)."""
import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2] / "e2d_jax"

#: The layers, lowest first. A module may import its own layer and those below.
LAYERS = [
    ("e2d_jax.version", "e2d_jax.types", "e2d_jax._checks", "e2d_jax._linalg", "e2d_jax._stats", "e2d_jax._files"),
    ("e2d_jax.envs",),
    ("e2d_jax.estimators",),
    ("e2d_jax.dec",),
    ("e2d_jax.agents",),
    ("e2d_jax.plotting",),
    ("e2d_jax.sim",),
    ("e2d_jax.results",),
    ("e2d_jax.experiments",),
    ("e2d_jax.paper",),
    ("e2d_jax.cli",),
]
#: Imports inside a function that only defer an optional or heavy third-party dependency.
DEFERRED_OK = {"ray", "sklearn", "tqdm.auto", "tqdm.std", "tomllib", "tomli"}


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path, ast.parse(path.read_text())


def _layer(module: str) -> int:
    if module == "e2d_jax":
        return len(LAYERS)  # the package's front imports every layer
    for i, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    raise AssertionError(f"{module} is in no layer")


def _imports(tree):
    """(node, imported module, names, inside a function) for every import of the tree."""
    out = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.ImportFrom) and child.module:
                out.append((child, child.module, [a.name for a in child.names], in_function))
            elif isinstance(child, ast.Import):
                for a in child.names:
                    out.append((child, a.name, [], in_function))
            visit(child, inside)

    visit(tree, False)
    return out


MODULES = list(_modules())


def _graph():
    names = {m for m, _, _ in MODULES}
    graph = {}
    for module, _, tree in MODULES:
        deps = set()
        for _, target, imported, _ in _imports(tree):
            if not target.startswith("e2d_jax"):
                continue
            submodules = [f"{target}.{name}" for name in imported if f"{target}.{name}" in names]
            deps.update(submodules)
            if target in names and (len(submodules) < len(imported) or not imported):
                deps.add(target)
        graph[module] = deps - {module}
    return graph


def test_no_import_of_the_library_inside_a_function():
    found = [f"{m}: {target}" for m, _, tree in MODULES for _, target, _, inside in _imports(tree)
             if inside and target.startswith("e2d_jax")]
    assert found == []


def test_imports_inside_functions_only_defer_optional_dependencies():
    found = [f"{m}: {target}" for m, _, tree in MODULES for _, target, _, inside in _imports(tree)
             if inside and not target.startswith("e2d_jax") and target not in DEFERRED_OK]
    assert found == []


def test_no_private_name_crosses_a_module():
    found = []
    for module, _, tree in MODULES:
        for _, target, imported, _ in _imports(tree):
            if target.startswith("e2d_jax") or target.startswith("jax._src"):
                found += [f"{module}: from {target} import {n}" for n in imported
                          if n.startswith("_") and not n.startswith("__") and n not in ("_checks", "_linalg", "_stats", "_files")]
            if target.startswith("jax._src"):
                found.append(f"{module}: imports {target}")
    assert found == []


def test_imports_flow_one_way_through_the_layers():
    upward = []
    for module, deps in _graph().items():
        for dep in deps:
            if dep == "e2d_jax":
                continue
            if _layer(dep) > _layer(module):
                upward.append(f"{module} -> {dep}")
    assert upward == []


def test_there_is_no_import_circle():
    graph = _graph()
    state, cycles = {}, []

    def visit(node, stack):
        state[node] = "open"
        for dep in graph.get(node, ()):
            if state.get(dep) == "open":
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, stack + [dep])
        state[node] = "done"

    for node in graph:
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_only_the_command_line_knows_flags():
    flag = re.compile(r"(?<![\w-])--(?!xla_)[a-z][a-z0-9-]+")
    found = []
    for module, _, tree in MODULES:
        if module.startswith("e2d_jax.cli"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and flag.search(node.value):
                if ast.get_docstring(tree) and node.value == ast.get_docstring(tree, clean=False):
                    continue  # a module docstring may show a command line
                found.append(f"{module}: {flag.search(node.value).group()}")
    assert found == [], "library messages must name Python arguments; the CLI translates them"


@pytest.mark.parametrize("pattern, what", [
    (r"\b[Ii]ssue \d+|\bissue's\b", "issue numbers"),
    (r"\b(lem|thm|cor|eq|app|sec|ss|alg|asm):[\w*-]", "LaTeX labels"),
    (r"STYLE rule|\brule \d+\b", "style-guide rule numbers"),
    (r"\b[0-9a-f]{7}\b(?=[^\n]*\b(commit|before|after)\b)", "commit hashes"),
    (r"(?i)\d[\d,.]*\s*k?\s*(seed-rounds/s|us/seed-round|us a call)|\bH[12]00\b|2-core|\bmeasured\b|\bA/B\b",
     "measurement logs"),
])
def test_the_product_speaks_of_itself_only(pattern, what):
    found = []
    for module, path, _ in MODULES:
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(pattern, line):
                found.append(f"{path.relative_to(ROOT.parent)}:{i}: {line.strip()[:100]}")
    assert found == [], f"{what} in the library's text"


#: Text a reader meets beside the library: the tests, the documentation, the front page, the
#: benchmark scripts, the sweep files and the notebooks (the stored benchmark results name the
#: commits they measured, as data, and are not scanned).
PROSE = ["tests", "docs", "benchmarks", "sweeps", "notebooks", "README.md"]
PROSE_SUFFIXES = {".py", ".md", ".toml", ".ipynb", ".sh"}


def _prose_files():
    top = ROOT.parent
    for name in PROSE:
        path = top / name
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in PROSE_SUFFIXES)
        for p in files:
            rel = p.relative_to(top)
            if rel.parts[:2] == ("benchmarks", "results") or p == pathlib.Path(__file__).resolve():
                continue
            yield rel, p


@pytest.mark.parametrize("pattern, what", [
    (r"\b[Ii]ssue \d+|\b[Ii]ssue's\b|\bthe issue\b|\(issue\b", "issue numbers"),
    (r"\b(lem|thm|cor|app|asm):[\w*-]", "LaTeX labels"),
    (r"STYLE rule|\brule \d+\b", "style-guide rule numbers"),
])
def test_the_text_around_the_library_speaks_of_it_only(pattern, what):
    found = []
    for rel, path in _prose_files():
        for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if re.search(pattern, line):
                found.append(f"{rel}:{i}: {line.strip()[:100]}")
    assert found == [], f"{what} in the text around the library"
