"""Config ``[data]`` -> the documents: read whole (:func:`load_dataset`) or in chunks (:func:`open_streams`).

Every data source is registered here, one line each (see :mod:`mlnb.data.registry`); each is one
module of this package that owns its options dataclass (``[data.<name>]``). Nothing here names a
source: a source that can stream says so by its ``open_streams``.

Whatever way a source is read, its documents, their ids and which of them are test documents
are the same (:func:`describe_split` states the rule). Importing this package imports no reader
(no numba, scikit-learn or model): ``mlnb.config`` builds ``[data]`` from :data:`SOURCES`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlnb.data.registry import SOURCES, Request, SourceKind, get_source, register
from mlnb.data.sources import arff, bundled, files, long_tail, rcv1, reuters21578, shards, svmlight, synthetic, text
from mlnb.data.splits import sample_rule
from mlnb.data.validate import one_class_error
from mlnb.errors import MlnbError

if TYPE_CHECKING:  # DataConfig and FeaturesConfig (mlnb.config) are named, not imported: config imports this
    from mlnb.data.dataset import Dataset
    from mlnb.data.stream import ChunkSource
    from mlnb.data.text import TextOptions

# in the order of the [data.<name>] tables of a written config
register(synthetic.SOURCE)
register(svmlight.SOURCE)
register(rcv1.RCV1)
register(rcv1.LYRL2004)
register(reuters21578.SOURCE)
register(arff.SOURCE)
register(text.SOURCE)
register(files.SOURCE)
register(bundled.SOURCE)
register(shards.SOURCE)
register(long_tail.SOURCE)

__all__ = ["SOURCES", "Request", "SourceKind", "check_single_label", "describe_split", "detect_data",
           "get_source", "load_dataset", "open_source", "open_streams", "register", "streaming_sources", "text_options"]



def text_options(features: FeaturesConfig | None, prune: bool = False) -> TextOptions:
    """How texts become counts, from the config's [features] section (None: the defaults); with ``prune``,
    features.min_df and max_features go to the vocabulary pass (else they are left to ``mlnb.features``)."""
    from mlnb.data.text import TextOptions

    if features is None:
        return TextOptions()
    return TextOptions(vectorizer=features.vectorizer, lowercase=features.lowercase,
                       stop_words=features.stop_words, hash_features=features.hash_features,
                       ngram_range=tuple(features.ngram_range), min_df=features.min_df if prune else 0,
                       max_features=features.max_features if prune else 0,
                       vocabulary_memory=features.max_vocabulary_memory * 2**20)


def detect_data(data, hints=None):
    """What the file or folder ``data`` holds, for ``mlnb init``: asked of every registered source's detector
    (``SourceKind.detect``, :func:`mlnb.data.detect.detect`); ``hints``: a ``mlnb.data.detect.Hints``."""
    from mlnb.data.detect import Hints, detect

    return detect(data, hints or Hints(), SOURCES.values())


def streaming_sources() -> tuple[str, ...]:
    """The names of the sources that can be read chunk by chunk."""
    return tuple(name for name, source in SOURCES.items() if source.streams)


def _source(config: DataConfig) -> tuple[SourceKind, object]:
    """The registered source of ``config`` and its options, the required ones checked."""
    source = get_source(config.source)
    options = getattr(config, source.name)
    source.check_required(options)
    return source, options


def _request(config: DataConfig, seed: int, features: FeaturesConfig | None, prune: bool = False) -> Request:
    return Request(seed=seed, test_fraction=config.test_fraction, text=text_options(features, prune))


def _load(config: DataConfig, features: FeaturesConfig | None, seed: int) -> Dataset:
    source, options = _source(config)
    # read whole, a vocabulary pass prunes only where the terms left memory, as mlnb.features would on the whole
    # training part; with max_train_documents that learns from the sample (taken later), so never
    return source.load(options, _request(config, seed, features, prune=not config.max_train_documents))


def check_single_label(dataset: Dataset, config: DataConfig) -> None:
    """Every document in exactly one class, or one line naming the file and the first that is not."""
    import numpy as np

    counts = np.diff(dataset.Y.tocsr().indptr)
    bad = np.flatnonzero(counts != 1)
    if not bad.size:
        return
    row = int(bad[0])
    names = [dataset.category_names[k] for k in dataset.Y[row].indices]
    raise one_class_error(dataset.place(row), names)


def load_dataset(config: DataConfig, seed: int, features: FeaturesConfig | None = None,
                 task: str = "multilabel") -> Dataset:
    """The dataset that ``config`` describes, split and subsampled with ``seed``; its
    ``describe()["split"]`` is :func:`describe_split` of the same config."""
    dataset = _load(config, features, seed)
    if task == "multiclass":
        check_single_label(dataset, config)
    return dataset.subsample_train(config.max_train_documents, seed)


def describe_split(config: DataConfig, seed: int) -> str:
    """The sentence that states which documents of ``config`` are test documents (and, with
    ``max_train_documents``, which train): the ``describe()["split"]`` of :func:`load_dataset`'s
    Dataset, known without reading the data, the same in memory and streamed."""
    source, options = get_source(config.source), getattr(config, config.source)
    rule = source.split(options, Request(seed=seed, test_fraction=config.test_fraction))
    return rule + (sample_rule(config.max_train_documents, seed) if config.max_train_documents else "")


def _streaming(config: DataConfig) -> tuple[SourceKind, object]:
    source = get_source(config.source)
    if not source.streams:
        raise MlnbError(f"data.streaming: data.source = '{config.source}' cannot be read in chunks; streaming "
                        f"sources are {', '.join(streaming_sources())} (write other data as svmlight, or set "
                        "streaming = false)")
    return _source(config)


def open_streams(config: DataConfig, features: FeaturesConfig | None = None,
                 seed: int = 0) -> tuple[ChunkSource, ChunkSource]:
    """(train, test) chunk sources for ``config`` (data.streaming = true): the documents, ids and split
    that :func:`load_dataset` gives."""
    source, options = _streaming(config)
    return source.open_streams(options, _request(config, seed, features, prune=True))


def open_source(config: DataConfig, features: FeaturesConfig | None = None) -> tuple[ChunkSource, ChunkSource | None]:
    """The unsplit source of ``config`` and its test source (None without a given test part): what
    ``mlnb convert`` writes as shards."""
    source, options = _streaming(config)
    return source.open_whole(options, _request(config, 0, features))
