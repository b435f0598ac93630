r"""Terms of the training texts counted within a memory budget: the vocabulary, and hashing's collisions.

:class:`DocumentFrequencies` counts, document by document, in how many training documents each term
(a word n-gram, as the vectorizer's analyzer gives them) occurs:

    df(t) = |{d in training documents : t in terms(d)}|

The counts stay in one Python dict while its estimated size (:data:`TERM_BYTES` per distinct term plus
its characters) is within the budget (``features.max_vocabulary_memory``). Beyond it the dict is
written to an embedded DuckDB database in a temporary folder and emptied (a *spill*); the counts of all
spills are added up there, df(t) = sum of the spills' df(t), by a GROUP BY that itself spills to that
folder under DuckDB's memory_limit. Either way the counts are the same integers.

The kept vocabulary, with ``min_df`` and ``max_features`` (``features``; 0 = off):

    kept = {t : df(t) >= min_df}, then, when more than max_features, the max_features terms of highest
           df(t), ties to the term first in sorted order (mlnb.features's rule for columns sorted by term)

numbered in sorted term order (code point order: ``sorted``, scikit-learn CountVectorizer's order), so that
column j is the same term whichever way it was counted. Out of core, min_df and max_features are applied
in SQL and only the kept terms come back to Python.

Hashing (:meth:`DocumentFrequencies.collisions`): each distinct term t goes to bucket
h(t) = |murmurhash3_32(t)| mod n_buckets (scikit-learn's FeatureHasher, as HashingVectorizer hashes); with
n_b the distinct terms in bucket b,

    distinct = sum_b n_b,  used = |{b : n_b > 0}|,  sharing = sum_{b : n_b >= 2} n_b,
    share = sharing / distinct   (the terms that share their column with at least one other term)

counted exactly, from the same distinct terms, in memory or out of core.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mlnb.errors import MlnbError

#: bytes one distinct term costs in the counting dict beyond its characters: the str object's header (about
#: 50 bytes), the dict's entry and index slots at its load factor (about 50), the count (an int, 28 beyond 256)
TERM_BYTES = 130
#: DuckDB's GROUP BY needs a few tens of MiB to run at all; it is given at least this much
DUCKDB_MIN_MEMORY = 128 * 2**20
#: terms passed to DuckDB, or hashed, at a time
BATCH_TERMS = 100_000
#: documents counted together before their counts join the dict (and the budget is checked)
BATCH_DOCUMENTS = 256
#: the default of ``features.max_vocabulary_memory``, MiB
DEFAULT_VOCABULARY_MEMORY_MIB = 1024


def term_kind(ngram_range: tuple[int, int]) -> str:
    """'words', 'word 2-grams', 'word 1–3-grams': what the terms of ``ngram_range`` are."""
    low, high = ngram_range
    if (low, high) == (1, 1):
        return "words"
    return f"word {low}-grams" if low == high else f"word {low}–{high}-grams"


def check_ngram_range(ngram_range, key: str = "features.ngram_range") -> tuple[int, int]:
    """``ngram_range`` as (min_n, max_n), or one line naming ``key``: two integers, 1 <= min_n <= max_n <= 5."""
    ok = (isinstance(ngram_range, (list, tuple)) and len(ngram_range) == 2
          and all(isinstance(n, int) and not isinstance(n, bool) for n in ngram_range)
          and 1 <= ngram_range[0] <= ngram_range[1] <= 5)
    if not ok:
        raise MlnbError(f"{key}: expected [min_n, max_n], two integers with 1 <= min_n <= max_n <= 5 (word n-grams; "
                        f"[1, 1] = single words), got {ngram_range!r}")
    return int(ngram_range[0]), int(ngram_range[1])


@dataclass(frozen=True)
class Collisions:
    """Distinct training terms hashed into ``buckets`` columns (see the module docstring)."""

    distinct_terms: int
    buckets: int
    buckets_used: int
    terms_sharing: int

    @property
    def share(self) -> float:
        """sharing / distinct: the share of the terms whose column holds another term too."""
        return self.terms_sharing / self.distinct_terms if self.distinct_terms else 0.0


class DocumentFrequencies:
    """df(t) of the terms of documents added with :meth:`add`, in memory up to ``budget_bytes``, beyond it
    in a DuckDB database under ``folder`` (None: the system's temporary folder), removed by :meth:`close`.

    >>> with DocumentFrequencies(budget_bytes=2**20) as df:
    ...     df.add([["grain", "wheat", "grain"], ["wheat"], ["oil"]])
    ...     df.vocabulary(min_df=2), df.distinct_terms
    (['wheat'], 3)
    """

    def __init__(self, budget_bytes: int, folder: str | Path | None = None):
        self._database = None  # (connection, temporary folder) from the first spill on
        if budget_bytes < 1:
            raise MlnbError(f"vocabulary memory budget: expected a positive number of bytes, got {budget_bytes}")
        self.budget_bytes = int(budget_bytes)
        self.folder = folder
        self.counts: Counter = Counter()
        self.bytes = 0  # estimated size of ``counts``
        self.spills = 0
        self._totals = False  # the spills are added up into the table ``totals``

    # -- counting --------------------------------------------------------------------------------------
    def add(self, documents: Iterable[Iterable[str]]) -> None:
        """Count each document's distinct terms once, ``BATCH_DOCUMENTS`` documents at a time; the dict
        spills whenever it outgrows the budget."""
        if self._totals:
            raise RuntimeError("DocumentFrequencies: add() after the counts were read")
        documents = iter(documents)
        while batch := Counter(itertools.chain.from_iterable(
                set(terms) for terms in itertools.islice(documents, BATCH_DOCUMENTS))):
            new = batch.keys() - self.counts.keys()
            self.bytes += TERM_BYTES * len(new) + sum(map(len, new))
            if not self.counts:
                self.counts = batch
            else:
                for term, n in batch.items():
                    self.counts[term] += n
            if self.bytes > self.budget_bytes:
                self._spill()

    @property
    def out_of_core(self) -> bool:
        """Whether the counts left memory (at least one spill)."""
        return self.spills > 0

    def _connection(self):
        if self._database is None:
            import duckdb  # only when a vocabulary outgrows its budget

            temporary = Path(tempfile.mkdtemp(prefix="mlnb-vocabulary-", dir=self.folder))
            try:
                connection = duckdb.connect(str(temporary / "terms.duckdb"))
                memory = max(self.budget_bytes, DUCKDB_MIN_MEMORY) // 2**20
                connection.execute(f"SET memory_limit = '{memory}MiB'")
                spill = str(temporary / "spill").replace("'", "''")
                connection.execute(f"SET temp_directory = '{spill}'")
                connection.execute("SET preserve_insertion_order = false")  # the GROUP BY's memory, not its order
                connection.execute("CREATE TABLE counted (term VARCHAR NOT NULL, df BIGINT NOT NULL)")
            except BaseException:
                shutil.rmtree(temporary, ignore_errors=True)
                raise
            self._database = (connection, temporary)
        return self._database[0]

    def _spill(self) -> None:
        """The dict's counts appended to the database, the dict emptied."""
        import pandas as pd

        connection = self._connection()
        terms = list(self.counts)
        counts = np.fromiter(self.counts.values(), dtype=np.int64, count=len(terms))
        self.counts, self.bytes = Counter(), 0  # the dict goes before DuckDB takes its copy
        for start in range(0, len(terms), BATCH_TERMS):
            part = pd.DataFrame({"term": terms[start:start + BATCH_TERMS], "df": counts[start:start + BATCH_TERMS]})
            connection.register("part", part)
            try:
                connection.execute("INSERT INTO counted SELECT term, df FROM part")
            finally:
                connection.unregister("part")
        self.spills += 1

    def _sum_spills(self):
        """The connection, with table ``totals`` (term, df): each distinct term once, its counts added up."""
        if self.counts:
            self._spill()
        connection = self._connection()
        if not self._totals:
            connection.execute("CREATE TABLE totals AS SELECT term, SUM(df)::BIGINT AS df FROM counted GROUP BY term")
            connection.execute("DROP TABLE counted")
            self._totals = True
        return connection

    # -- what the counts give --------------------------------------------------------------------------
    @property
    def distinct_terms(self) -> int:
        """Distinct terms counted."""
        if not self.out_of_core:
            return len(self.counts)
        return int(self._sum_spills().execute("SELECT COUNT(*) FROM totals").fetchone()[0])

    def vocabulary(self, min_df: int = 0, max_features: int = 0) -> list[str]:
        """The kept terms, sorted (the module docstring's rule); 0 turns either limit off."""
        if not self.out_of_core:
            kept = [term for term, n in self.counts.items() if n >= min_df] if min_df > 1 else list(self.counts)
            if max_features and len(kept) > max_features:
                kept.sort()
                kept = sorted(kept, key=lambda term: -self.counts[term])[:max_features]  # stable: ties by term
            return sorted(kept)
        connection = self._sum_spills()
        query = "SELECT term FROM totals WHERE df >= ?"
        if max_features:  # DuckDB compares VARCHARs byte by byte in UTF-8: code point order, as Python sorts
            query += f" ORDER BY df DESC, term LIMIT {int(max_features)}"
        cursor = connection.execute(query, [int(min_df)])
        kept = []
        while rows := cursor.fetchmany(BATCH_TERMS):
            kept.extend(row[0] for row in rows)
        return sorted(kept)

    def _distinct_batches(self) -> Iterable[list[str]]:
        if not self.out_of_core:
            terms = iter(self.counts)
            while batch := list(itertools.islice(terms, BATCH_TERMS)):
                yield batch
            return
        cursor = self._sum_spills().execute("SELECT term FROM totals")
        while rows := cursor.fetchmany(BATCH_TERMS):
            yield [row[0] for row in rows]

    def collisions(self, n_buckets: int) -> Collisions:
        """How the distinct terms fall into ``n_buckets`` hashed columns (HashingVectorizer's hashing)."""
        from sklearn.feature_extraction import FeatureHasher

        hasher = FeatureHasher(n_features=n_buckets, input_type="string", alternate_sign=False)
        per_bucket = np.zeros(n_buckets, dtype=np.int64)
        for batch in self._distinct_batches():
            # one term per row: row i's one stored index is the bucket of term i
            per_bucket += np.bincount(hasher.transform([term] for term in batch).indices, minlength=n_buckets)
        return Collisions(distinct_terms=int(per_bucket.sum()), buckets=int(n_buckets),
                          buckets_used=int(np.count_nonzero(per_bucket)),
                          terms_sharing=int(per_bucket[per_bucket >= 2].sum()))

    # -- the database's folder ---------------------------------------------------------------------------
    def close(self) -> None:
        """Remove the database and its folder (nothing of a spill outlives the counting)."""
        if self._database is not None:
            connection, temporary = self._database
            self._database = None
            try:
                connection.close()
            finally:
                shutil.rmtree(temporary, ignore_errors=True)

    def __enter__(self) -> DocumentFrequencies:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        self.close()


# -- what the report states ------------------------------------------------------------------------------
def counted_where(spills: int) -> str:
    """'in memory', or 'out of core in DuckDB over 3 spills'."""
    return "in memory" if not spills else f"out of core in DuckDB over {spills:,} spill{'s' if spills != 1 else ''}"


def percent(share: float) -> str:
    """'61.2 %'; a share strictly between 0 and 1 never shows as 0.0 % or 100.0 %."""
    if 0 < share < 0.0005:
        return "< 0.1 %"
    if 0.9995 <= share < 1:
        return "> 99.9 %"
    return f"{100 * share:.1f} %"


def vocabulary_summary(ngram_range, distinct_terms: int, kept: int, min_df: int, max_features: int,
                       spills: int) -> dict:
    """summary.json's ``data.text_features`` of a CountVectorizer vocabulary, with its report sentence."""
    terms = term_kind(ngram_range)
    limits = [f"min_df {min_df}"] * (min_df > 1) + [f"max_features {max_features:,}"] * bool(max_features)
    pruned = f", {kept:,} kept ({', '.join(limits)})" if limits else ""
    sentence = (f"Vocabulary: {distinct_terms:,} distinct {terms} of the training texts{pruned}, counted "
                f"{counted_where(spills)}.")
    return {"vectorizer": "count", "ngram_range": list(ngram_range), "distinct_terms": int(distinct_terms),
            "vocabulary": int(kept), "min_df": int(min_df), "max_features": int(max_features),
            "counted": counted_where(spills), "sentence": sentence}


def hashing_summary(ngram_range, collisions: Collisions, spills: int) -> dict:
    """summary.json's ``data.text_features`` of hashed features, with its report sentence: the collision rate."""
    c = collisions
    sentence = (f"Hashing: {c.distinct_terms:,} distinct {term_kind(ngram_range)} of the training texts (counted "
                f"{counted_where(spills)}) into {c.buckets:,} bucket{'s' if c.buckets != 1 else ''} "
                f"({c.buckets_used:,} used); {percent(c.share)} of "
                "the terms share a bucket with another term.")
    return {"vectorizer": "hashing", "ngram_range": list(ngram_range), "distinct_terms": c.distinct_terms,
            "buckets": c.buckets, "buckets_used": c.buckets_used, "terms_sharing_a_bucket": c.terms_sharing,
            "share_sharing_a_bucket": c.share, "counted": counted_where(spills), "sentence": sentence}
