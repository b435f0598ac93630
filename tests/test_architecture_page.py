"""docs/architecture.md stays true of the code: every ``mlnb.…`` name it gives resolves, every file it names
exists, and its layer table is the direction every import of the package takes (``tests/test_architecture.py``
reads the imports)."""

import importlib
import re
from pathlib import Path

from tests.test_architecture import PACKAGE, _imports, _modules

PAGE = PACKAGE.parent / "docs" / "architecture.md"
CODE = re.compile(r"`([^`\n]+)`")
DOTTED = re.compile(r"^mlnb(?:\.\w+)*$")
PATH = re.compile(r"(?<![\w/.])((?:mlnb|tests|docs|experiments)/[\w./-]*)")


def _code_spans() -> list[str]:
    return CODE.findall(PAGE.read_text(encoding="utf-8"))


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module of the package, or a name (a function, class, attribute) in one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def test_every_name_on_the_page_is_in_the_code():
    names = sorted({span for span in _code_spans() if DOTTED.match(span)})
    assert len(names) > 50  # the page was read
    assert [name for name in names if not resolves(name)] == []


def test_every_file_on_the_page_exists():
    paths = sorted({match.rstrip(".") for span in _code_spans() for match in PATH.findall(span)})
    assert len(paths) > 10
    assert [path for path in paths if not (PACKAGE.parent / path).exists()] == []


def layers() -> list[tuple[str, list[str]]]:
    """(layer, its module prefixes) for each row of the page's table under "## The layers", in order."""
    section = PAGE.read_text(encoding="utf-8").split("## The layers", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    return [(layer.strip(), [span for span in CODE.findall(modules) if DOTTED.match(span)])
            for layer, modules in rows[1:]]  # the header row left out


def layer_of(module: str, table) -> int | None:
    """The row of ``module``'s longest matching prefix in ``table`` (``mlnb`` itself: the package's own
    ``__init__`` only), or None."""
    best, row = -1, None
    for number, (_, prefixes) in enumerate(table):
        for prefix in prefixes:
            inside = module.startswith(prefix + ".") and prefix != "mlnb"
            if (module == prefix or inside) and len(prefix) > best:
                best, row = len(prefix), number
    return row


def test_the_layer_table_places_every_module_and_no_import_goes_down_the_table():
    table = layers()
    assert [layer for layer, _ in table][:2] == ["foundation", "data"] and table[-1][0] == "cli"
    modules = _modules()
    assert [module for module in sorted(modules) if layer_of(module, table) is None] == []
    against = []
    for module, path in sorted(modules.items()):
        for imported in sorted(_imports(module, path, modules)):
            if layer_of(imported, table) > layer_of(module, table):
                against.append(f"{module} ({table[layer_of(module, table)][0]}) imports {imported} "
                               f"({table[layer_of(imported, table)][0]})")
    assert against == []


def test_the_layer_check_finds_an_import_against_the_order():
    table = [("foundation", ["mlnb.errors"]), ("data", ["mlnb.data"]), ("cli", ["mlnb.cli", "mlnb"])]
    assert [layer_of(name, table) for name in ("mlnb.errors", "mlnb.data.stream", "mlnb.cli", "mlnb")] == [0, 1, 2, 2]
    assert layer_of("mlnb.unlisted", table) is None  # a module the table leaves out is reported, not put in "mlnb"
    assert layer_of("mlnb.data", table) > layer_of("mlnb.errors", table)  # data importing errors: allowed
    assert layer_of("mlnb.cli", table) > layer_of("mlnb.data.stream", table)  # the reverse would be reported
