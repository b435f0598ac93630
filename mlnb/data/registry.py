"""Data sources: what a study may name in ``[data] source = "..."``.

A source ties together its options dataclass (the ``[data.<name>]`` table: defaults, help and
allowed values in one place), how it is read whole (``load`` -> a :class:`~mlnb.data.dataset.Dataset`)
and, when it can be, in chunks (``open_streams`` -> the train and test
:class:`~mlnb.data.stream.ChunkSource`), the files it reads (for messages) and the sentence
that states its train/test rule. Each source is one module of :mod:`mlnb.data.sources` that
owns its options and declares ``SOURCE = SourceKind(...)``; registering it is one line in
``mlnb/data/sources/__init__.py``, and ``mlnb.config`` builds ``[data]`` from what is registered.

This module and the source modules import no reader at import time (readers import
scikit-learn and numba): ``mlnb.config`` reads the options from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from mlnb.data.splits import hash_split_rule
from mlnb._registry import Registry
from mlnb.errors import MlnbError

if TYPE_CHECKING:
    from mlnb.data.dataset import Dataset
    from mlnb.data.stream import ChunkSource
    from mlnb.data.text import TextOptions

# Upper bounds of the keys that size an allocation (mlnb.data.limits, which imports nothing, so that
# mlnb.budget applies the same bounds to the sizes that data files set): MAX_DOCUMENTS, MAX_FEATURES,
# MAX_CATEGORIES, MAX_LINE_BYTES.
from mlnb.data.limits import MAX_CATEGORIES, MAX_DOCUMENTS, MAX_FEATURES, MAX_LINE_BYTES  # noqa: E402,F401


@dataclass(frozen=True)
class Request:
    """What a source is given besides its own options.

    seed          : the study's seed (split, generation)
    test_fraction : ``data.test_fraction``, for a source without a given test part
    text          : how texts become counts (``[features]``: vectorizer, lowercase, ...); None: defaults
    """

    seed: int = 0
    test_fraction: float = 0.5
    text: TextOptions | None = None

    def text_options(self) -> TextOptions:
        from mlnb.data.text import TextOptions

        return self.text or TextOptions()


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
    """

    name: str
    options: type
    help: str
    load: Callable[[Any, Request], Dataset]
    open_streams: Callable[[Any, Request], tuple[ChunkSource, ChunkSource]] | None = None
    open_whole: Callable[[Any, Request], tuple[ChunkSource, ChunkSource | None]] | None = None
    split: Callable[[Any, Request], str] = _hash_split
    files: Callable[[Any], list[str]] = _no_files
    required: tuple = field(default=())
    prunes_vocabulary: bool = False

    def __post_init__(self):
        if (self.open_streams is None) != (self.open_whole is None):
            raise ValueError(f"data source {self.name!r}: give both open_streams and open_whole, or neither")

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
