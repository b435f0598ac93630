"""The package's shape: no import circle, and no model kind or NB event-model name outside mlnb/models/.

The study asks a component what it can do (``ModelKind.fits_from``, ``requires_non_negative``,
``score_type``; an event model's record); it never compares a name. These checks read the source
(AST), so they hold for code paths no test runs.
"""

import ast
from pathlib import Path

from mlnb.models import KINDS
from mlnb.models.naive_bayes import EVENT_MODELS

PACKAGE = Path(__file__).resolve().parents[1] / "mlnb"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(module: str, path: Path, modules: dict) -> set[str]:
    """mlnb modules that ``module`` imports, at module level or inside functions alike."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names = [prefix] + [f"{prefix}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            # a package's __init__ importing its own submodules is not a circle through the package
            if name and name != module and not name.startswith(module + ".") and \
                    not module.startswith(name + ".") and name != "mlnb":
                found.add(name)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, components, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def test_no_import_circle_in_the_package():
    modules = _modules()
    graph = {module: _imports(module, path, modules) for module, path in modules.items()}
    assert _cycles(graph) == []


def test_the_circle_check_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_kind_or_event_model_name_outside_the_models():
    """A string literal equal to a registered kind's or event model's name, outside mlnb/models/, is a
    name check (or a wiring by name) that the component's declared capabilities should replace."""
    names = set(KINDS) | set(EVENT_MODELS)
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.is_relative_to(PACKAGE / "models"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value!r}")
    assert found == []


def test_the_sources_import_no_numba_and_no_model():
    """``mlnb.config`` reads every source's options from ``mlnb.data.sources``: that must stay light."""
    import subprocess
    import sys

    code = ("import sys, mlnb.data.sources; print(sorted({m.split('.')[0] if not m.startswith('mlnb') else m "
            "for m in sys.modules if m.startswith(('numba', 'mlnb.models', 'sklearn'))}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
