r"""The one check of scores and labels where they enter the metrics.

Every public metric that takes scores (``roc_auc``, ``micro_auc``, ``evaluate``, the DeLong tests,
the intervals, the binned and streamed sums, ``mlnb compare``'s scores file) passes them through
``score_array`` before any compiled kernel sees them, and its 0/1 labels through ``binary_labels``:
a kernel then never meets a value it cannot order, and a bad value is one ``MlnbError`` line
that names the argument, instead of a NaN, a wrong number or memory read out of bounds.

**Scores** are real numbers that can be ordered exactly:

* float32 and float64 are kept as they are (no copy); ±inf are ordinary values (a probability of
  exactly 0 or 1: they tie with each other and rank below / above everything else);
  NaN is refused, naming where the first one is.
* float16 is converted to float32, bool and integers of at most 32 bits to float64: every value
  converts exactly, so ties and order are those of the input.
* int64 / uint64 (and long double) scores are converted to float64 only when **every value is
  exactly representable** there (|v| ≤ 2^53, or a multiple of a large enough power of 2); else
  they are refused: two integers above 2^53 that round to one float64 would tie, and the AUC
  would silently change. Such scores should be ranked as floats by the caller (e.g. divided by a
  power of two) or given as float64 in the first place.
* complex, object, string, date and other dtypes are refused (object arrays are not converted:
  whatever they hold, a metric should not guess how to order it).

**Labels** are 0/1 (or booleans), dense or sparse: y ∈ {−1, +1}, 0.5 or NaN are refused in one
line ("labels must be 0/1"), not read as "nonzero is positive" (which made −1 and 0.5 positives
and the AUC NaN).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from mlnb.errors import MlnbError

#: float64 holds every integer of magnitude up to this exactly
EXACT_INTEGER = 2 ** 53


def _where(name: str, index: tuple) -> str:
    if len(index) == 2:
        return f"document {index[0]}, category {index[1]}"
    if len(index) == 1:
        return f"position {index[0]}"
    return f"index {tuple(int(i) for i in index)}"


def _exact_in_float64(S: np.ndarray, name: str) -> np.ndarray:
    """S (int64, uint64 or long double) as float64 when every value converts exactly, else MlnbError."""
    if S.size == 0:
        return S.astype(np.float64)
    if S.dtype.kind in "iu":
        low, high = int(S.min()), int(S.max())
        if -EXACT_INTEGER <= low and high <= EXACT_INTEGER:  # the common case: one pass for the range
            return S.astype(np.float64)
        F = S.astype(np.float64)
        limit = 2.0 ** (63 if S.dtype.kind == "i" else 64)
        inside = (F < limit) & (F >= (-limit if S.dtype.kind == "i" else 0.0))
        exact = inside.copy()
        exact[inside] = F[inside].astype(S.dtype) == S[inside]
    else:  # long double
        F = S.astype(np.float64)
        with np.errstate(invalid="ignore"):
            exact = (F == S) | (np.isnan(S) & np.isnan(F))
    if not exact.all():
        index = tuple(int(i) for i in np.argwhere(~exact)[0])
        raise MlnbError(f"{name}: the {S.dtype} score {S[index]} at {_where(name, index)} is not exactly "
                        f"representable in float64 ({int((~exact).sum())} such values; integers beyond 2^53 "
                        "round and would tie): give float64 scores, or integers within ±2^53")
    return F


def score_array(scores, name: str = "scores", *, ndim: int | tuple | None = None,
                shape: tuple | None = None) -> np.ndarray:
    """``scores`` as a float32 or float64 ndarray without NaN (module docstring), else one MlnbError
    line naming ``name``. ``ndim``: the allowed number(s) of dimensions; ``shape``: the shape needed."""
    if sp.issparse(scores):
        raise MlnbError(f"{name}: expected a dense array of scores, got a sparse matrix")
    try:
        S = np.asarray(scores)
    except (ValueError, TypeError) as error:  # ragged nested lists
        raise MlnbError(f"{name}: expected an array of numbers ({' '.join(str(error).split())})") from None
    kind = S.dtype.kind
    if kind == "c":
        raise MlnbError(f"{name}: complex scores (dtype {S.dtype}); expected real numbers")
    if kind not in "biuf":
        raise MlnbError(f"{name}: expected real numbers, got dtype {S.dtype}"
                        + (" (an object array: convert it to float64 first)" if kind == "O" else ""))
    allowed = (ndim,) if isinstance(ndim, int) else ndim
    if allowed is not None and S.ndim not in allowed:
        raise MlnbError(f"{name}: expected {' or '.join(f'{d}-D' for d in allowed)} scores, got shape {S.shape}")
    if shape is not None and S.shape != tuple(shape):
        raise MlnbError(f"{name}: has shape {S.shape}, expected {tuple(shape)} (that of the labels)")
    if S.dtype in (np.float32, np.float64):
        pass
    elif S.dtype == np.float16:
        S = S.astype(np.float32)  # exact
    elif kind == "b" or (kind in "iu" and S.dtype.itemsize <= 4):
        S = S.astype(np.float64)  # exact
    else:  # int64, uint64, long double
        S = _exact_in_float64(S, name)
    if S.size and np.isnan(np.min(S)):  # min propagates NaN: one pass, no n × K temporary
        bad = np.isnan(S)
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise MlnbError(f"{name}: NaN score at {_where(name, index)} ({int(bad.sum())} NaN in all); scores must be "
                        "numbers (±inf allowed)")
    return S


def binary_labels(Y, name: str = "y_true", *, shape: tuple | None = None):
    """``Y`` (dense or sparse, any numeric dtype) checked to hold only 0/1 or booleans; returned as it
    is (sparse stays sparse, dense as an ndarray). One MlnbError line otherwise."""
    if sp.issparse(Y):
        values, dims = Y.data, Y.shape
    else:
        try:
            Y = np.asarray(Y)
        except (ValueError, TypeError) as error:
            raise MlnbError(f"{name}: expected an array of 0/1 labels ({' '.join(str(error).split())})") from None
        values, dims = Y, Y.shape
    if shape is not None and tuple(dims) != tuple(shape):
        raise MlnbError(f"{name}: has shape {tuple(dims)} but the scores have shape {tuple(shape)}")
    if values.dtype.kind not in "biuf":
        raise MlnbError(f"{name}: labels must be 0/1, got dtype {values.dtype}")
    if values.dtype.kind != "b" and values.size:
        bad = (values != 0) & (values != 1)
        if bad.any():
            first = values[bad].ravel()[0].item()
            raise MlnbError(f"{name}: labels must be 0/1 (or booleans), got {first!r} "
                            f"({int(bad.sum())} such values; y in {{-1, +1}}: map -1 to 0)")
    return Y
