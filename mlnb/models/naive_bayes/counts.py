r"""What one pass over a chunk of documents gives every Naive Bayes event model.

    F  = Yᵀ·X          (K × V)  per-category sums (of [X > 0] when ``presence``)
    t  = 1ᵀ·X          (V,)     sums over all documents
    S  = F·1           (K,)     per-category totals Σ_w F_kw (summed while each row is in cache)
    N  = 1ᵀ·Y          (K,)     positive documents per category
    n                           documents
    F2 = Yᵀ·(X∘X)      (K × V)  per-category sums of squares   } Gaussian, mixed
    t2 = 1ᵀ·(X∘X)      (V,)     sums of squares                }
    lo, hi, integer    (V,)     column min and max (implicit zeros included) and
                                whether every value is an integer     } mixed

Every field of the counts of two chunks is a sum (or a min, max, and) of the
fields of each, so ``a + b`` is the counts of the concatenated chunks. ``fit``,
``partial_fit``, streaming and a distributed tree-reduce all build on that.
The (K × V) sums are added in pieces on a thread pool: a streamed fit adds one
chunk's 39 MB of F at RCV1 scale, which numpy alone adds on one core (measured
by experiments/bench_scale.py).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import scipy.sparse as sp

from mlnb._kernels.jit import map_pieces
from mlnb.errors import MlnbError
from mlnb.models._counting import column_statistics, count_chunk

#: values from which an addition of two count arrays is cut into pieces on a thread pool (below:
#: one numpy call, which a pool's start-up would outweigh)
PARALLEL_ADD_VALUES = 1 << 20


def add_counts(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """a + b, elementwise, into ``out`` (a new array when None; ``out`` may be ``a`` or ``b``): numpy's
    additions, so the same bits, in contiguous pieces on a thread pool when large."""
    if out is None:
        out = np.empty(np.broadcast_shapes(a.shape, b.shape), dtype=np.result_type(a, b))
    if a.shape != out.shape or b.shape != out.shape or not all(x.flags.c_contiguous for x in (a, b, out)):
        return np.add(a, b, out=out)
    map_pieces(lambda pieces: np.add(pieces[0], pieces[1], out=pieces[2]),
               (a.reshape(-1), b.reshape(-1), out.reshape(-1)), PARALLEL_ADD_VALUES)
    return out


@dataclass(frozen=True, eq=False)
class NBCounts:
    """The sufficient statistics of one chunk (or of several, added). Arrays are float64."""

    F: np.ndarray  # (K, V)
    t: np.ndarray  # (V,)
    N: np.ndarray  # (K,)
    n: int
    presence: bool = False  # F and t count [X > 0] rather than sum X
    F2: np.ndarray | None = None  # (K, V)
    t2: np.ndarray | None = None  # (V,)
    lo: np.ndarray | None = None  # (V,)
    hi: np.ndarray | None = None  # (V,)
    integer: np.ndarray | None = None  # (V,) bool
    S: np.ndarray | None = None  # (K,) F·1; from F when not given

    def __post_init__(self):
        if self.S is None:
            object.__setattr__(self, "S", self.F.sum(axis=1))

    @classmethod
    def from_chunk(cls, X: sp.csr_matrix, Y: sp.csr_matrix, presence: bool = False, squares: bool = False,
                   column_stats: bool = False) -> NBCounts:
        """Count X (n × V, CSR float32) and Y (n × K, CSR 0/1) in one pass."""
        if X.shape[0] != Y.shape[0]:
            raise MlnbError(f"X has {X.shape[0]} documents but Y has {Y.shape[0]}")
        if presence and squares:
            raise MlnbError("the counts of presence [X > 0] have no sums of squares")
        F, t, S, F2, t2, N = count_chunk(Y, X, binary=presence, squares=squares)  # (K, V), (V,), (K,), ..., (K,)
        lo = hi = integer = None
        if column_stats:
            lo, hi, integer = column_statistics(X)  # (V,) each
        return cls(F=F, t=t, N=N, n=X.shape[0], presence=presence, F2=F2, t2=t2, lo=lo, hi=hi,
                   integer=integer, S=S)

    @property
    def shape(self) -> tuple[int, int]:
        """(K, V): categories × features."""
        return self.F.shape

    def __add__(self, other: NBCounts) -> NBCounts:
        if not isinstance(other, NBCounts):
            return NotImplemented
        return self._added(other, in_place=False)

    def add_into(self, other: NBCounts) -> NBCounts:
        """``other + self`` computed in this object's arrays, which the caller owns (a chunk's counts just
        made): the same bits as ``other + self`` (IEEE addition commutes), without a new K × V array."""
        return self._added(other, in_place=True)

    def _added(self, other: NBCounts, in_place: bool) -> NBCounts:
        if self.shape != other.shape:
            raise MlnbError(f"cannot add NBCounts of {self.shape[0]} categories × {self.shape[1]} features "
                            f"to NBCounts of {other.shape[0]} × {other.shape[1]}")
        mine, theirs = self._held(), other._held()
        if mine != theirs or self.presence != other.presence:
            raise MlnbError(f"cannot add NBCounts holding {sorted(mine)} (presence={self.presence}) to "
                            f"NBCounts holding {sorted(theirs)} (presence={other.presence}): they were "
                            "counted for different event models")

        def total(own, given):  # self's field + other's, in self's array when in place and it holds the sum
            if in_place and own.flags.writeable and own.dtype == np.result_type(own, given) \
                    and own.shape == np.broadcast_shapes(own.shape, given.shape):
                return add_counts(given, own, out=own)
            return add_counts(own, given)

        added = dict(F=total(self.F, other.F), t=total(self.t, other.t), N=total(self.N, other.N),
                     n=self.n + other.n, S=total(self.S, other.S))
        if "F2" in mine:
            added.update(F2=total(self.F2, other.F2), t2=total(self.t2, other.t2))
        if "lo" in mine:
            added.update(lo=np.minimum(self.lo, other.lo), hi=np.maximum(self.hi, other.hi),
                         integer=self.integer & other.integer)
        return NBCounts(presence=self.presence, **added)

    def _held(self) -> set[str]:
        return {f.name for f in fields(self) if getattr(self, f.name) is not None}
