"""The config reference page, generated from the options dataclasses — the source of `mlnb show-config`.

Every key of a study config is a dataclass field made with ``mlnb.options.option`` (its default, its
one-line help, its allowed values); the model kinds and data sources declare theirs the same way in
their own modules. This walks ``mlnb.config.StudyConfig`` and the registered model kinds and writes
one Markdown table per section, so the page can never disagree with the code: ``docs/hooks.py``
calls :func:`config_reference` on every build.

    python docs/gen_config_reference.py > /tmp/config.md     # the page, to read or diff
"""

from __future__ import annotations

import dataclasses
import math


def _value(value) -> str:
    """A default as TOML text, in a code span (an empty string shown as ``""``)."""
    from mlnb.config import toml_value

    return f"`{toml_value(value)}`"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell: no pipe, no line break."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _allowed(metadata) -> str:
    """The allowed values of a field, from its ``option`` metadata: choices, or a range."""
    choices = metadata.get("choices")
    if choices:
        return ", ".join(f"`{choice}`" for choice in choices)
    low, high = metadata.get("min"), metadata.get("max")
    if low is None and high is None:
        return ""

    def bound(x):
        return f"{x:.3g}" if isinstance(x, float) and not float(x).is_integer() else f"{int(x):,}" \
            if not (isinstance(x, float) and math.isinf(x)) else "∞"

    left = "" if low is None else f"{bound(low)} {'<' if metadata.get('exclusive_min') else '≤'} "
    right = "" if high is None else f" {'<' if metadata.get('exclusive_max') else '≤'} {bound(high)}"
    return f"{left}x{right}"


def _table(options, prefix: str) -> tuple[list[str], list[tuple[str, object]]]:
    """Rows for the scalar fields of one options dataclass, and its nested sections (name, value)."""
    rows, sections = [], []
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        if dataclasses.is_dataclass(value):
            sections.append((f"{prefix}{f.name}", value))
        elif "help" in f.metadata and not isinstance(value, dict):
            rows.append(f"| `{f.name}` | {_value(value)} | {_allowed(f.metadata)} | {_cell(f.metadata['help'])} |")
    return rows, sections


HEADER = "| key | default | allowed | meaning |\n|---|---|---|---|"


def _section(title: str, options, prefix: str, lines: list[str]) -> None:
    rows, sections = _table(options, prefix)
    if rows:
        lines += [f"## `[{title}]`" if title else "## Top-level keys", "", HEADER, *rows, ""]
    for name, value in sections:
        _section(name, value, f"{name}.", lines)


def config_reference() -> str:
    """The whole page: every section of a study config, then every model kind's options."""
    from mlnb.config import MODEL_KEYS, StudyConfig
    from mlnb.models import KINDS

    lines = ["# Config options", "",
             "Every key a study config (TOML) can set, with its default, its allowed values and its "
             "meaning. This page is generated from the options dataclasses when the site is built — "
             "the same source as `mlnb show-config`, which prints the resolved config of a file with "
             "these comments. Any key can also be set on the command line: `--set section.key=value`.",
             ""]
    _section("", StudyConfig(), "", lines)
    lines += ["## `[models.<name>]`", "",
              "A study has any number of models, each a table `[models.<name>]` with a `kind`, that kind's "
              "options (below) and these keys. A config without `[models]` studies `nb` (`naive_bayes`) "
              "and `lr` (`logistic`) with their defaults.", "",
              "| key | meaning |", "|---|---|",
              *(f"| `{key}` | {_cell(help)} |" for key, help in MODEL_KEYS.items()), ""]
    for kind in KINDS.values():
        rows, _ = _table(kind.options(), "")
        lines += [f"### kind = `\"{kind.name}\"`", "", _cell(kind.help) + ".", ""]
        lines += [HEADER, *rows, ""] if rows else ["No options.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(config_reference())
