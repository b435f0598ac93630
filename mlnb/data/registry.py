"""Data sources: what a study may name in ``[data] source = "..."``.

A source ties together its options dataclass (the ``[data.<name>]`` table: defaults, help and
allowed values in one place), how it is read whole (``load`` -> a :class:`~mlnb.data.dataset.Dataset`)
and, when it can be, in chunks (``open_streams`` -> the train and test
:class:`~mlnb.data.stream.ChunkSource`), the files it reads (for messages) and the sentence
that states its train/test rule. Each source is one module of :mod:`mlnb.data.sources` that
owns its options and declares ``SOURCE = SourceKind(...)``; registering it is one line in
``mlnb/data/sources/__init__.py``, and ``mlnb.config`` builds ``[data]`` from what is registered.

This module and the source modules import no reader at import time (readers import
scikit-learn and numba): ``mlnb.config`` reads the options from here. This module imports no reader at all,
not even for type names (a Dataset, a ChunkSource, a TextOptions are named in words): the readers import
``mlnb.budget``, which asks the registered source for the data's shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from mlnb.data.shape import DataShape
from mlnb.data.splits import hash_split_rule
from mlnb._registry import Registry
from mlnb.errors import MlnbError

# Upper bounds of the keys that size an allocation (mlnb.data.limits, which imports nothing, so that
# mlnb.budget applies the same bounds to the sizes that data files set): MAX_DOCUMENTS, MAX_FEATURES,
# MAX_CATEGORIES, MAX_LINE_BYTES.
from mlnb.data.limits import MAX_CATEGORIES, MAX_DOCUMENTS, MAX_FEATURES, MAX_LINE_BYTES  # noqa: E402,F401


@dataclass(frozen=True)
class Request:
    """What a source is given besides its own options.

    seed          : the study's seed (split, generation)
    test_fraction : ``data.test_fraction``, for a source without a given test part
    text          : how texts become counts (a ``mlnb.data.text.TextOptions`` from ``[features]``: vectorizer,
                    lowercase, ...); None: the defaults (``mlnb.data.sources.text.text_options_of``)
    """

    seed: int = 0
    test_fraction: float = 0.5
    text: Any = None


#: what a source's documents carry: one label each, any number (none, one or several), or either, as the
#: data say (checked when they are read)
LABELS = ("single", "multi", "either")


def unknown_shape(options, data, features) -> tuple[DataShape, dict]:
    """Nothing known before reading: every size is set by the data."""
    return DataShape(None, None, None, None, None), {}


def hashed_shape(options, data, features) -> tuple[DataShape, dict]:
    """A source of texts: its columns are ``features.hash_features`` with ``vectorizer = 'hashing'``, else its
    vocabulary (known once read)."""
    if features is not None and features.vectorizer == "hashing":
        return (DataShape(None, None, features.hash_features, None, None),
                {"n_features": f"features.hash_features = {features.hash_features}"})
    return unknown_shape(options, data, features)


def generated_shape(table: str, nnz_key: str, n_documents: int, n_features: int, n_categories: int,
                    nnz: int, test_fraction: float) -> tuple[DataShape, dict]:
    """The shape of a generated corpus of ``n_documents``: n_test = round(n_documents · test_fraction) (the
    expected test part of a hash split), n_train the rest; and the keys of ``[data.<table>]`` that set each size."""
    n_test = round(n_documents * test_fraction)
    keys = {"n_documents": f"data.{table}.n_documents = {n_documents}",
            "n_features": f"data.{table}.n_features = {n_features}",
            "n_categories": f"data.{table}.n_categories = {n_categories}",
            "nnz": nnz_key}
    return DataShape(n_documents - n_test, n_test, n_features, n_categories, nnz), keys


def _no_task_checks(options, task: str) -> None:
    pass


def _hash_split(options, request: Request) -> str:
    return hash_split_rule(request.seed, request.test_fraction)


def _no_files(options) -> list[str]:
    return []


@dataclass(frozen=True)
class SourceKind:
    """A registered data source.

    name         : the config's ``data.source``, and its options' table ``[data.<name>]``
    options      : the options dataclass; every field made with ``mlnb.options.option``
    help         : one line
    load         : (options, Request) -> the Dataset, read whole and split
    open_streams : (options, Request) -> (train, test) ChunkSources, split as ``load`` splits; None when
                   the source cannot be read in chunks
    open_whole   : (options, Request) -> (the unsplit ChunkSource, the test one or None): what ``mlnb
                   convert`` writes; None when the source cannot be read in chunks
    split        : (options, Request) -> the sentence of its train/test rule (``Dataset.split_rule``);
                   default: the seeded hash of each document's id
    files        : options -> the files whose documents make the rows, in row order (train first), to
                   name them in messages
    required     : option names that must not be empty (``data.<name>.<key>: required ...``)
    prunes_vocabulary : its first pass counts the training texts' terms, so with vectorizer = 'count' it applies
                   features.min_df and max_features to the vocabulary there, also when streamed
                   (``mlnb.data.vocabulary``)
    labels       : required; what its documents carry (``LABELS``): 'multi' (several labels a document: task =
                   'multiclass' is refused), 'single', or 'either' (the data say, checked when read); or
                   options -> one of them, where an option decides
    shape        : required; (options, the [data] config, the [features] config or None) -> (DataShape, keys):
                   the data's shape as far as the config tells before reading (None where the data set it), and for
                   n_documents / n_features / n_categories / nnz the ``key = value`` that set it (for
                   ``mlnb.budget``'s messages)
    check_task   : (options, task) -> None: the source's own refusals of a task (one MlnbError line naming its
                   ``data.<name>.<key>``), e.g. an option that means "no label" with task = 'multiclass'
    detect       : ``mlnb init``'s detector: (a :class:`mlnb.data.detect.Look` at the file or folder given) ->
                   a ``mlnb.data.detect.Detected`` (this source, its options, the categories), or None when the
                   data are not this source's; None: nothing to detect (no file is read)
    detect_order : detectors are asked in increasing order, the first that recognises the data wins (a
                   detector by a sure sign, such as a manifest or a suffix, before one that guesses from the content)
    """

    name: str
    options: type
    help: str
    load: Callable[[Any, Request], Any]  # -> Dataset
    open_streams: Callable[[Any, Request], tuple[Any, Any]] | None = None  # -> (ChunkSource, ChunkSource)
    open_whole: Callable[[Any, Request], tuple[Any, Any]] | None = None  # -> (ChunkSource, ChunkSource | None)
    split: Callable[[Any, Request], str] = _hash_split
    files: Callable[[Any], list[str]] = _no_files
    required: tuple = field(default=())
    prunes_vocabulary: bool = False
    labels: str | Callable[[Any], str] | None = None  # required: every source says what its documents carry
    shape: Callable[[Any, Any, Any], tuple[DataShape, dict]] | None = None  # required (unknown_shape: nothing)
    check_task: Callable[[Any, str], None] = _no_task_checks
    detect: Callable[[Any], Any] | None = None
    detect_order: int = 0

    def __post_init__(self):
        if (self.open_streams is None) != (self.open_whole is None):
            raise ValueError(f"data source {self.name!r}: give both open_streams and open_whole, or neither")
        if not callable(self.labels) and self.labels not in LABELS:
            raise ValueError(f"data source {self.name!r}: labels = {self.labels!r}, expected one of {LABELS}")
        if self.shape is None:
            raise ValueError(f"data source {self.name!r}: declare its shape (unknown_shape where the data set it)")

    def labels_of(self, options) -> str:
        """What the documents of the source read with ``options`` carry: 'single', 'multi' or 'either'."""
        labels = self.labels(options) if callable(self.labels) else self.labels
        if labels not in LABELS:
            raise ValueError(f"data source {self.name!r}: labels gave {labels!r}, expected one of {LABELS}")
        return labels

    @property
    def streams(self) -> bool:
        """Whether it can be read chunk by chunk (``data.streaming = true``)."""
        return self.open_streams is not None

    def check_required(self, options) -> None:
        for key in self.required:
            if not getattr(options, key):
                raise MlnbError(f"data.{self.name}.{key}: required when data.source = '{self.name}'")


SOURCES: Registry[SourceKind] = Registry("source")
register = SOURCES.add


def get_source(name: str, where: str = "data.source") -> SourceKind:
    return SOURCES.named(name, where)
