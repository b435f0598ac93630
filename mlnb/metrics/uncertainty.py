r"""How sure a test set makes a metric: bootstrap intervals and DeLong intervals of AUCs.

**Bootstrap: macro averages over a fixed category set, stratified within each category.**
A resample draws, for b = 0, 1, … in turn,

* documents: ``idx = rng.integers(0, n, size=n)`` with ``rng = np.random.default_rng(seed)``
  (``bootstrap_indices``), document i weighted w_i = #{t: idx_t = i};
* positives (``rng_pos = np.random.default_rng([seed, 1])``): for each category k with m_k test
  positives, m_k draws with replacement among *its* positives, positive i weighted v_ki.

The micro metrics (pooled pairs) take the document weights w: exactly ``evaluate`` on the
resampled documents. The macro metrics average over the *fixed* set F of categories testable on
the whole test set (at least one positive and one negative; not excluded by the caller), each
category's positives weighted by v_k and its negatives by w. So every category of F keeps its m_k
positives in every resample: the old scheme, averaging over the categories that kept a positive
*in that resample*, dropped a category with one positive from 37 % of the resamples and shifted
the interval towards the common categories. With weights,

    AUC_k  = Σ_{i pos, j neg} v_ki w_j ψ(s_ik, s_jk) / (m_k W⁻_k)      ψ = 1, ½, 0 for >, =, <
    tp_k = Σ_{i pos} v_ki d_ik      fp_k = Σ_{j neg} w_j d_jk      positives_k = m_k
    F1_k = 2 tp_k / (tp_k + fp_k + m_k)   precision_k = tp_k / (tp_k + fp_k)   recall_k = tp_k / m_k
    (0 where a denominator is 0; a category whose negatives all drew weight 0 is left out of that
    resample's AUC average, which needs a category with almost no negatives)

Few positives say little about their own spread, so the macro replicates are built thus
(``_macro_replicates``), with d*_k = x*_k − x_k the resample's deviation from the category's
full-sample value x_k:

1. widening: the bootstrap variance of a mean of m draws is (m − 1)/m of the unbiased one, so
   d_k = c_k d*_k with c_k = √(m_k / (m_k − 1)) (m_k ≥ 2; 1 for m_k = 1);
2. moderation (Smyth 2004): one positive's variance s_k² = m_k · mean_b d_k², pooled with the
   prior s0² (the df-weighted mean of s_k² over the rare categories, 2 ≤ m_k ≤ ``RARE_POSITIVES``)
   as s̃_k² = ((m_k − 1) s_k² + d0 s0²) / (m_k − 1 + d0), d0 = ``PRIOR_DF``; where s̃_k²/m_k exceeds
   the resampled variance, normal noise makes up the difference (never narrower);
3. one positive (m_k = 1): nothing in the test set measures its spread (DeLong's variance is
   undefined there too); its variance is at least x̄(1 − x̄), the largest a [0, 1] value of mean x̄
   (the mean over F) can have (Bhatia & Davis 2000) — conservative, a bound and not an estimate;
4. Student's t: the sum of the per-category variances v_k is estimated from few positives, with
   Welch–Satterthwaite's ν = (Σ v_k)² / Σ (v_k² / ν_k), ν_k = m_k − 1 + d0 (∞ for a bound), so
   the deviations are scaled by a = t_{ν, (1 + level)/2} / z_{(1 + level)/2};

    macro* = clip(mean_{k ∈ F} (x_k + a d_k), 0, 1)

The interval is the percentile interval: the (1 − level)/2 and (1 + level)/2 quantiles of the
replicates (numpy's linear interpolation; NaN replicates ignored). Measured by simulation
(binormal scores, the population's macro AUC known): 93 % coverage at nominal 95 % with rare
categories of two or more positives, 98–99 % with one-positive categories (the bound is
conservative); ``tests/metrics/test_uncertainty.py`` checks ≥ 93 %. Across categories, the
negatives' shared document weights keep the correlation between categories; the positives' draws
are independent per category (a document positive in two categories draws twice).

**Paired intervals** (``paired_bootstrap_intervals``): two models' replicates from the same draws
(the draws depend on the labels and the seed only), the percentile interval of their difference:
micro metrics resample by resample; macro metrics per category first (x_a,k − x_b,k and its
deviations, through steps 1–4, a one-positive category's variance by the pooled prior s0² of the
rare categories' differences, no bound), then the mean, clipped to [−1, 1].

**Computation.** Each category's scores are sorted once; a resample's AUC is then one pass over
that order, summing the weights of each tie group and adding W⁺_group · (W⁻ below + ½ W⁻_group),
where a category's positive items read the rows of v (stacked under w); the micro AUC does the
same over the pooled (document, category) pairs, cut into segments at tie boundaries (a segment's
area is shifted by its positives × the negatives of earlier segments). The weighted counts are
sparse products (Yᵀ w, and the decided positives' selection times v).

With numba, a block of resamples runs in parallel and gives the same bits whatever the thread
count: the document draws are ``rng.integers``'s numbers drawn on every thread (``_bounded_draws``:
numpy rejects a variable number of its 32-bit outputs, but whether it rejects one depends on that
output alone, so the threads count the accepted ones of pieces of the stream, then write them in
place), their counts and the positives' draws run one resample per thread — a resample's positives read numpy's PCG64
stream from its own start, the state advanced by b·P draws (each ``random()`` double takes one
64-bit output), so they are ``rng.random(P)``'s numbers — and the products are row sums of the
stacked counts, whole numbers added in float64: exact, so any order gives the scipy products' values.

**DeLong intervals of one AUC** (DeLong, DeLong & Clarke-Pearson 1988): with
the structural components V10 (one per positive) and V01 (one per negative)
of ``significance``,

    var(AUC) = S10 / m + S01 / n,   S10 = var(V10; ddof 1),  S01 = var(V01; ddof 1)
    AUC ± z_{(1 + level)/2} √var,   clipped to [0, 1]

NaN without two positives and two negatives. (When the classes are perfectly
separated the variance is 0 and the interval collapses to the point.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from mlnb._kernels.csr import at_or_above
from mlnb._kernels.jit import HAVE_NUMBA, njit, prange
from mlnb.errors import MlnbError
from mlnb.metrics._inputs import binary_labels, score_array
from mlnb.metrics.classification import logit
from mlnb.metrics._delong import single_statistics
from mlnb.metrics.ranking import _positives_by_column, _with_threads, worker_threads

BOOTSTRAP_METRICS = ("macro_auc", "micro_auc", "macro_f1", "micro_f1", "macro_precision", "micro_precision",
                     "macro_recall", "micro_recall")
#: bound on the (n × B) weight block of resamples processed together (float64 entries)
WEIGHT_BLOCK_ENTRIES = 1 << 24
MAX_RESAMPLES_PER_BLOCK = 32
#: fewest resamples of a percentile interval: its ends are interpolated between replicates, and a
#: single replicate makes both ends that one value, a zero-width interval at any level whatever the
#: data (a stable 95 % interval needs hundreds; the default is 200)
MIN_BOOTSTRAP = 2


def bootstrap_indices(n: int, n_boot: int, seed: int = 0) -> Iterator[np.ndarray]:
    """The resampled document indices, one (n,) array per replicate, in order."""
    rng = np.random.default_rng(seed)
    for _ in range(n_boot):
        yield rng.integers(0, n, size=n)


if HAVE_NUMBA:
    from mlnb._kernels.atomic import claim as _claim

    @njit(cache=True)
    def _one_segment(doc, label, new_group, starts, W, s, out):
        """out[s]: segment s's sums (``_segment_sums``).

        Why a kernel: one pass over a segment for every resample of a block, where the numpy path builds weight
        matrices and group sums for each segment. Measured by experiments/bench_threads.py (the bootstrap)."""
        B = W.shape[1]
        below = np.zeros(B)  # negative weight below the current tie group
        area = np.zeros(B)
        positive = np.zeros(B)
        g_pos = np.zeros(B)
        g_neg = np.zeros(B)
        end = starts[s + 1]
        open_group = False  # g_pos, g_neg hold a tie group of two or more items
        for j in range(starts[s], end):
            if new_group[j] and open_group:
                for b in range(B):
                    area[b] += g_pos[b] * (below[b] + 0.5 * g_neg[b])
                    below[b] += g_neg[b]
                    positive[b] += g_pos[b]
                    g_pos[b] = 0.0
                    g_neg[b] = 0.0
                open_group = False
            d = doc[j]
            if new_group[j] and (j + 1 == end or new_group[j + 1]):  # a group of one
                if label[j]:
                    for b in range(B):
                        area[b] += W[d, b] * below[b]
                        positive[b] += W[d, b]
                else:
                    for b in range(B):
                        below[b] += W[d, b]
                continue
            open_group = True
            if label[j]:
                for b in range(B):
                    g_pos[b] += W[d, b]
            else:
                for b in range(B):
                    g_neg[b] += W[d, b]
        for b in range(B):
            out[s, 0, b] = area[b] + g_pos[b] * (below[b] + 0.5 * g_neg[b])
            out[s, 1, b] = positive[b] + g_pos[b]
            out[s, 2, b] = below[b] + g_neg[b]

    @njit(parallel=True, cache=True)
    def _segment_sums(doc, label, new_group, starts, W, n_threads=1):
        """(S, 3, B): per segment of sorted (ascending) items and per resample, the AUC area
        within the segment, its positive weight and its negative weight.

        An item alone in its tie group (the rule with continuous scores) goes straight into the
        sums: a positive adds w·below to the area and w to the positives, a negative adds w to
        below. That is what closing a group of one item adds (0 + w = w exactly, w being a whole
        number, and a negative's area term is 0), so the sums are the same bits, for about a
        third of the work per item. Items of larger tie groups are summed per group first.

        The segments are claimed by ``n_threads`` threads one at a time (a segment's sums do not
        depend on its thread: the same bits for any thread count), as their work varies with their
        positives.

        Why a kernel: the segments claimed by the threads one at a time, where the numpy path takes them one after
        another on one core. Measured by experiments/bench_threads.py (the bootstrap)."""
        S = starts.size - 1
        out = np.zeros((S, 3, W.shape[1]))
        claimed = np.zeros(1, dtype=np.int64)
        for _ in prange(max(1, min(S, n_threads))):
            s = _claim(claimed, 0)
            while s < S:
                _one_segment(doc, label, new_group, starts, W, s, out)
                s = _claim(claimed, 0)
        return out


def _segment_sums_numpy(doc, label, new_group, starts, W) -> np.ndarray:
    """The kernel's sums from group sums (np.add.reduceat) per segment."""
    out = np.zeros((starts.size - 1, 3, W.shape[1]))
    for s in range(starts.size - 1):
        a, b = starts[s], starts[s + 1]
        if a == b:
            continue
        w = W[doc[a:b]]  # (len, B)
        is_pos = label[a:b, None]
        groups = np.flatnonzero(new_group[a:b])  # starts with 0
        pos = np.add.reduceat(np.where(is_pos, w, 0.0), groups, axis=0)  # (G, B)
        neg = np.add.reduceat(np.where(is_pos, 0.0, w), groups, axis=0)
        below = np.cumsum(neg, axis=0) - neg
        out[s] = [(pos * (below + 0.5 * neg)).sum(axis=0), pos.sum(axis=0), neg.sum(axis=0)]
    return out


def _sorted_items(scores: np.ndarray, labels: np.ndarray, docs: np.ndarray):
    """(doc, label, new_group) of items sorted by ascending score; new_group marks each tie's start."""
    order = np.argsort(scores, kind="stable")
    s = scores[order]
    new_group = np.empty(s.size, dtype=bool)
    new_group[:1] = True
    np.not_equal(s[1:], s[:-1], out=new_group[1:])  # != rather than diff: inf − inf is NaN
    return docs[order], labels[order], new_group


if HAVE_NUMBA:

    @njit(cache=True)
    def _order_keys(scores, keys):
        """keys[i]: an unsigned integer with the order of scores[i]: the float64 bits, flipped so that
        unsigned comparison sorts them (negatives: all bits; others: the sign bit); −0.0 gets +0.0's key.

        Why a kernel: makes the radix sort's keys in one pass inside the sorting kernels. Measured by
        experiments/bench_delong.py (``--bootstrap``: the bootstrap's sort plan)."""
        as_float = np.empty(scores.size, dtype=np.float64)
        for i in range(scores.size):
            as_float[i] = scores[i] + 0.0  # float32 → float64 is exact and keeps the order
        bits = as_float.view(np.uint64)
        sign = np.uint64(1) << np.uint64(63)
        for i in range(scores.size):
            keys[i] = ~bits[i] if bits[i] & sign else bits[i] | sign

    @njit(cache=True)
    def _count_digits(keys, shift, first, stop, counts):
        """counts[d] = #{i in first … stop − 1: the byte of keys[i] at ``shift`` is d} (counts zeroed first).

        Why a kernel: the radix sort's counting pass, shared by the serial and the sliced sort. Measured by
        experiments/bench_delong.py (``--bootstrap``: the bootstrap's sort plan)."""
        counts[:] = 0
        for i in range(first, stop):
            counts[(keys[i] >> shift) & np.uint64(255)] += 1

    @njit(cache=True)
    def _scatter_digits(keys, order, shift, first, stop, starts, new_keys, new_order, identity):
        """Keys first … stop − 1 to their places ``starts[digit]`` (advanced); the order beside them: order[i],
        or i itself when ``identity`` (no pass has moved a key yet: the order would be 0, 1, …).

        Why a kernel: the radix sort's scatter pass, shared by the serial and the sliced sort. Measured by
        experiments/bench_delong.py (``--bootstrap``: the bootstrap's sort plan)."""
        for i in range(first, stop):
            digit = (keys[i] >> shift) & np.uint64(255)
            target = starts[digit]
            starts[digit] = target + 1
            new_keys[target], new_order[target] = keys[i], i if identity else order[i]

    @njit(cache=True)
    def _slice_starts(counts, n):
        """counts (slices, 256) become each slice's first position for each digit; False when every key
        has the same digit (the pass would not move anything).

        Why a kernel: turns the slices' counts into places without leaving the sort's compiled code. Measured by
        experiments/bench_delong.py (``--bootstrap``: the bootstrap's sort plan)."""
        if counts.sum(axis=0).max() == n:
            return False
        start = 0
        for digit in range(256):
            for c in range(counts.shape[0]):
                counts[c, digit], start = start, start + counts[c, digit]
        return True

    @njit(cache=True)
    def _stable_order(keys):
        """(argsort(keys, kind="stable"), sorted keys) by LSD radix sort, one byte a pass: each pass is
        stable, so ties keep their index order. The order starts as the identity without being written
        (the first pass that moves keys writes each one's index).

        Why a kernel: a radix sort linear in the keys on one category's thread, where numpy's stable argsort is a
        comparison sort called category by category. Measured by experiments/bench_delong.py (``--bootstrap``: the
        bootstrap's sort plan)."""
        n = keys.size
        order, spare_keys, spare_order = np.empty(n, dtype=np.int64), np.empty_like(keys), np.empty(n, dtype=np.int64)
        identity = True
        counts = np.zeros((1, 256), dtype=np.int64)
        for byte in range(8):
            shift = np.uint64(8 * byte)
            _count_digits(keys, shift, 0, n, counts[0])
            if _slice_starts(counts, n):
                _scatter_digits(keys, order, shift, 0, n, counts[0], spare_keys, spare_order, identity)
                keys, spare_keys, order, spare_order = spare_keys, keys, spare_order, order
                identity = False
        if identity:  # every key the same: no pass moved any
            for i in range(n):
                order[i] = i
        return order, keys

    @njit(parallel=True, cache=True)
    def _stable_order_sliced(keys, slices):
        """``_stable_order`` with each pass counting and scattering ``slices`` slices of the keys in
        parallel, each slice placed after the earlier slices' keys of the same digit (so the order
        does not depend on ``slices``). No serial pass writes the identity order first: at RCV1 scale
        (16M pooled pairs) that would be 128 MB written on one thread (measured by
        experiments/bench_serial.py, the bootstrap).

        Why a kernel: each radix pass on every thread for the pooled pairs, where numpy's stable argsort runs on one
        core. Measured by experiments/bench_delong.py (``--bootstrap``: the bootstrap's sort plan)."""
        n = keys.size
        order, spare_keys, spare_order = np.empty(n, dtype=np.int64), np.empty_like(keys), np.empty(n, dtype=np.int64)
        identity = True
        counts = np.zeros((slices, 256), dtype=np.int64)
        step = (n + slices - 1) // slices
        for byte in range(8):
            shift = np.uint64(8 * byte)
            for c in prange(slices):
                _count_digits(keys, shift, min(n, c * step), min(n, (c + 1) * step), counts[c])
            if _slice_starts(counts, n):
                for c in prange(slices):
                    _scatter_digits(keys, order, shift, min(n, c * step), min(n, (c + 1) * step), counts[c],
                                    spare_keys, spare_order, identity)
                keys, spare_keys, order, spare_order = spare_keys, keys, spare_order, order
                identity = False
        if identity:  # every key the same: no pass moved any
            for i in prange(n):
                order[i] = i
        return order, keys

    @njit(parallel=True, cache=True)
    def _sort_categories(scores, indptr, indices, doc, label, new_group):
        """Each category k's items in stable ascending score order (ties by document) into
        doc/label/new_group[k n:(k + 1) n], in parallel over categories.

        Why a kernel: every category sorted on a thread of its own, where the numpy path sorts them one after
        another. Measured by experiments/bench_delong.py (``--bootstrap``: the bootstrap's sort plan)."""
        n, K = scores.shape
        for k in prange(K):
            keys = np.empty(n, dtype=np.uint64)
            _order_keys(scores[:, k], keys)
            order, keys = _stable_order(keys)
            positive = np.zeros(n, dtype=np.bool_)
            for p in range(indptr[k], indptr[k + 1]):
                positive[indices[p]] = True
            base = k * n
            for i in range(n):
                doc[base + i] = order[i]
                label[base + i] = positive[order[i]]
                new_group[base + i] = i == 0 or keys[i] != keys[i - 1]

    @njit(parallel=True, cache=True)
    def _sort_pooled(scores, indptr, indices, columns, slices, doc, label, new_group):
        """The pooled pairs t = i K' + j (document i, category columns[j]) in stable ascending score
        order into doc/label/new_group (n K' each).

        Why a kernel: the pooled pairs' keys, labels and sort on every thread in one call. Measured by
        experiments/bench_delong.py (``--bootstrap``: the bootstrap's sort plan)."""
        n, width = scores.shape[0], columns.size
        keys = np.empty(n * width, dtype=np.uint64)
        positive = np.zeros(n * width, dtype=np.bool_)
        for i in prange(n):
            _order_keys(scores[i, columns], keys[i * width:(i + 1) * width])
        for j in range(width):
            for p in range(indptr[columns[j]], indptr[columns[j] + 1]):
                positive[indices[p] * width + j] = True
        order, keys = _stable_order_sliced(keys, slices)
        for t in prange(n * width):
            doc[t] = order[t] // width
            label[t] = positive[order[t]]
            new_group[t] = t == 0 or keys[t] != keys[t - 1]


if HAVE_NUMBA:
    _LOW32 = np.uint64(0xFFFFFFFF)

    @njit(cache=True)
    def _high_product(a, b):
        """The high 64 bits of the 128-bit product a·b (uint64), from 32-bit halves.

        Why a kernel: 128-bit arithmetic, which numba has no type for, inlined into the generator's step. Measured
        by experiments/bench_threads.py (the bootstrap)."""
        a0, a1, b0, b1 = a & _LOW32, a >> np.uint64(32), b & _LOW32, b >> np.uint64(32)
        low, cross_a, cross_b = a0 * b0, a1 * b0, a0 * b1
        middle = (low >> np.uint64(32)) + (cross_a & _LOW32) + (cross_b & _LOW32)
        return a1 * b1 + (cross_a >> np.uint64(32)) + (cross_b >> np.uint64(32)) + (middle >> np.uint64(32))

    @njit(cache=True)
    def _pcg64_next(hi, lo, inc_hi, inc_lo):
        """(next hi, next lo, the 64-bit output): numpy's PCG64 ``next_uint64`` — the 128-bit LCG step
        s ← s·M + inc, the XSL-RR output rotr(hi ⊕ lo, hi >> 58).

        Why a kernel: numpy's generator stepped inside the parallel draws, so that each thread reproduces its part
        of numpy's stream. Measured by experiments/bench_threads.py (the bootstrap)."""
        m_hi, m_lo = np.uint64(2549297995355413924), np.uint64(4865540595714422341)
        new_hi = _high_product(lo, m_lo) + lo * m_hi + hi * m_lo
        new_lo = lo * m_lo
        lo = new_lo + inc_lo
        hi = new_hi + inc_hi + (np.uint64(1) if lo < new_lo else np.uint64(0))
        x, rot = hi ^ lo, hi >> np.uint64(58)
        return hi, lo, (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))

    @njit(cache=True)
    def _pcg64_double(hi, lo, inc_hi, inc_lo):
        """(next hi, next lo, the double): numpy's PCG64 ``random()``, the output's top 53 bits × 2⁻⁵³.

        Why a kernel: numpy's ``random()`` inside the parallel draws, so that each resample reads its own part of
        numpy's stream. Measured by experiments/bench_threads.py (the bootstrap)."""
        hi, lo, x = _pcg64_next(hi, lo, inc_hi, inc_lo)
        return hi, lo, np.float64(x >> np.uint64(11)) * (1.0 / 9007199254740992.0)

    @njit(cache=True)
    def _lemire_piece(hi, lo, inc_hi, inc_lo, outputs, rng_excl, threshold, out, at, stop):
        """One piece of ``_bounded_draws``: the 2·outputs 32-bit halves of ``outputs`` 64-bit outputs from
        state (hi, lo), low half first; each half u gives m = u·rng_excl, accepted when its low 32 bits
        are ≥ threshold, as m >> 32. Writes the accepted ones to out[at:stop] (none when at = stop) and
        returns (accepted, halves read when out[stop − 1] was written or −1, that output's high half).

        Why a kernel: numpy's bounded integer draws reproduced in compiled code, so that pieces of the stream can be
        drawn on every thread. Measured by experiments/bench_threads.py (the bootstrap)."""
        accepted, ended, high = 0, -1, np.uint64(0)
        for i in range(outputs):
            hi, lo, x = _pcg64_next(hi, lo, inc_hi, inc_lo)
            for half in range(2):
                m = ((x >> np.uint64(32)) if half else (x & _LOW32)) * rng_excl
                if (m & _LOW32) >= threshold:
                    if at < stop:
                        out[at] = np.int64(m >> np.uint64(32))
                        at += 1
                        if at == stop:
                            ended, high = 2 * i + half + 1, x >> np.uint64(32)
                    accepted += 1
        return accepted, ended, high

    @njit(parallel=True, cache=True)
    def _lemire_counts(states, inc_hi, inc_lo, outputs, rng_excl, threshold):
        """Accepted halves of each piece (``_lemire_piece``, nothing written), the pieces in parallel.

        Why a kernel: counts each piece's accepted draws on every thread, where ``rng.integers`` draws on one core.
        Measured by experiments/bench_threads.py (the bootstrap)."""
        counts = np.zeros(states.shape[0], dtype=np.int64)
        none = np.empty(0, dtype=np.int64)
        for p in prange(states.shape[0]):
            counts[p] = _lemire_piece(states[p, 0], states[p, 1], inc_hi, inc_lo, outputs, rng_excl, threshold,
                                      none, 0, 0)[0]
        return counts

    @njit(parallel=True, cache=True)
    def _lemire_fill(states, inc_hi, inc_lo, outputs, rng_excl, threshold, first, out):
        """Each piece's accepted values into out[first[p]:first[p + 1]], the pieces in parallel; returns, per
        piece, the halves read when its last value was written (−1 for a piece that writes none) and the
        high half of the output read then.

        Why a kernel: writes each piece's draws on every thread, where ``rng.integers`` draws on one core. Measured
        by experiments/bench_threads.py (the bootstrap)."""
        ended = np.full(states.shape[0], -1, dtype=np.int64)
        high = np.zeros(states.shape[0], dtype=np.uint64)
        for p in prange(states.shape[0]):
            stop = min(out.size, first[p + 1])
            if first[p] < stop:
                _, ended[p], high[p] = _lemire_piece(states[p, 0], states[p, 1], inc_hi, inc_lo, outputs, rng_excl,
                                                     threshold, out, first[p], stop)
        return ended, high

    @njit(parallel=True, cache=True)
    def _draw_counts(idx, states, inc_hi, inc_lo, first_positive, m_of, counts):
        """counts[b] = [bincount(idx[b], minlength=n), the stratified positives' draws] for each resample
        b in parallel; returns each resample's largest count.

        Resample b's positives read their own PCG64 stream, states[b] = (hi, lo), the generator's
        state advanced by b·P draws: positive p draws first_positive[p] + ⌊u · m_of[p]⌋ (u its uniform,
        m_of[p] its category's positives), the numbers ``rng.random(P)`` gives resample by resample.

        Why a kernel: each resample's counts and stratified draws on a thread of its own, where ``np.bincount`` and
        ``rng.random`` take the resamples one at a time on one core. Measured by experiments/bench_threads.py (the
        bootstrap)."""
        B, n = idx.shape
        P = m_of.size
        top = np.zeros(B, dtype=np.int64)
        for b in prange(B):
            row = counts[b]
            row[:] = 0
            for t in range(n):
                row[idx[b, t]] += 1
            hi, lo = states[b, 0], states[b, 1]
            for p in range(P):
                hi, lo, u = _pcg64_double(hi, lo, inc_hi, inc_lo)
                row[n + first_positive[p] + np.int64(np.floor(u * m_of[p]))] += 1
            top[b] = row.max()
        return top

    @njit(parallel=True, cache=True)
    def _transpose_counts(counts, out):
        """out (R × B) = countsᵀ in out's (narrower) type, in parallel over blocks of rows.

        Why a kernel: transposes and narrows the counts in one pass on every thread, where numpy's transposed copy
        runs on one core. Measured by experiments/bench_threads.py (the bootstrap)."""
        B, R = counts.shape
        step = 2048
        for c in prange((R + step - 1) // step):
            for b in range(B):
                for r in range(c * step, min(R, (c + 1) * step)):
                    out[r, b] = counts[b, r]

    @njit(parallel=True, cache=True)
    def _row_sums(indptr, rows, W, order, n_threads):
        """(T, B): out[t] = Σ_{q ∈ [indptr[t], indptr[t + 1])} W[rows[q]] in float64, q in order; the
        tasks t claimed by the threads one at a time in ``order`` (the most rows first).

        Why a kernel: the weighted counts as row sums on every thread, the most rows first, where scipy's sparse
        products run on one core. Measured by experiments/bench_threads.py (the bootstrap)."""
        T, B = indptr.size - 1, W.shape[1]
        out = np.zeros((T, B))
        claimed = np.zeros(1, dtype=np.int64)
        for _ in prange(n_threads):
            o = _claim(claimed, 0)
            while o < order.size:
                t = order[o]
                for q in range(indptr[t], indptr[t + 1]):
                    r = rows[q]
                    for b in range(B):
                        out[t, b] += W[r, b]
                o = _claim(claimed, 0)
        return out

    @njit(parallel=True, cache=True)
    def _stratified_rows(doc, label, indptr, indices, n, K, rows):
        """``_AucPlan.rows`` in parallel: a category's positive item (document d) reads row n + p, p its
        position among Y's nonzeros (CSC order, indices sorted: what the numpy path's searchsorted
        finds); every other item, and every pooled pair, row d.

        Why a kernel: the plan's rows on every thread, where the numpy path's searches run on one core. Measured by
        experiments/bench_delong.py (``--bootstrap``: the bootstrap's sort plan)."""
        for t in prange(rows.size):
            rows[t] = doc[t]
        for k in prange(K):
            position = np.empty(n, dtype=np.int64)
            for p in range(indptr[k], indptr[k + 1]):
                position[indices[p]] = p
            for i in range(k * n, (k + 1) * n):
                if label[i]:
                    rows[i] = n + position[doc[i]]


def _threshold_matrix_compiled(scores: np.ndarray, threshold: float) -> sp.csr_matrix:
    """``_decision_matrix``'s [scores ≥ logit(threshold)], the same matrix, built in parallel; the
    cut in the scores' type, as numpy compares an array with a Python float."""
    n, K = scores.shape
    indptr, indices = at_or_above(scores, np.full(K, logit(threshold), dtype=scores.dtype))
    return sp.csr_matrix((np.ones(indices.size), indices, indptr.astype(indices.dtype)), shape=(n, K))


def _stacked_counts_compiled(idx: np.ndarray, positive_bits, first_positive: np.ndarray,
                             m_of: np.ndarray, scratch: np.ndarray | None = None) -> np.ndarray:
    """``_compact_counts(vstack([W, V]))`` of one block, the same numbers and type, in parallel:
    idx (B, n) the documents drawn; positive_bits the PCG64 of the positives' draws, left advanced
    past the block (B·P draws, as ``random(P)`` B times would leave it). ``scratch``: (≥ B, n + P)
    counts of the block's type to count in, reused from block to block (``_count_scratch``)."""
    B, n = idx.shape
    P = m_of.size
    states = np.empty((B, 2), dtype=np.uint64)
    assert positive_bits.state["bit_generator"] == "PCG64", "the kernel draws PCG64's numbers"
    inc = positive_bits.state["state"]["inc"]
    for b in range(B):  # resample b's stream starts b·P draws on (each double takes one 64-bit output)
        state = positive_bits.state["state"]["state"]
        states[b] = state >> 64, state & 0xFFFFFFFFFFFFFFFF
        positive_bits.advance(P)
    counts = (_count_scratch(B, n, P) if scratch is None else scratch)[:B]
    top = _draw_counts(idx, states, np.uint64(inc >> 64), np.uint64(inc & 0xFFFFFFFFFFFFFFFF), first_positive,
                       m_of, counts).max(initial=0)
    dtype = next((t for t in (np.uint8, np.uint16) if top <= np.iinfo(t).max), np.float64)
    out = np.empty((n + P, B), dtype=dtype)
    _transpose_counts(counts, out)
    return out


#: 64-bit outputs per piece of ``_bounded_draws`` (each piece a task of the threads)
DRAW_PIECE_OUTPUTS = 1 << 15


def _bounded_draws(generator: np.random.Generator, n: int, size: tuple) -> np.ndarray:
    """``generator.integers(0, n, size=size)``: the same int64 numbers, and the generator left in the same
    state, drawn on every thread (numpy's draws run on one core; measured by experiments/bench_serial.py,
    the bootstrap).

    numpy's draw (``random_bounded_uint64_fill`` for a range below 2³²) reads 32-bit numbers from the
    generator (``next_uint32``: a half kept from a 64-bit output before, then the low and the high half
    of each new output, the last high half kept for the next 32-bit draw). For each number u it forms
    m = u·n and gives m >> 32 unless m's low 32 bits are below (2³² − n) mod n (Lemire's method; then it
    reads the next number). Whether a number is accepted depends on it alone, so the outputs are cut into
    pieces of ``DRAW_PIECE_OUTPUTS``, each piece's generator state found by PCG64's jump-ahead
    (``advance``): the threads count each piece's accepted halves, then write them where the counts
    before them put them. The generator is then advanced past every output read, with the half kept as
    numpy keeps it. Another generator, n ≥ 2³² − 1 or no numba: numpy's own draw."""
    bits = generator.bit_generator
    total = int(np.prod(size))
    if not HAVE_NUMBA or not isinstance(bits, np.random.PCG64) or not 2 <= n < 0xFFFFFFFF or total == 0:
        return generator.integers(0, n, size=size)
    before = bits.state
    out = np.empty(size, dtype=np.int64)
    flat = out.reshape(-1)
    rng_excl, threshold = np.uint64(n), np.uint64((2 ** 32 - n) % n)
    written = 0
    if before["has_uint32"]:  # the half kept from the last 32-bit draw comes first
        m = int(before["uinteger"]) * n
        if m & 0xFFFFFFFF >= int(threshold):
            flat[0], written = m >> 32, 1
    after = dict(before, has_uint32=0)
    if written < total:
        inc = before["state"]["inc"]
        inc_hi, inc_lo = np.uint64(inc >> 64), np.uint64(inc & 0xFFFFFFFFFFFFFFFF)
        walker = np.random.PCG64()
        walker.state = before
        states, counts = [], np.empty(0, dtype=np.int64)
        pieces = max(1, -(-(total - written) // (2 * DRAW_PIECE_OUTPUTS)))  # enough if none is rejected
        while counts.sum() < total - written:
            new = np.empty((pieces, 2), dtype=np.uint64)
            for p in range(pieces):
                state = walker.state["state"]["state"]
                new[p] = state >> 64, state & 0xFFFFFFFFFFFFFFFF
                walker.advance(DRAW_PIECE_OUTPUTS)
            states.append(new)
            counts = np.concatenate([counts, _lemire_counts(new, inc_hi, inc_lo, DRAW_PIECE_OUTPUTS, rng_excl,
                                                            threshold)])
            pieces = max(1, pieces // 8)  # the few more a rejected number needs
        states = np.concatenate(states)
        first = np.concatenate([[0], np.cumsum(counts)])
        ended, high = _lemire_fill(states, inc_hi, inc_lo, DRAW_PIECE_OUTPUTS, rng_excl, threshold, first,
                                   flat[written:])
        last = int(np.searchsorted(first, total - written)) - 1  # the piece that wrote the last value
        halves = last * 2 * DRAW_PIECE_OUTPUTS + int(ended[last])
        bits.advance(-(-halves // 2))  # every output read
        after = dict(bits.state, has_uint32=halves % 2, uinteger=int(high[last]))  # an odd half: the high one kept
    bits.state = after
    return out


def _count_scratch(B: int, n: int, P: int) -> np.ndarray:
    """(B, n + P) uninitialised counts for ``_stacked_counts_compiled`` (``_draw_counts`` zeroes each row).
    One per bootstrap, not one per block: at 156k test documents it is 66 MB, above malloc's largest
    mmap threshold (``mlnb._kernels.memory``), so each new one would be fresh pages, faulted in while the threads
    count (measured by experiments/bench_threads.py, the bootstrap)."""
    return np.empty((B, n + P), dtype=np.int32 if n < 2 ** 31 else np.int64)


#: slices of the pooled pairs' radix sort (parallel work; any number gives the same order)
POOLED_SORT_SLICES = 16


def _sorted_numpy(Y: sp.csc_matrix, scores: np.ndarray, columns: np.ndarray, index):
    """(doc, label, new_group): each category's items in stable score order, then (when columns is
    not empty) the pooled pairs of those columns, row-major, in stable score order."""
    n, K = scores.shape
    docs = np.arange(n, dtype=index)
    parts = []
    for k in range(K):
        y = np.zeros(n, dtype=bool)
        y[Y.indices[Y.indptr[k]:Y.indptr[k + 1]]] = True
        parts.append(_sorted_items(np.asarray(scores[:, k]), y, docs))
    if columns.size:
        y = (Y[:, columns].toarray() != 0).ravel()  # row-major: pair t is document t // K'
        pair_docs = np.repeat(docs, columns.size)
        parts.append(_sorted_items(np.asarray(scores[:, columns]).ravel(), y, pair_docs))
    return tuple(np.concatenate([part[i] for part in parts]) for i in range(3))


def _sorted_compiled(Y: sp.csc_matrix, scores: np.ndarray, columns: np.ndarray, index):
    """``_sorted_numpy``'s arrays, identical, from stable radix sorts: the categories in parallel,
    then the pooled pairs with each pass in parallel slices."""
    n, K = scores.shape
    size = K * n + columns.size * n
    doc, label, new_group = np.empty(size, dtype=index), np.empty(size, dtype=bool), np.empty(size, dtype=bool)
    _sort_categories(scores, Y.indptr, Y.indices, doc, label, new_group)
    if columns.size:
        slices = max(1, min(POOLED_SORT_SLICES, columns.size * n // 4096))
        _sort_pooled(scores, Y.indptr, Y.indices, columns.astype(np.int64), slices, doc[K * n:], label[K * n:],
                     new_group[K * n:])
    return doc, label, new_group


def _group_starts_at_or_after(new_group: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """For each cut, the first index ≥ it where ``new_group`` is True (a tie group starts), or the last such
    index where none is: ``starts[minimum(searchsorted(starts, cuts), starts.size − 1)]`` of the starts
    ``flatnonzero(new_group)``, whose first is 0. Found by a scan from each cut, which stops at the first
    True (numpy's argmax of booleans), not by listing every start: at RCV1 scale 16M items, whose list
    (128 MB of fresh pages) and its float copy would be one core's work per bootstrap
    (experiments/bench_serial.py)."""
    found = np.empty(cuts.size, dtype=np.int64)
    last = None
    for j, cut in enumerate(cuts):
        first = int(np.ceil(cut))  # the starts are whole numbers: ≥ cut is ≥ ⌈cut⌉
        rest = new_group[first:]
        at = int(np.argmax(rest)) if rest.size else 0
        if rest.size and rest[at]:
            found[j] = first + at
            continue
        if last is None:  # no start at or after the cut: the last one
            last = new_group.size - 1 - int(np.argmax(new_group[::-1]))
        found[j] = last
    return found


class _AucPlan:
    """Each category's score order (segment k) and the pooled pairs' order (the segments after K),
    cut at tie boundaries into pieces the size of a category."""

    def __init__(self, Y: sp.csc_matrix, scores: np.ndarray, pooled: np.ndarray, with_micro: bool,
                 use_numba: bool = HAVE_NUMBA):
        n, K = scores.shape
        index = np.int32 if n < 2 ** 31 else np.int64
        columns = np.flatnonzero(pooled) if with_micro and pooled.any() else np.empty(0, dtype=np.int64)
        compiled = use_numba and scores.dtype in (np.float32, np.float64)  # numba sorts no float16 or bool
        self.doc, self.label, self.new_group = (_sorted_compiled if compiled else _sorted_numpy)(Y, scores, columns,
                                                                                                 index)
        lengths = [n] * K
        self.n_micro = 0
        if columns.size:
            pairs = columns.size * n
            # about K pieces, each starting at the first tie group at or after an even cut
            cuts = np.unique(_group_starts_at_or_after(self.new_group[K * n:], np.linspace(0, pairs, K + 1)[:-1]))
            bounds = np.r_[cuts, pairs]
            lengths += list(np.diff(bounds))
            self.n_micro = bounds.size - 1
        for start in np.cumsum([0] + lengths)[K:-1]:  # every micro segment starts a tie group
            self.new_group[start] = True
        self.starts = np.cumsum([0] + lengths).astype(np.int64)
        self.K = K
        # the row of the stacked weights [w; v] ((n + P) × B) each item reads: a category's positive
        # item reads its own draw n + p (p: its position among Y's nonzeros, CSC order); every other
        # item its document's weight
        self.rows = np.empty_like(self.doc) if use_numba else self.doc.copy()
        if use_numba:
            _stratified_rows(self.doc, self.label, Y.indptr, Y.indices, n, K, self.rows)
        else:
            in_category = np.zeros(self.doc.size, dtype=bool)
            in_category[:K * n] = self.label[:K * n]
            category = np.flatnonzero(in_category) // n
            keys = np.repeat(np.arange(K, dtype=np.int64), np.diff(Y.indptr)) * n + Y.indices  # sorted (CSC)
            self.rows[in_category] = n + np.searchsorted(keys, category * n + self.doc[in_category])

    def aucs(self, W: np.ndarray, use_numba: bool, stratified: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """((B, K) per-category AUCs, (B,) micro AUC) of the resamples weighted by W (n × B), or with
        ``stratified`` by the stacked weights [w; v] ((n + P) × B): each category's positives by v."""
        rows = self.rows if stratified else self.doc
        if use_numba:
            sums = _segment_sums(rows, self.label, self.new_group, self.starts, W, worker_threads())  # (S, 3, B)
        else:
            sums = _segment_sums_numpy(rows, self.label, self.new_group, self.starts, W)
        area, positive, negative = sums[:self.K, 0], sums[:self.K, 1], sums[:self.K, 2]  # (K, B)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_category = np.where((positive > 0) & (negative > 0), area / (positive * negative), np.nan).T
            micro = np.full(W.shape[1], np.nan)
            if self.n_micro:
                m_area, m_pos, m_neg = sums[self.K:, 0], sums[self.K:, 1], sums[self.K:, 2]  # (S', B)
                negatives_before = np.cumsum(m_neg, axis=0) - m_neg
                total = (m_area + m_pos * negatives_before).sum(axis=0)
                P, N = m_pos.sum(axis=0), m_neg.sum(axis=0)
                micro = np.where((P > 0) & (N > 0), total / (P * N), np.nan)
        return per_category, micro


def _decision_matrix(scores: np.ndarray, decisions, threshold: float) -> sp.csr_matrix:
    """The 0/1 decisions as a float CSR matrix, built in blocks of rows from dense input."""
    if sp.issparse(decisions):
        D = sp.csr_matrix(decisions, dtype=np.float64, copy=True)
        D.sum_duplicates()
        D.eliminate_zeros()
        if not np.all(D.data == 1):
            raise MlnbError("decisions must hold only 0/1 (or booleans)")
    elif decisions is None and HAVE_NUMBA and scores.dtype in (np.float32, np.float64):
        D = _threshold_matrix_compiled(scores, threshold)
    else:
        dense = None if decisions is None else np.asarray(decisions)
        cut, step, blocks = logit(threshold), 8192, []
        for a in range(0, scores.shape[0], step):
            if dense is None:
                blocks.append(sp.csr_matrix(scores[a:a + step] >= cut, dtype=np.float64))
                continue
            part = dense[a:a + step]
            if part.dtype != bool and np.any((part != 0) & (part != 1)):
                raise MlnbError("decisions must hold only 0/1 (or booleans)")
            blocks.append(sp.csr_matrix(part != 0, dtype=np.float64))
        D = sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix(scores.shape)
    if D.shape != scores.shape:
        raise MlnbError(f"decisions has shape {D.shape} but scores has shape {scores.shape}")
    return D


def bootstrap_replicates(Y_true, scores, decisions=None, threshold: float = 0.5, metrics=BOOTSTRAP_METRICS[:4],
                         n_boot: int = 200, seed: int = 0, exclude=None, use_numba: bool = HAVE_NUMBA,
                         level: float = 0.95) -> dict[str, np.ndarray]:
    """{metric: (n_boot,) values}: each metric on each resample (module docstring): micro metrics on
    the resampled documents, macro metrics over the fixed testable set, stratified and widened.

    Y_true : (n, K) 0/1, sparse or dense;  scores : (n, K) log-odds (the ranking)
    decisions : (n, K) 0/1 decisions, sparse or dense; default [scores ≥ logit(threshold)]
    metrics : any of BOOTSTRAP_METRICS
    exclude : categories left out of every average and pool, as in ``evaluate``
    level : of the interval the macro replicates are for (the Student-t widening, module docstring)
    The draws depend on Y_true, n_boot and seed only: two models' replicates pair resample by resample.
    """
    parts = _replicate_parts(Y_true, scores, decisions, threshold, metrics, n_boot, seed, exclude, use_numba)
    return parts.micro | {name: _macro_replicates(*parts.macro[name], parts.m, parts.fixed, level,
                                                  np.random.default_rng([seed, 2])) for name in parts.macro}


def _count_rows(Y: sp.csc_matrix, H: sp.csc_matrix, D: sp.csc_matrix, hit: np.ndarray, n: int):
    """(indptr, rows, order) of the 4K row sums of the stacked weights [w; v] ((n + P) × B) that are
    Yᵀ w, Dᵀ w, Hᵀ w and the decided positives' v (row n + p for positive p, CSC order), each
    category's rows in index order; order: the sums with the most rows first. Y, D, H hold ones."""
    K = Y.shape[1]
    positives = np.flatnonzero(hit)  # (P',) the decided positives among Y's nonzeros
    category = np.repeat(np.arange(K), np.diff(Y.indptr))[positives]
    lists = [(M.indptr, M.indices) for M in (Y, D, H)]
    lists.append((np.searchsorted(category, np.arange(K + 1)), n + positives))
    counts = np.concatenate([np.diff(indptr) for indptr, _ in lists])  # (4K,)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    rows = np.concatenate([np.asarray(indices, dtype=np.int64) if i < 3 else indices
                           for i, (_, indices) in enumerate(lists)])
    return indptr, rows.astype(np.int64), np.argsort(-counts, kind="stable").astype(np.int64)


class _Parts(NamedTuple):
    micro: dict  # name -> (B,) replicates on the resampled documents
    macro: dict  # name -> ((K,) full-sample per-category values, (K, B) their deviations in each resample)
    m: np.ndarray  # (K,) test positives
    fixed: np.ndarray  # (K,) bool, the macro averages' categories


def _replicate_parts(Y_true, scores, decisions, threshold, metrics, n_boot, seed, exclude, use_numba) -> _Parts:
    """The replicates before the macro averages (``bootstrap_replicates``)."""
    unknown = [m for m in metrics if m not in BOOTSTRAP_METRICS]
    if unknown:
        raise MlnbError(f"bootstrap metrics {unknown} unknown; choose from {', '.join(BOOTSTRAP_METRICS)}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise MlnbError(f"n_boot must be a positive integer, got {n_boot!r}")
    scores = score_array(scores, "scores")  # float32/float64 without NaN, before any kernel (``_inputs``)
    if scores.ndim != 2 or np.shape(Y_true) != scores.shape:
        raise MlnbError(f"Y_true has shape {np.shape(Y_true)} but scores has shape {scores.shape}")
    binary_labels(Y_true, "Y_true")
    # imported here, as scipy.stats below: a compiling process (mlnb.precompile) imports this module for its
    # kernels alone, and pandas and scipy.stats were most of its import time
    from mlnb.metrics.evaluation import caller_exclusions

    n, K = scores.shape
    pooled = np.ones(K, dtype=bool)
    pooled[list(caller_exclusions(exclude, K))] = False
    Y = sp.csc_matrix(Y_true, dtype=np.float64, copy=True)
    Y.data = (Y.data != 0).astype(np.float64)
    Y.eliminate_zeros()
    Y.sort_indices()
    m = np.diff(Y.indptr)  # (K,) test positives
    fixed = (m > 0) & (m < n) & pooled  # (K,) the macro averages' categories, in every resample
    wants_macro = any(name.startswith("macro_") for name in metrics)
    wants_auc = any(name.endswith("_auc") for name in metrics)
    plan = _AucPlan(Y, scores, pooled, "micro_auc" in metrics, use_numba) if wants_auc else None
    wants_counts = any(not name.endswith("_auc") for name in metrics)
    P = int(Y.nnz)
    positive_category = np.repeat(np.arange(K), m)  # (P,) the category of each nonzero of Y (CSC order)
    if wants_counts:
        D = _decision_matrix(scores, decisions, threshold)
        if not use_numba:  # the scipy products' operands
            Dt, Ht = D.T.tocsr(), sp.csr_matrix(D.multiply(Y)).T.tocsr()  # (K, n) each; H = hits
            Yt = Y.T.tocsr()  # (K, n)
        D = D.tocsc()
        H = sp.csc_matrix(D.multiply(Y))  # decided positives: a subset of Y's nonzeros
        H.eliminate_zeros()
        H.sort_indices()
        keys = positive_category.astype(np.int64) * n + Y.indices  # (P,) sorted (CSC order)
        decided = np.repeat(np.arange(K, dtype=np.int64), np.diff(H.indptr)) * n + H.indices
        hit = np.zeros(P)  # (P,) whether each positive was decided positive (H's nonzeros are among Y's)
        hit[np.searchsorted(keys, decided)] = 1.0
        if not use_numba:  # (K, P): category k's decided positives, to sum their draws v
            hits_of = sp.csr_matrix((hit, (positive_category, np.arange(P))), shape=(K, P))
        # (K, 1) each: the stored ones per column (D and H hold ones only, no explicit zeros)
        full = {"tp": np.diff(H.indptr).astype(np.float64)[:, None],
                "predicted": np.diff(D.indptr).astype(np.float64)[:, None]}
        full |= _per_category_counts(full["tp"], full["predicted"], m[:, None].astype(np.float64))

    values = {name: np.empty(n_boot) for name in metrics if name.startswith("micro_")}
    deviations = {name: [] for name in metrics if name.startswith("macro_")}  # (K, B) blocks
    block = max(1, min(MAX_RESAMPLES_PER_BLOCK, WEIGHT_BLOCK_ENTRIES // max(n + P, 1)))
    draws = bootstrap_indices(n, n_boot, seed)
    document_draws = np.random.default_rng(seed)  # bootstrap_indices' generator, for whole blocks at once
    positive_draws = np.random.default_rng([seed, 1])
    first_positive = np.repeat(Y.indptr[:-1], m)  # (P,) where each nonzero's category starts
    if wants_auc and wants_macro:
        full_auc = plan.aucs(np.ones((n + P, 1), dtype=np.uint8), use_numba, stratified=True)[0].T  # (K, 1)
    if use_numba and wants_counts:  # the weighted counts as row sums of the stacked weights [w; v]
        sums_indptr, sums_rows, sums_order = _count_rows(Y, H, D, hit, n)
    scratch = _count_scratch(min(block, n_boot), n, P) if use_numba else None
    for first in range(0, n_boot, block):
        B = min(block, n_boot - first)
        if use_numba:  # [w; v] drawn and counted in parallel, the same numbers (``_stacked_counts_compiled``)
            # (B, n): one call draws what B calls of ``bootstrap_indices`` draw (the same stream, the
            # 32-bit halves of a 64-bit output carried over from one resample to the next)
            idx = _bounded_draws(document_draws, n, (B, n))
            stacked = _stacked_counts_compiled(idx, positive_draws.bit_generator, first_positive,
                                               m[positive_category].astype(np.float64), scratch)  # (n + P, B)
        else:
            W = np.empty((n, B))  # (n, B) multinomial weights, one column per resample
            for b in range(B):
                W[:, b] = np.bincount(next(draws), minlength=n)
            V = np.empty((P, B))  # (P, B) each category's positives drawn among themselves
            for b in range(B):
                chosen = first_positive + np.floor(positive_draws.random(P) * m[positive_category]).astype(np.int64)
                V[:, b] = np.bincount(chosen, minlength=P)
            stacked = _compact_counts(np.vstack([W, V]))
        rows = slice(first, first + B)
        if wants_auc:
            per_category, micro = plan.aucs(stacked, use_numba, stratified=True)
            if "macro_auc" in deviations:
                deviations["macro_auc"].append(per_category.T - full_auc)  # (K, B)
            if "micro_auc" in values:  # the pooled pairs read the document weights only
                values["micro_auc"][rows] = micro
        if wants_counts:
            if use_numba:  # whole numbers summed in float64: exact, the products' values in any order
                sums = _row_sums(sums_indptr, sums_rows, stacked, sums_order, min(worker_threads(), K * 4))
                positives, predicted, tp, tp_v = sums[:K], sums[K:2 * K], sums[2 * K:3 * K], sums[3 * K:]
            else:
                positives, predicted, tp = (np.asarray(M @ W) for M in (Yt, Dt, Ht))  # (K, B), document weights
                tp_v = np.asarray(hits_of @ V)  # (K, B) decided positives under the stratified draws
            TP, PRED, POS = (v[pooled].sum(axis=0) for v in (tp, predicted, positives))  # (B,)
            pooled_values = {"f1": _safe_ratio(2 * TP, PRED + POS), "precision": _safe_ratio(TP, PRED),
                             "recall": _safe_ratio(TP, POS)}
            per_category = _per_category_counts(tp_v, tp_v + predicted - tp, m[:, None].astype(np.float64))
            for name in metrics:
                kind, what = name.split("_", 1)
                if what not in pooled_values:
                    continue
                if kind == "micro":
                    values[name][rows] = pooled_values[what]
                else:
                    deviations[name].append(per_category[what] - full[what])
    macro = {name: ((full_auc if name == "macro_auc" else full[name.split("_", 1)[1]])[:, 0], np.hstack(parts))
             for name, parts in deviations.items()}
    return _Parts(values, macro, m, fixed)


#: categories with at most this many test positives pool their spread into the prior spread s0²
RARE_POSITIVES = 10
#: d0, the prior's weight in degrees of freedom (Smyth 2004's moderated variances)
PRIOR_DF = 2.0


def _macro_replicates(estimate: np.ndarray, deviations: np.ndarray, m: np.ndarray, fixed: np.ndarray,
                      level: float, rng: np.random.Generator, bounded: bool = True) -> np.ndarray:
    """(B,) macro replicates: the mean over the fixed set of x_k + a d_k (module docstring).

    estimate (K,) full-sample x_k;  deviations (K, B) δ*_k = x*_k − x_k (NaN: undefined in a resample)
    bounded : the x_k lie in [0, 1]: a one-positive category's variance is at least x̄ (1 − x̄)
    """
    keep = fixed & ~np.isnan(estimate)
    m_kept = m[keep].astype(np.float64)
    widen = np.sqrt(np.where(m_kept > 1, m_kept / np.maximum(m_kept - 1, 1), 1.0))[:, None]  # c_k
    d = widen * deviations[keep]  # (F, B)
    B = d.shape[1]
    if not d.size:
        return np.full(B, np.nan)
    with np.errstate(invalid="ignore"):
        own = m_kept * np.nanmean(d ** 2, axis=1)  # (F,) one positive's variance s_k² (m_k × the category's)
    own = np.nan_to_num(own)
    df = m_kept - 1
    donors = (m_kept >= 2) & (m_kept <= RARE_POSITIVES)
    if not donors.any():
        donors = m_kept >= 2
    prior = np.average(own[donors], weights=df[donors]) if donors.any() else 0.0  # s0²
    moderated = (df * own + PRIOR_DF * prior) / (df + PRIOR_DF)  # s̃_k²
    # (F,) the category's variance as resampled, and never below its moderated value: a spread
    # measured on few positives is kept where it is the larger (conservative, never narrower)
    current = own / m_kept
    target = np.maximum(current, moderated / m_kept)
    df_k = df + PRIOR_DF
    if bounded:  # one positive: its spread is unknown, take the largest a [0, 1] value of mean x̄ can have
        mean = float(np.mean(estimate[keep]))
        by_bound = (m_kept == 1) & (target < mean * (1 - mean))
        target[by_bound], df_k[by_bound] = mean * (1 - mean), np.inf  # a bound, not an estimate
    grow = target > current  # what the resamples lack, as normal noise
    d[grow] += rng.normal(size=(int(grow.sum()), B)) * np.sqrt(target[grow] - current[grow])[:, None]
    # a: Student's t for a variance estimated from few positives (Satterthwaite's df)
    variance = target
    nu = variance.sum() ** 2 / np.sum(variance ** 2 / df_k) if variance.sum() > 0 else np.inf
    from scipy.stats import norm
    from scipy.stats import t as student_t

    a = student_t.ppf(0.5 + level / 2, max(nu, 1.0)) / norm.ppf(0.5 + level / 2) if np.isfinite(nu) else 1.0
    replicates = estimate[keep, None] + a * d  # (F, B)
    # the mean within the values it can take, [0, 1] ([−1, 1] for a difference); each category's
    # replicate unclipped, as clipping a category at 0 or 1 would shift the mean away from it
    return np.clip(_masked_mean(replicates, ~np.isnan(replicates)), 0.0 if bounded else -1.0, 1.0)


def _per_category_counts(tp: np.ndarray, predicted: np.ndarray, positives: np.ndarray) -> dict[str, np.ndarray]:
    """F1, precision and recall from (K, B) counts (0 where a denominator is 0)."""
    return {"f1": _safe_ratio(2 * tp, predicted + positives), "precision": _safe_ratio(tp, predicted),
            "recall": _safe_ratio(tp, positives)}


def _compact_counts(W: np.ndarray) -> np.ndarray:
    """The resample weights (whole numbers) in the narrowest unsigned type that holds them: the AUC
    sums read one row of W per sorted item, in random document order, and 20,000 × 32 weights take
    640 KB as uint8 (in a core's L2 cache) against 5 MB as float64. The sums are the same: every
    weight converts exactly, and they are added in float64 as before."""
    top = W.max(initial=0.0)
    for dtype in (np.uint8, np.uint16):
        if top <= np.iinfo(dtype).max:
            return W.astype(dtype)
    return W


def _safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0 (``evaluate``'s convention)."""
    return np.divide(num, den, out=np.zeros(np.shape(num)), where=den > 0)


def _masked_mean(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(B,) mean over the rows of (K, B) ``values`` where ``mask``; NaN where none."""
    counts = mask.sum(axis=0)
    totals = np.where(mask, values, 0.0).sum(axis=0)
    return np.divide(totals, counts, out=np.full(counts.shape, np.nan), where=counts > 0)


def bootstrap_intervals(Y_true, scores, decisions=None, threshold: float = 0.5, metrics=BOOTSTRAP_METRICS[:4],
                        n_boot: int = 200, seed: int = 0, level: float = 0.95,
                        exclude=None) -> dict[str, tuple[float, float]]:
    """{metric: (low, high)} percentile bootstrap intervals (module docstring).

    Arguments as ``bootstrap_replicates``; ``level`` the coverage (0.95: the 2.5 % and 97.5 %
    quantiles of the replicates).
    """
    _check_bootstrap(n_boot, level)
    return _percentiles(bootstrap_replicates(Y_true, scores, decisions, threshold, metrics, n_boot, seed, exclude,
                                             level=level),
                        level)


def paired_bootstrap_intervals(Y_true, scores_a, scores_b, decisions_a=None, decisions_b=None,
                               threshold: float = 0.5, metrics=("macro_auc",), n_boot: int = 200, seed: int = 0,
                               level: float = 0.95, exclude=None) -> dict[str, tuple[float, float]]:
    """{metric: (low, high)} percentile interval of the difference a − b of two models' metrics on the
    same test documents: both models' replicates come from the same draws (they depend on the labels
    and the seed only), so each resample's difference is paired."""
    _check_bootstrap(n_boot, level)
    a = _replicate_parts(Y_true, scores_a, decisions_a, threshold, metrics, n_boot, seed, exclude, HAVE_NUMBA)
    b = _replicate_parts(Y_true, scores_b, decisions_b, threshold, metrics, n_boot, seed, exclude, HAVE_NUMBA)
    differences = {name: a.micro[name] - b.micro[name] for name in a.micro}
    for name, (estimate_a, deviations_a) in a.macro.items():  # per category first: a − b, then the mean
        estimate_b, deviations_b = b.macro[name]
        differences[name] = _macro_replicates(estimate_a - estimate_b, deviations_a - deviations_b, a.m, a.fixed,
                                              level, np.random.default_rng([seed, 2]), bounded=False)
    return _percentiles(differences, level)


def _check_bootstrap(n_boot, level: float) -> None:
    _check_level(level)
    if not isinstance(n_boot, bool) and isinstance(n_boot, (int, np.integer)) and 0 < n_boot < MIN_BOOTSTRAP:
        raise MlnbError(f"n_boot = {n_boot}: a percentile interval needs at least {MIN_BOOTSTRAP} resamples (one "
                        "replicate is both ends of the interval: zero width whatever the data); use hundreds, "
                        "or no intervals at all")


def _percentiles(replicates: dict[str, np.ndarray], level: float) -> dict[str, tuple[float, float]]:
    """The (1 − level)/2 and (1 + level)/2 quantiles of each metric's replicates, NaN ignored."""
    quantiles = [50 * (1 - level), 50 * (1 + level)]
    intervals = {}
    for metric, values in replicates.items():
        if np.isnan(values).all():
            intervals[metric] = (float("nan"), float("nan"))
        else:
            low, high = np.nanpercentile(values, quantiles)
            intervals[metric] = (float(low), float(high))
    return intervals


def _wald(statistics: np.ndarray, level: float) -> np.ndarray:
    """(K, 2) AUC ∓ z_{(1 + level)/2} √var, clipped to [0, 1], from rows of (AUC, var)."""
    from scipy.stats import norm

    half = norm.ppf(0.5 + level / 2) * np.sqrt(statistics[:, 1])
    return np.column_stack([np.clip(statistics[:, 0] - half, 0, 1), np.clip(statistics[:, 0] + half, 0, 1)])


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise MlnbError(f"level must be in (0, 1), got {level}")


def category_auc_statistics(Y_true, scores, n_threads: int | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """(each category's AUC and DeLong variance, ``single_statistics``'s (K, ·) rows; its test positives
    (K,); the number of test documents) of 0/1 labels and scores (n × K, or n for one category), all
    categories at once in parallel on ``n_threads`` numba threads (default: numba's)."""
    scores = score_array(scores, "scores", ndim=(1, 2))  # float32/float64 without NaN (``_inputs``)
    scores = scores.reshape(-1, 1) if scores.ndim == 1 else scores
    Y_true = binary_labels(Y_true, "Y_true")
    Y = sp.csc_matrix(Y_true if sp.issparse(Y_true) or np.ndim(Y_true) == 2 else np.reshape(Y_true, (-1, 1)))
    if Y.shape != scores.shape:
        raise MlnbError(f"Y_true has shape {Y.shape} but scores has shape {scores.shape}")
    indptr, indices = _positives_by_column(Y, scores.shape[1])
    statistics = _with_threads(lambda: single_statistics(scores, indptr, indices), n_threads)
    return statistics, np.diff(indptr), scores.shape[0]


def auc_confidence_intervals(Y_true, scores, level: float = 0.95, n_threads: int | None = None) -> np.ndarray:
    """(K, 2) DeLong (Wald) intervals of each category's AUC, clipped to [0, 1]; NaN rows where the
    variance is undefined (fewer than two positives or two negatives). All categories at once, in
    parallel on ``n_threads`` numba threads (default: numba's)."""
    _check_level(level)
    statistics, _, _ = category_auc_statistics(Y_true, scores, n_threads)
    return _wald(statistics, level).reshape(-1, 2)

