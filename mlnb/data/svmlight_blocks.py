"""Parse a block of svmlight lines (bytes) into CSR arrays, for the svmlight reader
(:func:`mlnb.data.svmlight.parse_file`: the in-memory loader and the streaming source alike).

Two parsers give the same arrays:

* a compiled one (numba) for the common grammar — comma-separated integer labels,
  ``index:value`` pairs with decimal values — about 20x scikit-learn's reader;
* scikit-learn's ``load_svmlight_file`` on the block, used without numba and for
  any block the compiled parser does not accept: anything unusual (``qid:``, ``1.0``
  as a label, ``nan``, a value with more than 15 significant digits) or wrong. So the
  compiled parser never decides what an odd line means: scikit-learn's reader does.

When a block is wrong, it is scanned line by line (:func:`describe_bad_line`)
to name the first bad line of the file.

A value is exact: a decimal ``m · 10^e`` with ``m < 2^53`` and ``|e| ≤ 22`` is
``m * 10^e`` or ``m / 10^-e`` in float64, both correctly rounded because both
operands are exact (Clinger's fast path), i.e. the double that ``strtod``
gives; it is then rounded to float32 as scikit-learn's float32 reader does.
Other values go to the scikit-learn path.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import numpy as np

from mlnb._kernels.jit import HAVE_NUMBA, njit

#: parser outcomes
OK, UNSUPPORTED, MORE_DEFERRED = 0, 1, 2



@dataclass
class ParsedBlock:
    """The documents of a block: CSR parts of X and of the label lists, and their lines.

    indices are 0-based feature numbers (index_base already subtracted); lines are
    1-based line numbers within the block (blank and comment lines are not documents).
    """

    indptr: np.ndarray  # int64 (m + 1,)
    indices: np.ndarray  # int32 (nnz,)
    data: np.ndarray  # float32 (nnz,)
    label_indptr: np.ndarray  # int64 (m + 1,)
    labels: np.ndarray  # int64 (number of labels,)
    lines: np.ndarray  # int64 (m,)

    @property
    def n_documents(self) -> int:
        return self.indptr.size - 1

    @property
    def max_index(self) -> int:
        return int(self.indices.max()) if self.indices.size else -1

    @property
    def max_label(self) -> int:
        return int(self.labels.max()) if self.labels.size else -1


_POW10 = np.array([10.0**k for k in range(23)])  # exact: 10^22 < 2^53 · 2^22
_TWO53 = 2**53
_FLOAT32_MAX = float(np.finfo(np.float32).max)
#: the largest label and 0-based feature index a line may hold (scipy's int32 indices): larger ones are
#: refused on their line, never wrapped or cast; what the data may size is bounded further by mlnb.budget
_LARGEST_ID = 2**31 - 2

if HAVE_NUMBA:
    @njit(cache=True)
    def _is_space(c):  # pragma: no cover - compiled
        """Whether byte c separates tokens as ``bytes.split()``'s spaces do, less the newline (space, tab, CR, VT,
        FF).

        Why a kernel: inlined into the compiled parser's loop over the bytes. Measured by
        experiments/bench_shards.py."""
        return c == 32 or c == 9 or c == 13 or c == 11 or c == 12  # bytes.split()'s, less the newline

    @njit(cache=True)
    def _decimal_to_float32(mantissa, exponent, truncated, pow10):  # pragma: no cover - compiled
        """(float32 value of mantissa · 10^exponent, True) when it is surely what strtod and a
        cast to float32 give; (0, False) when unsure (the caller asks Python's float).

        Why a kernel: converts a value inside the parser's loop over the bytes, with no Python float per value.
        Measured by experiments/bench_shards.py."""
        if mantissa == 0:
            return np.float32(0.0), True
        if not truncated and mantissa <= _TWO53 and -22 <= exponent <= 22:
            # Clinger's fast path: exact operands, one correctly rounded operation = strtod's double
            x = mantissa * pow10[exponent] if exponent >= 0 else mantissa / pow10[-exponent]
            if x > _FLOAT32_MAX:
                return np.float32(0.0), False
            return np.float32(x), True
        if exponent < -44 or exponent > 44:
            return np.float32(0.0), False
        # within 2 float64 ulps of the exact value; right after rounding to float32 unless
        # the exact value may sit on the other side of a float32 rounding midpoint
        x = float(mantissa)
        if exponent > 22:
            x = x * pow10[22] * pow10[exponent - 22]
        elif exponent >= 0:
            x = x * pow10[exponent]
        elif exponent >= -22:
            x = x / pow10[-exponent]
        else:
            x = x / pow10[22] / pow10[-exponent - 22]
        if x > _FLOAT32_MAX or x < 1e-37:  # overflow, or float32's subnormal range
            return np.float32(0.0), False
        f = np.float32(x)
        fd = np.float64(f)
        fraction, power = math.frexp(fd)
        float32_ulp = math.ldexp(1.0, power - 24)
        half_gap = float32_ulp / 4 if (fraction == 0.5 and x < fd) else float32_ulp / 2
        margin = half_gap - abs(x - fd)  # distance from x to the nearest rounding midpoint
        if margin <= 8.0 * math.ldexp(x, -52):
            return np.float32(0.0), False
        return f, True

    @njit(cache=True)
    def _parse_numba(buf, index_base, n_features, n_categories, indptr, indices, data, label_indptr,
                     labels, lines, deferred_at, deferred_start, deferred_stop, pow10):  # pragma: no cover
        """Fill the output arrays; (status, documents, non-zeros, labels, deferred values).

        n_features / n_categories < 0: not known yet (no range check). A value that
        ``_decimal_to_float32`` is unsure of is deferred: its bytes buf[start:stop] are
        parsed afterwards by Python's float.

        Why a kernel: one pass over a block's bytes into CSR arrays, where scikit-learn's reader goes through Python
        objects. Measured by experiments/bench_shards.py (the svmlight stream).
        """
        n = buf.size
        m = 0
        nnz = 0
        nlab = 0
        ndeferred = 0
        line = 0
        p = 0
        while p < n:
            line += 1
            end = p
            while end < n and buf[end] != 10:
                end += 1
            stop = p  # a '#' starts a comment
            while stop < end and buf[stop] != 35:
                if buf[stop] == 0:
                    return UNSUPPORTED, 0, 0, 0, 0
                stop += 1
            q = p
            first = True
            is_document = False
            previous = -1
            while True:
                while q < stop and _is_space(buf[q]):
                    q += 1
                if q >= stop:
                    break
                token_end = q
                has_colon = False
                while token_end < stop and not _is_space(buf[token_end]):
                    if buf[token_end] == 58:
                        has_colon = True
                    token_end += 1
                is_document = True
                r = q
                if first and not has_colon:  # labels: digits (',' digits)*
                    while True:
                        if r >= token_end or not (48 <= buf[r] <= 57):
                            return UNSUPPORTED, 0, 0, 0, 0
                        value = 0
                        while r < token_end and 48 <= buf[r] <= 57:
                            value = value * 10 + (buf[r] - 48)
                            if value > 2147483646:  # _LARGEST_ID
                                return UNSUPPORTED, 0, 0, 0, 0
                            r += 1
                        if n_categories >= 0 and value >= n_categories:
                            return UNSUPPORTED, 0, 0, 0, 0
                        labels[nlab] = value
                        nlab += 1
                        if r == token_end:
                            break
                        if buf[r] != 44:
                            return UNSUPPORTED, 0, 0, 0, 0
                        r += 1
                else:  # digits ':' [sign] digits ['.' digits] [('e'|'E') [sign] digits]
                    index = 0
                    if r >= token_end or not (48 <= buf[r] <= 57):
                        return UNSUPPORTED, 0, 0, 0, 0
                    while r < token_end and 48 <= buf[r] <= 57:
                        index = index * 10 + (buf[r] - 48)
                        if index > 2147483647:
                            return UNSUPPORTED, 0, 0, 0, 0
                        r += 1
                    if r >= token_end or buf[r] != 58:
                        return UNSUPPORTED, 0, 0, 0, 0
                    r += 1
                    index -= index_base
                    if index > 2147483646:  # _LARGEST_ID
                        return UNSUPPORTED, 0, 0, 0, 0
                    if index < 0 or index <= previous or (n_features >= 0 and index >= n_features):
                        return UNSUPPORTED, 0, 0, 0, 0
                    previous = index
                    value_start = r
                    negative = False
                    if r < token_end and (buf[r] == 45 or buf[r] == 43):
                        negative = buf[r] == 45
                        r += 1
                    mantissa = 0  # the first 18 significant digits
                    exponent = 0
                    truncated = False
                    digits = 0
                    while r < token_end and 48 <= buf[r] <= 57:
                        if mantissa < 100000000000000000:
                            mantissa = mantissa * 10 + (buf[r] - 48)
                        else:
                            exponent += 1
                            truncated = truncated or buf[r] != 48
                        digits += 1
                        r += 1
                    if r < token_end and buf[r] == 46:
                        r += 1
                        while r < token_end and 48 <= buf[r] <= 57:
                            if mantissa < 100000000000000000:
                                mantissa = mantissa * 10 + (buf[r] - 48)
                                exponent -= 1
                            else:
                                truncated = truncated or buf[r] != 48
                            digits += 1
                            r += 1
                    if digits == 0:
                        return UNSUPPORTED, 0, 0, 0, 0
                    if r < token_end and (buf[r] == 101 or buf[r] == 69):
                        r += 1
                        exponent_negative = False
                        if r < token_end and (buf[r] == 45 or buf[r] == 43):
                            exponent_negative = buf[r] == 45
                            r += 1
                        written = 0
                        exponent_digits = 0
                        while r < token_end and 48 <= buf[r] <= 57:
                            written = min(written * 10 + (buf[r] - 48), 100000)
                            exponent_digits += 1
                            r += 1
                        if exponent_digits == 0:
                            return UNSUPPORTED, 0, 0, 0, 0
                        exponent += -written if exponent_negative else written
                    if r != token_end:
                        return UNSUPPORTED, 0, 0, 0, 0
                    x, sure = _decimal_to_float32(mantissa, exponent, truncated, pow10)
                    if not sure:
                        if ndeferred == deferred_at.size:
                            return MORE_DEFERRED, 0, 0, 0, 0
                        deferred_at[ndeferred] = nnz
                        deferred_start[ndeferred] = value_start
                        deferred_stop[ndeferred] = token_end
                        ndeferred += 1
                    indices[nnz] = index
                    data[nnz] = -x if negative else x
                    nnz += 1
                first = False
                q = token_end
            if is_document:
                lines[m] = line
                m += 1
                indptr[m] = nnz
                label_indptr[m] = nlab
            p = end + 1
        return OK, m, nnz, nlab, ndeferred


def parse_fast(block: bytes, index_base: int, n_features: int | None,
               n_categories: int | None) -> ParsedBlock | None:
    """The compiled parser's result, or None when it does not take the block (or without numba)."""
    if not HAVE_NUMBA:
        return None
    buf = np.frombuffer(block, dtype=np.uint8)
    n_pairs = block.count(b":")
    n_lines = block.count(b"\n") + 1
    indptr, label_indptr = np.zeros(n_lines + 1, np.int64), np.zeros(n_lines + 1, np.int64)
    indices, data = np.empty(n_pairs, np.int32), np.empty(n_pairs, np.float32)
    labels, lines = np.empty(block.count(b",") + n_lines, np.int64), np.empty(n_lines, np.int64)
    capacity = n_pairs // 64 + 16  # values left to Python's float are rare: room for more only when needed
    while True:
        deferred_at, deferred_start, deferred_stop = (np.empty(capacity, np.int64) for _ in range(3))
        status, m, nnz, nlab, ndeferred = _parse_numba(
            buf, index_base, -1 if n_features is None else n_features, -1 if n_categories is None else n_categories,
            indptr, indices, data, label_indptr, labels, lines, deferred_at, deferred_start, deferred_stop, _POW10)
        if status != MORE_DEFERRED:
            break
        capacity = n_pairs
    if status != OK:
        return None
    data = data[:nnz]
    if ndeferred:
        with np.errstate(over="ignore"):
            values = np.array([float(block[a:b]) for a, b in zip(deferred_start[:ndeferred].tolist(),
                                                                 deferred_stop[:ndeferred].tolist())],
                              dtype=np.float64).astype(np.float32)
        if not np.isfinite(values).all():
            return None
        data[deferred_at[:ndeferred]] = values
    return ParsedBlock(indptr=indptr[:m + 1], indices=indices[:nnz], data=data,
                       label_indptr=label_indptr[:m + 1], labels=labels[:nlab], lines=lines[:m])


def parse_sklearn(block: bytes, index_base: int, n_features: int | None,
                  n_categories: int | None) -> ParsedBlock | None:
    """scikit-learn's reading of the block, with the in-memory loader's checks; None if it is wrong."""
    try:
        from sklearn.datasets import load_svmlight_file  # here: sklearn.datasets is slow to import

        X, label_tuples = load_svmlight_file(io.BytesIO(block), n_features=n_features, dtype=np.float32,
                                             multilabel=True, zero_based=bool(index_base == 0))
    except (ValueError, OverflowError, UnicodeDecodeError):
        return None
    X = X.tocsr()
    if X.nnz and not (np.isfinite(X.data).all() and X.indices.max() <= _LARGEST_ID):
        return None
    lengths = np.fromiter((len(t) for t in label_tuples), dtype=np.int64, count=len(label_tuples))
    flat = np.fromiter((v for t in label_tuples for v in t), dtype=np.float64, count=int(lengths.sum()))
    if flat.size and (np.any(flat < 0) or np.any(flat != np.round(flat))):
        return None
    if flat.size and not (np.isfinite(flat).all() and flat.max() <= _LARGEST_ID):  # else int64 wraps them
        return None
    labels = flat.astype(np.int64)
    if n_categories is not None and labels.size and labels.max() >= n_categories:
        return None
    return ParsedBlock(indptr=X.indptr.astype(np.int64), indices=X.indices.astype(np.int32),
                       data=X.data.astype(np.float32, copy=False),
                       label_indptr=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                       labels=labels, lines=_document_lines(block))


def parse_block(block: bytes, index_base: int, n_features: int | None, n_categories: int | None,
                use_numba: bool = True) -> ParsedBlock | None:
    """The block's documents, or None when a line is wrong (then call :func:`describe_bad_line`)."""
    parsed = parse_fast(block, index_base, n_features, n_categories) if use_numba else None
    return parsed if parsed is not None else parse_sklearn(block, index_base, n_features, n_categories)


def _document_lines(block: bytes) -> np.ndarray:
    """1-based numbers of the block's lines that hold a document (as scikit-learn counts them)."""
    return np.array([number for number, line in enumerate(block.split(b"\n"), start=1)
                     if line.split(b"#", 1)[0].split()], dtype=np.int64)


def describe_bad_line(block: bytes, index_base: int, n_features: int | None,
                      n_categories: int | None) -> tuple[int, str] | None:
    """(1-based line within the block, what is wrong) for the first bad line, or None."""
    for number, raw in enumerate(block.split(b"\n"), start=1):
        problem = _line_problem(raw, index_base, n_features, n_categories)
        if problem:
            return number, problem
    return None


def _line_problem(raw: bytes, index_base: int, n_features: int | None, n_categories: int | None):
    try:
        body = raw.split(b"#", 1)[0].decode("ascii")
    except UnicodeDecodeError:
        return "expected ASCII svmlight text, found other bytes"
    if "\x00" in body:
        return "holds a NUL byte"
    fields = body.split()
    if not fields:
        return None
    first = 0
    if ":" not in fields[0]:
        first = 1
        for label in fields[0].split(","):
            try:
                value = float(label)
            except ValueError:
                return f"expected labels as comma-separated non-negative integers, got {fields[0]!r}"
            if not (math.isfinite(value) and value >= 0 and value == round(value)):
                hint = (" (a binary ±1 file? label its positives 0 and leave its negatives without a label)"
                        if value == -1 else "")
                return f"label {label} is not a category id; expected non-negative integers{hint}"
            if value > _LARGEST_ID:
                return f"label {label} is beyond the largest category id {_LARGEST_ID}"
            if n_categories is not None and value >= n_categories:
                return f"label {int(value)} is out of range for n_categories = {n_categories}"
    if first < len(fields) and fields[first].startswith("qid"):
        first += 1
    previous = None
    for field in fields[first:]:
        index, sep, value = field.partition(":")
        try:
            index = int(index)
        except ValueError:
            return f"expected 'index:value', got {field!r}"
        if not sep:
            return f"expected 'index:value', got {field!r}"
        try:
            number = float(value)
        except ValueError:
            return f"expected a number after '{index}:', got {value!r}"
        if index < index_base:
            return f"feature index {index} is below {index_base} (index_base = {index_base})"
        if index - index_base > _LARGEST_ID:
            return (f"feature index {index} is beyond the largest feature index {_LARGEST_ID + index_base} "
                    "(32-bit column indices)")
        if n_features is not None and index - index_base >= n_features:
            return f"feature index {index} is beyond n_features = {n_features}"
        if previous is not None and index <= previous:
            what = "repeats" if index == previous else f"comes after the larger index {previous}"
            return f"feature index {index} {what}; expected indices in increasing order, each once"
        with np.errstate(over="ignore"):
            rounded = np.float32(number)
        if not np.isfinite(rounded):
            return (f"feature value {value} (index {index}): NaN or infinite values, or values beyond float32's "
                    "range, cannot be scored")
        previous = index
    return None
