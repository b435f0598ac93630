"""Mulan multilabel data sets: a sparse (or dense) ARFF file plus an XML label list.

An ARFF file is a header then rows::

    @relation NAME
    @attribute NAME TYPE         TYPE is numeric | real | integer | {v1,v2,...}
    ...
    @data
    {0 1,17 1,1840 1}            sparse row: 0-based attribute index, value; omitted = 0
    0,1,0,...,1                  dense row: one value per attribute

``%`` starts a comment line; keywords are case-insensitive; a name may be quoted
with ``'`` or ``"`` (backslash escapes inside). The label attributes are the ones
named in the companion ``<name>.xml``::

    <labels xmlns="http://mulan.sourceforge.net/labels"><label name="A.A1"></label>...</labels>

Mulan puts them last, but they are matched by name: in enron the file order
differs from the XML order. Every other attribute is a feature, kept in file
order. Mulan declares its binary features and labels nominal ``{0,1}``, so a
nominal attribute whose values are numbers starting at 0 counts as numeric
(``0`` first, because an omitted sparse value means the first declared one);
any other nominal, string or date attribute is rejected. Files are read as
UTF-8. Rows are tokenised one line at a time and converted to numbers by numpy
in one go; only when that fails is the file scanned token by token, to name the
line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from xml.parsers import expat

import numpy as np
import scipy.sparse as sp

from mlnb.budget import check_data_sizes
from mlnb.data.dataset import Dataset, RowOrigin
from mlnb.data.splits import given_split_rule
from mlnb.data.validate import check_features, existing_file
from mlnb.errors import MlnbError

_NUMERIC_TYPES = {"numeric", "real", "integer"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


@dataclass(frozen=True)
class _Attribute:
    name: str
    kind: str                 # "numeric", "nominal" or the declared type word (string, date, ...)
    values: tuple[str, ...]   # declared nominal values, () otherwise
    line: int

    def describe(self) -> str:
        if self.kind == "nominal":
            return f"{self.name!r} {{{','.join(self.values)}}}"
        return f"{self.name!r} {self.kind}"

    def numeric_values(self) -> np.ndarray | None:
        """The declared nominal values as numbers, or None if any is not a number."""
        try:
            return np.array([float(v) for v in self.values])
        except ValueError:
            return None


@dataclass
class _Parsed:
    X: sp.csr_matrix
    Y: sp.csr_matrix
    feature_names: list[str]
    attributes: list[_Attribute]
    row_lines: np.ndarray  # (documents,) the line of each row


# -- reading text --------------------------------------------------------------------------------

def _read_lines(path: Path, what: str) -> list[str]:
    """The file's lines (UTF-8, BOM allowed), or an MlnbError for a missing or undecodable file."""
    existing_file(path, what)
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        # Counting newlines in the raw bytes is safe: in UTF-8 a 0x0A byte is always a newline.
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise MlnbError(f"{path}:{line}: byte 0x{data[error.start]:02x} at column {column} is not UTF-8; "
                        f"expected a UTF-8 {what}") from None
    # split("\n") rather than splitlines(), which would also break at \x0c, \x1c, \u2028 ... and
    # so miscount lines.
    return text.split("\n")


# -- header --------------------------------------------------------------------------------------

def _take_name(path: Path, number: int, text: str) -> tuple[str, str]:
    """Split 'NAME rest' (NAME possibly quoted) into (NAME, rest)."""
    if not text:
        return "", ""
    if text[0] not in "'\"":
        name, *rest = text.split(None, 1)
        return name, rest[0].strip() if rest else ""
    quote, chars, i = text[0], [], 1
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            chars.append(_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
            continue
        if c == quote:
            return "".join(chars), text[i + 1:].strip()
        chars.append(c)
        i += 1
    raise MlnbError(f"{path}:{number}: expected a closing {quote} after the name {text[:40]!r}")


def _split_nominal(path: Path, number: int, inner: str) -> tuple[str, ...]:
    values, rest = [], inner.strip()
    while rest:
        if rest[0] in "'\"":
            value, rest = _take_name(path, number, rest)
            if rest and not rest.startswith(","):
                raise MlnbError(f"{path}:{number}: expected ',' after the nominal value {value!r}, "
                                f"got {rest[:20]!r}")
            rest = rest[1:]
        else:
            value, _, rest = rest.partition(",")
            value = value.strip()
        values.append(value)
        rest = rest.strip()
    return tuple(values)


def _parse_attribute(path: Path, number: int, text: str) -> _Attribute:
    name, spec = _take_name(path, number, text)
    if not name or not spec:
        raise MlnbError(f"{path}:{number}: expected '@attribute NAME TYPE', got '@attribute {text}'")
    word = spec.split()[0].lower()
    if word in _NUMERIC_TYPES:
        return _Attribute(name, "numeric", (), number)
    if spec.startswith("{"):
        if not spec.endswith("}"):
            raise MlnbError(f"{path}:{number}: expected '}}' closing the values of attribute {name!r}")
        return _Attribute(name, "nominal", _split_nominal(path, number, spec[1:-1]), number)
    if word in {"string", "date", "relational"}:
        return _Attribute(name, word, (), number)
    raise MlnbError(f"{path}:{number}: expected a type (numeric, real, integer or {{values}}) for "
                    f"attribute {name!r}, got {spec[:40]!r}")


def _parse_header(path: Path, lines: list[str]) -> tuple[list[_Attribute], int]:
    """The declared attributes and the index of the '@data' line."""
    attributes: list[_Attribute] = []
    seen: dict[str, int] = {}
    content = False
    for i, raw in enumerate(lines):
        line, number = raw.strip(), i + 1
        if not line or line.startswith("%"):
            continue
        content = True
        keyword, *rest = line.split(None, 1)
        keyword, rest = keyword.lower(), rest[0] if rest else ""
        if keyword == "@relation":
            continue
        if keyword == "@attribute":
            attribute = _parse_attribute(path, number, rest.strip())
            if attribute.name in seen:
                raise MlnbError(f"{path}:{number}: attribute {attribute.name!r} is declared twice "
                                f"(lines {seen[attribute.name]} and {number}); names must be unique")
            seen[attribute.name] = number
            attributes.append(attribute)
            continue
        if keyword == "@data":
            if not attributes:
                raise MlnbError(f"{path}:{number}: '@data' before any '@attribute'; expected the "
                                "attributes to be declared first")
            return attributes, i
        raise MlnbError(f"{path}:{number}: expected '@relation', '@attribute' or '@data' in the "
                        f"header, got {line[:40]!r}")
    # The text after a final newline is not a line of its own.
    last = max(1, len(lines) - (lines[-1] == ""))
    if not content:
        raise MlnbError(f"{path}:{last}: empty file (nothing but comments or blank lines); expected "
                        "an ARFF header ('@relation', '@attribute' lines, '@data')")
    raise MlnbError(f"{path}:{last}: the file ends without '@data'; expected '@data' "
                    "after the attributes, then the rows")


def _check_types(path: Path, attributes: list[_Attribute], is_label: np.ndarray):
    """Every attribute must hold numbers; a sparse row's omitted value must mean 0."""
    for attribute, label in zip(attributes, is_label):
        role = "label" if label else "feature"
        if attribute.kind == "numeric":
            continue
        if attribute.kind != "nominal":
            raise MlnbError(f"{path}:{attribute.line}: {role} attribute {attribute.name!r} has type "
                            f"{attribute.kind}; expected numeric or a 0/1 nominal such as {{0,1}}")
        numbers = attribute.numeric_values()
        if numbers is None:
            raise MlnbError(f"{path}:{attribute.line}: {role} attribute {attribute.describe()} is "
                            "nominal; expected numeric or a nominal with numeric values such as {0,1}")
        if numbers.size == 0 or numbers[0] != 0:
            raise MlnbError(f"{path}:{attribute.line}: {role} attribute {attribute.describe()} must "
                            "declare 0 first (an omitted sparse value means the first declared value)")


def _compare_headers(path: Path, attributes: list[_Attribute], ref_path: Path,
                     reference: list[_Attribute], data_line: int):
    def key(a: _Attribute):
        return a.name, a.kind, a.values

    for i, (mine, theirs) in enumerate(zip(attributes, reference)):
        if key(mine) != key(theirs):
            raise MlnbError(f"{path}:{mine.line}: attribute {i} is {mine.describe()} but "
                            f"{ref_path}:{theirs.line} declares {theirs.describe()}; train and test "
                            "files must declare the same attributes")
    if len(attributes) != len(reference):
        line = attributes[len(reference)].line if len(attributes) > len(reference) else data_line
        raise MlnbError(f"{path}:{line}: declares {len(attributes)} attributes but {ref_path} declares "
                        f"{len(reference)}; train and test files must declare the same attributes")


# -- rows ----------------------------------------------------------------------------------------

def _tokenise_rows(path: Path, lines: list[str], start: int, n_attributes: int):
    """Index tokens, value tokens, entries per row and line number per row, one loop per line."""
    index_tokens: list[str] = []
    value_tokens: list[str] = []
    counts: list[int] = []
    numbers: list[int] = []
    dense_indices = [str(j) for j in range(n_attributes)]
    for i in range(start, len(lines)):
        line, number = lines[i].strip(), i + 1
        if not line or line.startswith("%"):
            continue
        if line.startswith("{"):
            if not line.endswith("}"):
                raise MlnbError(f"{path}:{number}: sparse row has no closing '}}'; expected "
                                "'{index value, index value, ...}' on one line")
            inner = line[1:-1]
            fields = inner.replace(",", " ").split()
            n_pairs = inner.count(",") + 1 if fields else 0
            if len(fields) != 2 * n_pairs:
                raise MlnbError(f"{path}:{number}: expected 'index value' pairs separated by commas "
                                f"inside '{{...}}', got {line[:60]!r}")
            index_tokens.extend(fields[0::2])
            value_tokens.extend(fields[1::2])
            counts.append(n_pairs)
        else:
            fields = line.replace(",", " ").split()
            if len(fields) != n_attributes or line.count(",") != n_attributes - 1:
                raise MlnbError(f"{path}:{number}: expected {n_attributes} comma-separated values "
                                f"(one per attribute) or a sparse '{{index value, ...}}' row, got "
                                f"{line.count(',') + 1}")
            index_tokens.extend(dense_indices)
            value_tokens.extend(fields)
            counts.append(n_attributes)
        numbers.append(number)
    return index_tokens, value_tokens, np.array(counts, dtype=np.int64), np.array(numbers, dtype=np.int64)


def _line_of(position: int, counts: np.ndarray, numbers: np.ndarray) -> int:
    """The file line holding flat entry ``position``."""
    row = int(np.searchsorted(np.cumsum(counts), position, side="right"))
    return int(numbers[row])


def _convert(path: Path, tokens: list[str], dtype, what: str, counts, numbers) -> np.ndarray:
    try:
        return np.array(tokens, dtype=dtype)
    except (ValueError, OverflowError):
        pass
    # Slow path, only for a file that is already known to be bad: find the first culprit.
    convert = int if dtype is np.int64 else float
    for position, token in enumerate(tokens):
        try:
            if convert is int and not -2**63 <= convert(token) < 2**63:
                raise ValueError(token)  # beyond int64: as bad as a non-number here
            convert(token)
        except ValueError:
            line = _line_of(position, counts, numbers)
            if token == "?":
                raise MlnbError(f"{path}:{line}: missing value '?' is not supported; expected "
                                f"{what}") from None
            raise MlnbError(f"{path}:{line}: expected {what}, got {token!r}") from None
    raise MlnbError(f"{path}: could not convert the rows to numbers; expected {what}")


def _check_entries(path: Path, attributes, rows, indices, values, counts, numbers, is_label):
    """Indices in range and not repeated; values finite, declared and 0/1 for labels."""
    n = len(attributes)

    def fail(mask, message):
        position = int(np.flatnonzero(mask)[0])
        raise MlnbError(f"{path}:{_line_of(position, counts, numbers)}: " + message(position))

    out = (indices < 0) | (indices >= n)
    if out.any():
        fail(out, lambda p: f"attribute index {indices[p]} is beyond the {n} attributes declared; "
                            f"expected 0..{n - 1}")
    key = rows * n + indices
    order = np.argsort(key, kind="stable")
    repeated = np.zeros(key.size, dtype=bool)
    repeated[order[1:]] = key[order[1:]] == key[order[:-1]]
    if repeated.any():
        fail(repeated, lambda p: f"attribute index {indices[p]} appears twice in one row; expected "
                                 "each attribute at most once")
    bad = ~np.isfinite(values.astype(np.float32))
    if bad.any():
        fail(bad, lambda p: f"value {values[p]:g} of attribute {attributes[indices[p]].name!r} is not a "
                            "finite float32 number")
    label = is_label[indices]
    bad = label & (values != 0) & (values != 1)
    if bad.any():
        fail(bad, lambda p: f"label {attributes[indices[p]].name!r} has value {values[p]:g}; expected 0 or 1")
    # Nominal features may only take a declared value; attributes sharing a value list are
    # checked together, so this is one pass per distinct list (one, {0,1}, in Mulan's files).
    groups: dict[tuple[str, ...], list[int]] = {}
    for j, attribute in enumerate(attributes):
        if attribute.kind == "nominal":
            groups.setdefault(attribute.values, []).append(j)
    for columns in groups.values():
        member = np.zeros(n, dtype=bool)
        member[columns] = True
        allowed = attributes[columns[0]].numeric_values()
        bad = member[indices] & ~np.isin(values, allowed)
        if bad.any():
            fail(bad, lambda p: f"value {values[p]:g} of attribute {attributes[indices[p]].describe()} "
                                "is not one of its declared values")


def _parse(path, label_names, label_lines=None, xml_path=None, reference=None) -> _Parsed:
    """read_arff's work; label_lines/xml_path only improve messages, reference = (path, attributes)."""
    path = Path(path)
    label_names = list(label_names)
    lines = _read_lines(path, "ARFF file")
    attributes, data_index = _parse_header(path, lines)
    data_line = data_index + 1
    if reference is not None:
        _compare_headers(path, attributes, reference[0], reference[1], data_line)

    position = {a.name: j for j, a in enumerate(attributes)}
    label_column = np.full(len(attributes), -1, dtype=np.int64)
    for k, name in enumerate(label_names):
        if name not in position:
            if xml_path is not None:
                raise MlnbError(f"{xml_path}:{label_lines[k]}: label {name!r} of {Path(xml_path).name} is "
                                f"not an attribute of {path}")
            raise MlnbError(f"{path}:{data_line}: label {name!r} is not an attribute of {path} "
                            "(its attributes end here)")
        if label_column[position[name]] >= 0:
            raise MlnbError(f"{path}: label {name!r} is given twice for this file; expected distinct "
                            "label names")
        label_column[position[name]] = k
    is_label = label_column >= 0
    _check_types(path, attributes, is_label)

    index_tokens, value_tokens, counts, numbers = _tokenise_rows(path, lines, data_index + 1,
                                                                len(attributes))
    if counts.size == 0:
        raise MlnbError(f"{path}:{data_line}: no rows after '@data'; expected at least one document")
    indices = _convert(path, index_tokens, np.int64, "an integer attribute index", counts, numbers)
    values = _convert(path, value_tokens, np.float64, "a number", counts, numbers)
    rows = np.repeat(np.arange(counts.size), counts)
    _check_entries(path, attributes, rows, indices, values, counts, numbers, is_label)

    feature_column = np.cumsum(~is_label) - 1
    keep = values != 0
    in_y = keep & is_label[indices]
    in_x = keep & ~is_label[indices]
    n_rows, n_features = counts.size, int((~is_label).sum())
    check_data_sizes(str(path), n_documents=n_rows, n_features=n_features, n_categories=len(label_names),
                     nnz=int(in_x.sum()))
    X = sp.csr_matrix((values[in_x].astype(np.float32), (rows[in_x], feature_column[indices[in_x]])),
                      shape=(n_rows, n_features), dtype=np.float32)
    Y = sp.csr_matrix((np.ones(int(in_y.sum()), dtype=np.int8), (rows[in_y], label_column[indices[in_y]])),
                      shape=(n_rows, len(label_names)), dtype=np.int8)
    X.sort_indices()
    Y.sort_indices()
    X = check_features(X, str(path), row_lines=numbers)  # as every source: |x| within float32 scoring's reach
    feature_names = [a.name for a, label in zip(attributes, is_label) if not label]
    return _Parsed(X, Y, feature_names, attributes, numbers)


# -- public API ----------------------------------------------------------------------------------

def read_arff(path: str | os.PathLike, label_names: list[str]):
    """Read one ARFF file; the attributes named in ``label_names`` are the labels.

    Returns ``(X, Y, feature_names, label_names)``: X float32 CSR (documents ×
    features, the non-label attributes in file order), Y int8 0/1 CSR
    (documents × labels, columns in the order of ``label_names``).
    """
    parsed = _parse(path, label_names)
    return parsed.X, parsed.Y, parsed.feature_names, list(label_names)


def _read_label_declarations(xml_path: Path) -> list[tuple[str, int]]:
    """(name, line) of every <label> element, nested ones included, in document order."""
    existing_file(xml_path, "Mulan label XML")
    data = xml_path.read_bytes()
    if not data.strip():
        raise MlnbError(f"{xml_path}:1: empty file; expected <labels><label name=\"...\"/>...</labels>")
    parser = expat.ParserCreate(namespace_separator=" ")
    found: list[tuple[str, int]] = []
    seen: dict[str, int] = {}
    depth = [0]

    def start(tag, attributes):
        local, line = tag.rsplit(" ", 1)[-1], parser.CurrentLineNumber
        depth[0] += 1
        if depth[0] == 1 and local != "labels":
            raise MlnbError(f"{xml_path}:{line}: root element is <{local}>; expected <labels>")
        if local != "label":
            return
        name = attributes.get("name")
        if not name:
            raise MlnbError(f"{xml_path}:{line}: <label> without a name; expected <label name=\"...\">")
        if name in seen:
            raise MlnbError(f"{xml_path}:{line}: label {name!r} is declared twice (lines {seen[name]} "
                            f"and {line}); expected distinct names")
        seen[name] = line
        found.append((name, line))

    def end(tag):
        depth[0] -= 1

    parser.StartElementHandler, parser.EndElementHandler = start, end
    try:
        parser.Parse(data, True)
    except expat.ExpatError as error:
        raise MlnbError(f"{xml_path}:{error.lineno}: malformed XML ({expat.ErrorString(error.code)} at "
                        f"column {error.offset + 1}); expected a Mulan <labels> file") from None
    if not found:
        raise MlnbError(f"{xml_path}:1: no <label name=\"...\"> elements; expected at least one label")
    return found


def read_mulan_labels(xml_path: str | os.PathLike) -> list[str]:
    """The label names of a Mulan ``<name>.xml`` file, in document order."""
    return [name for name, _ in _read_label_declarations(Path(xml_path))]


def load_arff_dataset(train_path, test_path, xml_path, name: str | None = None) -> Dataset:
    """A Dataset from Mulan's train and test ARFF files and label XML (the official split).

    The two files must declare the same attributes. ``name`` defaults to the
    XML file's stem (``bibtex`` for ``bibtex.xml``).
    """
    xml_path = Path(xml_path)
    declarations = _read_label_declarations(xml_path)
    labels = [label for label, _ in declarations]
    lines = [line for _, line in declarations]
    train = _parse(train_path, labels, lines, xml_path)
    test = _parse(test_path, labels, lines, xml_path, reference=(Path(train_path), train.attributes))
    origins = [RowOrigin(str(path), parsed.X.shape[0], row_lines=parsed.row_lines)
               for path, parsed in ((train_path, train), (test_path, test))]
    return Dataset.from_train_test(train.X, train.Y, test.X, test.Y, labels, train.feature_names, origins=origins,
                                   name=name or xml_path.stem, split_rule=given_split_rule("test file", test_path))
