"""The package's shape: no import circle, and no model kind or NB event-model name outside mlnb/models/.

The study asks a component what it can do (``ModelKind.fits_from``, ``requires_non_negative``,
``score_type``; an event model's record); it never compares a name. These checks read the source
(AST), so they hold for code paths no test runs.
"""

import ast
import re
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


def _executor_name_checks(source: str) -> list[int]:
    """Lines of ``source`` that ask an executor its name: ``<...>backend.name`` / ``<...>executor.name``, or any
    ``<...>.name`` compared with an engine's name (``"local"``, ``"dask"``)."""
    from mlnb.config import ENGINES

    def dotted(node) -> str:
        return ast.unparse(node).lower()

    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "name" and \
                any(word in dotted(node.value).rpartition(".")[2] for word in ("backend", "executor")):
            lines.append(node.lineno)
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            named = any(isinstance(o, ast.Attribute) and o.attr == "name" for o in operands)
            engines = any(isinstance(o, ast.Constant) and o.value in ENGINES for o in operands) or any(
                isinstance(o, (ast.Tuple, ast.List, ast.Set)) and
                any(isinstance(e, ast.Constant) and e.value in ENGINES for e in o.elts) for o in operands)
            if named and engines:
                lines.append(node.lineno)
    return sorted(set(lines))


def test_the_executor_is_asked_what_it_can_do_not_its_name():
    """Outside mlnb/backends/, code asks an executor its capabilities (``Executor.sequential``), never its name."""
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}" for path in sorted(PACKAGE.rglob("*.py"))
             if not path.is_relative_to(PACKAGE / "backends")
             for line in _executor_name_checks(path.read_text(encoding="utf-8"))]
    assert found == []


def test_the_name_check_finds_a_name_check():
    code = ("if self.backend.name != 'local': pass\n"
            "x = backend.name\n"
            "if executor.name in ('dask',): pass\n"
            "if engine.name == 'local': pass\n"
            "if spec.name == 'lr' or backend.sequential: pass\n")
    assert _executor_name_checks(code) == [1, 2, 3, 4]


def test_the_executors_import_no_model_and_no_study():
    """``mlnb.backends`` runs functions and reduces what they return: the per-partition tasks that know the models
    live in ``mlnb.study.tasks``. Function-level imports count."""
    modules = _modules()
    found = {module: sorted(name for name in _imports(module, path, modules)
                            if name.startswith(("mlnb.models", "mlnb.study", "mlnb.studies")))
             for module, path in modules.items() if module == "mlnb.backends" or module.startswith("mlnb.backends.")}
    assert {module: names for module, names in found.items() if names} == {}
    assert len(found) >= 4  # the package, local, dask, reduce: the check looked where it should


#: the two ScoreStore implementations and the scoring that chooses between them: the only modules of the study
#: that may ask where scores are held
SCORE_STORE_MODULES = ("mlnb/study/stores.py", "mlnb/study/scoring.py")
#: reads of ``.in_memory`` / ``.streaming`` left in the study package and the commands, all on documents or the
#: config's data (opening the documents, fitting them, carving a sweep's parts), file -> reads
DOCUMENT_BRANCHES = {"mlnb/study/deciding.py": 1, "mlnb/study/fitting.py": 4, "mlnb/study/opening.py": 4,
                     "mlnb/studies/curve.py": 1, "mlnb/studies/sweep.py": 3}


def _memory_or_disk_reads(source: str) -> list[tuple[int, str]]:
    """(line, expression) of each read of an ``in_memory`` or ``streaming`` attribute: a memory-or-disk branch."""
    return sorted((node.lineno, ast.unparse(node)) for node in ast.walk(ast.parse(source))
                  if isinstance(node, ast.Attribute) and node.attr in ("in_memory", "streaming")
                  and isinstance(node.ctx, ast.Load))


def _on_scores(reads: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The reads of ``reads`` on an object named like scores or their store (``scored``, ``store``, ``spill``, ...)."""
    return [(line, expression) for line, expression in reads
            if re.search(r"scor|store|spill", expression.rpartition(".")[0], re.IGNORECASE)]


def test_no_memory_or_disk_branch_outside_the_score_stores():
    """The loop, ``run_study`` and the commands ask the ``ScoreStore`` scoring gave them (``mlnb.study.stores``),
    never where its scores are: no read of ``in_memory`` on scores outside the two stores' modules, and of the
    reads on documents only the handful that opening and fitting them needs (``DOCUMENT_BRANCHES``)."""
    found = {}
    for path in sorted((PACKAGE / "study").rglob("*.py")) + sorted((PACKAGE / "studies").rglob("*.py")):
        where = path.relative_to(PACKAGE.parent).as_posix()
        reads = _memory_or_disk_reads(path.read_text(encoding="utf-8"))
        if reads and where not in SCORE_STORE_MODULES:
            found[where] = reads
    assert {where: _on_scores(reads) for where, reads in found.items() if _on_scores(reads)} == {}
    assert {where: len(reads) for where, reads in found.items()} == DOCUMENT_BRANCHES, found
    assert all((PACKAGE.parent / where).is_file() for where in SCORE_STORE_MODULES)


def test_the_memory_or_disk_check_finds_a_planted_branch():
    code = ("if scored.in_memory:\n    pass\n"
            "x = config.data.streaming\n"
            "if loop.store.in_memory or train.in_memory: pass\n"
            "in_memory = True\n")
    reads = _memory_or_disk_reads(code)
    assert reads == [(1, "scored.in_memory"), (3, "config.data.streaming"), (4, "loop.store.in_memory"),
                     (4, "train.in_memory")]
    assert _on_scores(reads) == [(1, "scored.in_memory"), (4, "loop.store.in_memory")]


def _name_comparisons(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each comparison with a string literal in ``names``: ``x == 'name'``, ``'name' != x``,
    ``x in ('name', ...)`` (a tuple, list or set), ``x not in [...]``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, operands, operands[1:]):
            if isinstance(op, (ast.Eq, ast.NotEq)):
                literals = [left, right]
            elif isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
                literals = list(right.elts)
            else:
                continue
            found += [(node.lineno, literal.value) for literal in literals if isinstance(literal, ast.Constant)
                      and isinstance(literal.value, str) and literal.value in names]
    return found


def test_no_source_name_is_compared_outside_the_data_package():
    """A data source says what it can do (``SourceKind.labels``, ``shape``, ``check_task``, ``streams``); code
    outside mlnb/data/ that compares ``data.source`` with a registered name should ask the source instead."""
    from mlnb.data.sources import SOURCES

    names = set(SOURCES)
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}: {name!r}" for path in sorted(PACKAGE.rglob("*.py"))
             if not path.is_relative_to(PACKAGE / "data")
             for line, name in _name_comparisons(ast.parse(path.read_text(encoding="utf-8")), names)]
    assert found == []


def test_the_source_name_check_finds_each_form_of_comparison():
    code = ("a = s == 'text'\nb = 'rcv1' != s\nc = s in ('synthetic', 'x')\nd = s not in ['arff']\n"
            "e = s in {'files'}\nf = s == 'not_a_source'\ng = s in SOURCES\nh = 'text' + s\n")
    assert _name_comparisons(ast.parse(code), {"text", "rcv1", "synthetic", "arff", "files"}) == [
        (1, "text"), (2, "rcv1"), (3, "synthetic"), (4, "arff"), (5, "files")]


def test_the_sources_import_no_numba_and_no_model():
    """``mlnb.config`` reads every source's options from ``mlnb.data.sources``: that must stay light."""
    import subprocess
    import sys

    code = ("import sys, mlnb.data.sources; print(sorted({m.split('.')[0] if not m.startswith('mlnb') else m "
            "for m in sys.modules if m.startswith(('numba', 'mlnb.models', 'sklearn'))}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


#: a number with a unit of time (a timing) and, for throughputs, of bytes per second
_TIME = r"~?\d[\d.,]*\s?(?:ms|µs|ns|s)\b"
#: what makes a docstring or comment a measurement log: a timing before → another, a timing against or
#: vs another, a timing "on one thread"/"on N cores", "took N s", a speed ratio ("N× faster"), a
#: throughput, a CI run, a date, or a named machine; a time or size alone ("sent again in 10 ms",
#: "~70 MB of temporaries", "42 s, 3 min 20 s") is a design fact, not a log
_MEASUREMENT_LOG = re.compile("|".join([
    rf"{_TIME}\s*→\s*{_TIME}",
    rf"{_TIME}\s*→",
    r"\d[\d.,]*\s*→\s*~?\d[\d.,–]*\s?(?:ms|µs|ns|s)\b",
    rf"{_TIME}\s+(?:against|vs\.?)\s+~?\d",
    rf"\d[\d.,–]*\s+(?:against|vs\.?)\s+{_TIME}",
    rf"{_TIME}[^.;]{{0,40}}\bon (?:one|two|\d+) (?:threads?|cores?)\b",
    r"\b(?:took|takes|cost|costs|ran in)\s+(?:about\s+)?~?\d[\d.,–]*\s?(?:ms|µs|ns|s)\b",
    rf"{_TIME} of (?:a|an|the)\b",
    rf"\bfrom ~?\d[\d.]* to {_TIME}",
    r"\d(?:[.,]\d+)?(?:–\d+(?:\.\d+)?)?\s?[×x]\s+(?:faster|slower|the time|scipy|numpy)\b",
    r"\d\s?[KMG]i?B/s\b",
    r"\bCI run",
    r"\b20\d\d-\d\d-\d\d\b",
    r"\bmeasured (?:here|beside other jobs)\b",
    r"\bdevelopment machine\b",
    r"\bon an? (?:H\d{3}|\d+-core machine)\b",
]))


def _measurement_logs(source: str) -> list[str]:
    """The measurement logs in ``source``, read with its comment marks taken out and its lines joined, so
    that a log broken over lines is read whole (code has no such phrases: error messages name sizes)."""
    text = " ".join(re.sub(r"\n\s*#:?", " ", source).split())
    return [match.group(0) for match in _MEASUREMENT_LOG.finditer(text)]


def test_no_measurement_log_in_the_code():
    """A docstring or comment says why the code is so and names the experiments/ script that measures it;
    the numbers, with their machine and load, live in experiments/README.md."""
    found = [f"{path.relative_to(PACKAGE.parent)}: {log!r}" for path in sorted(PACKAGE.rglob("*.py"))
             for log in _measurement_logs(path.read_text(encoding="utf-8"))]
    assert found == []


def test_the_measurement_check_finds_logs_and_passes_design_facts():
    logs = ['"""A range of 1.5M non-zeros 5.5 → 0.97 ms on one thread."""',
            "# a pass's minibatch copies: 25 → 14–17 ms for 200k documents",
            "# (50k × 103 on 2 threads: 102 → 90 ms)",
            '"""Two threads forced on every step took 3.7 s a pass\n    against 2.0 s when waiting."""',
            "# unsigned places: (a row of 77 non-zeros: 4× faster than signed ones)",
            "# 0.43 ms against\n# 1.9 ms at 124k non-zeros",
            '"""One core checksums at ~2 GB/s."""', '"""Seen in the CI run of the day."""',
            '"""Measured 2026-11-28."""', '"""~230 MB RSS on the development machine."""',
            '"""on an H200 the pass took 297 ms"""', '"""as get_params takes 80 µs"""',
            "# min and max of 15M float32: 3.1 ms on\n# one thread or two",
            '"""numpy draws: 0.7 s of a study of four bootstraps"""',
            "# prefetching took the catch-up from 0.28 to 0.15 s of a pass"]
    design = ['"""Sends this process ``signum`` again, 10 ms later."""',
              "X = 1  # documents × categories per Newton block: ~70 MB of temporaries",
              '"""42 s, 3 min 20 s, 2 h 05 min."""', '"""a 2 × 2 system solved in closed form"""',
              '"""W and S, V × K float32 each (19.5 MB apiece for RCV1\'s 47,236 words)"""',
              "raise MlnbError(f'the run needs at least {need:.1f} GiB of memory ({scores} MiB of scores)')",
              '"""Its 95 % interval was measured on 2 to 5 values; ``--profile`` prints the seconds per stage."""',
              '"""Measured by experiments/bench_serial.py, numbers in experiments/README.md."""',
              '"""The speed-up of the all-documents task is capped at about 4× whatever the cores."""']
    assert [source for source in logs if not _measurement_logs(source)] == []
    assert [source for source in design if _measurement_logs(source)] == []


def test_every_function_has_a_caller_outside_the_tests():
    """vulture (where installed) finds no function, method, property or class that nothing in mlnb/ calls,
    beside the framework hooks and public API of ``tests/vulture_whitelist.py``."""
    import pytest

    vulture = pytest.importorskip("vulture")
    scan = vulture.Vulture()
    scan.scavenge([str(PACKAGE), str(Path(__file__).with_name("vulture_whitelist.py"))])
    found = [f"{item.filename}:{item.first_lineno}: {item.typ} {item.name}"
             for item in scan.get_unused_code(min_confidence=60)
             if item.typ in ("function", "method", "property", "class")]
    assert found == []


def _kind_specific_options() -> set[str]:
    """Option names some registered kinds have and others lack: one kind's options (npasses, n_jobs, ...)."""
    import dataclasses

    fields = [{f.name for f in dataclasses.fields(kind.options)} for kind in KINDS.values()]
    return set().union(*fields) - set.intersection(*fields)


def _option_reads(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each read of a kind-specific option on an ``options`` object: ``options.npasses``,
    ``spec.options.n_jobs``, ``getattr(spec.options, "lrate_per_category", ...)``, ``hasattr(options, "batch_size")``."""
    def is_options(node) -> bool:
        return (isinstance(node, ast.Name) and node.id == "options") or \
            (isinstance(node, ast.Attribute) and node.attr == "options")

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names and is_options(node.value):
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") \
                and len(node.args) >= 2 and is_options(node.args[0]) and isinstance(node.args[1], ast.Constant) \
                and node.args[1].value in names:
            found.append((node.lineno, node.args[1].value))
    return found


def test_no_kind_option_is_read_outside_the_models():
    """A command asks the kind what its options mean (``ModelKind.schedule``, ``idle_options``, ``check_data``,
    ``processes``, ``least_passes``, ...); outside mlnb/models/ no code reads an option only some kinds have."""
    names = _kind_specific_options()
    assert {"npasses", "n_jobs", "batch_size", "lrate_per_category"} <= names  # the check looks for them
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}: {name}" for path in sorted(PACKAGE.rglob("*.py"))
             if not path.is_relative_to(PACKAGE / "models")
             for line, name in _option_reads(ast.parse(path.read_text(encoding="utf-8")), names)]
    assert found == []


def test_the_option_check_finds_each_form_of_read():
    code = ("a = spec.options.npasses\nb = getattr(spec.options, 'n_jobs', 1)\nc = hasattr(options, 'batch_size')\n"
            "d = options.lrate_per_category\ne = spec.options\nf = getattr(x, 'npasses')\ng = config.npasses\n")
    assert _option_reads(ast.parse(code), {"npasses", "n_jobs", "batch_size", "lrate_per_category"}) == [
        (1, "npasses"), (2, "n_jobs"), (3, "batch_size"), (4, "lrate_per_category")]
