"""Open a study's documents: read whole or as chunk sources, with the keys that name categories checked.

``open_documents`` gives the training and test documents (``mlnb.study.documents``) of the config's data —
``data.streaming = false``: the dataset loaded whole (``prepare_data``) and its features transformed
(``in_memory_documents``); ``true``: the source's chunk streams (``streamed_documents``) — with the data
description the report starts from, and ``open_executor`` the executor that reads them (``mlnb.backends``).
Whether the documents are held or streamed is asked here, where they are opened; the loop asks the
documents and the score stores what they can do.
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from pathlib import Path

import numpy as np

from mlnb import progress, timings
from mlnb.backends import LocalBackend, open_backend
from mlnb.budget import DataShape, check_budget
from mlnb.config import StudyConfig, with_decision_resolved
from mlnb.data.dataset import Dataset
from mlnb.data.sources import describe_split, load_dataset, open_streams
from mlnb.data.stream import OneClassSource
from mlnb.errors import MlnbError
from mlnb.features import FeatureTransform
from mlnb.models import get_kind
from mlnb.study.documents import InMemoryDocuments, StreamedDocuments


def prepare_data(config: StudyConfig) -> tuple[Dataset, FeatureTransform]:
    with progress.status("loading data"), timings.stage("load"):
        dataset = load_dataset(config.data, config.data_seed(), config.features, config.task)
    _check_against_data(config, dataset.category_names)
    check_budget(config, DataShape(int(dataset.train_index.size), int(dataset.test_index.size), dataset.n_features,
                                   dataset.n_categories, int(dataset.X.nnz)))  # the data's real shape now
    if any(get_kind(spec.kind).requires_non_negative(spec.options) for spec in config.study_models()):
        dataset.check_non_negative()  # the test part too, with the file and line of the first bad value
    with timings.stage("features"):
        features = FeatureTransform(config.features.transform, config.features.min_df,
                                    config.features.max_features)
        features.fit(dataset.X_train)
    return dataset, features


def in_memory_documents(config: StudyConfig, dataset: Dataset, features: FeatureTransform
                        ) -> tuple[InMemoryDocuments, InMemoryDocuments]:
    """(train, test) documents of a dataset read whole, after the feature transform."""
    ids, names = dataset.ids, list(dataset.category_names)
    with timings.stage("features"):
        return (InMemoryDocuments(features.transform(dataset.X_train), dataset.Y_train, ids[dataset.train_index],
                                  names),
                InMemoryDocuments(features.transform(dataset.X_test), dataset.Y_test, ids[dataset.test_index], names))


def streamed_documents(config: StudyConfig) -> tuple[StreamedDocuments, StreamedDocuments]:
    """(train, test) documents of a source read in chunks (``data.streaming = true``)."""
    train, test = open_streams(config.data, config.features, config.data_seed())
    if config.task == "multiclass":  # every document read is checked, as the in-memory loader checks them all
        train, test = OneClassSource(train), OneClassSource(test)
    data = config.data
    return (StreamedDocuments(train, data.chunk_size, data.shuffle_buffer),
            StreamedDocuments(test, data.chunk_size, data.shuffle_buffer))


def split_rule(config: StudyConfig, dataset: Dataset | None = None) -> str:
    """The sentence that says how the documents were split into training and test parts."""
    return dataset.split_rule if dataset is not None else describe_split(config.data, config.data_seed())


def _check_against_data(config: StudyConfig, category_names) -> None:
    """The keys that name categories, checked against the categories the data has."""
    n_categories = len(category_names)
    if config.report.category_name:
        names = list(category_names)
        if config.report.category_name not in names:
            close = difflib.get_close_matches(config.report.category_name, names, n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise MlnbError(f"report.category_name = {config.report.category_name!r} is not a category of "
                            f"the data{hint}")
    elif config.report.category >= n_categories:  # -1: chosen from the data (plotted_category)
        raise MlnbError(f"report.category = {config.report.category} is out of range: the data has "
                        f"{n_categories} categories (0..{n_categories - 1})")
    for spec in config.study_models():
        problem = get_kind(spec.kind).check_data(spec.options, n_categories)  # e.g. one value per category
        if problem:
            raise MlnbError(f"models.{spec.name}.{problem}")


def open_documents(config: StudyConfig):
    """(config with report.category and eval.decision resolved, train, test, data description, category names) of
    the config's data: read whole (``data.streaming = false``) or as chunk sources."""
    if not config.data.streaming:
        dataset, features = prepare_data(config)
        train, test = in_memory_documents(config, dataset, features)
        info = dataset.describe() | {"n_features_used": int(train.n_features),
                                     "feature_transform": config.features.transform}
        info.setdefault("split", split_rule(config, dataset))
        names = list(dataset.category_names)
    else:
        if config.engine.spill_folder and not Path(config.engine.spill_folder).is_dir():  # before any work
            raise MlnbError(f"engine.spill_folder = {config.engine.spill_folder!r}: no such folder")
        train, test = streamed_documents(config)
        names = list(train.category_names)
        _check_against_data(config, names)
        # the source's own V and K now, before any chunk is counted (the config may not state them)
        check_budget(config, DataShape(None, None, int(train.n_features), len(names), None))
        info = {"name": train.source.name, "n_features": train.n_features, "n_categories": len(names),
                "n_features_used": train.n_features, "feature_transform": config.features.transform,
                "split": split_rule(config)}
        if train.source.text_features is not None:  # a text source's vocabulary, or its hashing's collisions
            info["text_features"] = train.source.text_features
    config = with_decision_resolved(config)  # the report and the results name the rule the study used
    if config.report.category_name:  # the name decides; the resolved config records the index too
        config = replace(config, report=replace(config.report, category=names.index(config.report.category_name)))
    elif config.report.category < 0 and not config.data.streaming:  # the default: one that exists and is testable
        count = lambda Y: np.asarray(Y.sum(axis=0)).ravel()
        k = plotted_category(count(train.Y), train.n_documents, count(test.Y), test.n_documents)
        config = replace(config, report=replace(config.report, category=k))
    return config, train, test, info, names


def plotted_category(train_positives, n_train: int, test_positives=None, n_test: int | None = None) -> int:
    """``report.category = -1``: the most frequent category among those with training positives and
    negatives and, when the test counts are given, test positives and negatives (its AUC and curves are
    defined): the most positives in both parts, ties broken by the test positives (the points of its
    curves); the first most frequent one when no category is testable."""
    train_positives = np.asarray(train_positives, dtype=np.float64)
    testable = (train_positives > 0) & (train_positives < n_train)
    frequency = train_positives
    if test_positives is not None:
        test_positives = np.asarray(test_positives, dtype=np.float64)
        testable &= (test_positives > 0) & (test_positives < n_test)
        frequency = train_positives + test_positives + test_positives / (n_test + 1.0)
    candidates = np.where(testable, frequency, -1.0) if testable.any() else frequency
    return int(np.argmax(candidates))


def open_executor(config: StudyConfig):
    """The executor of the config's study, a context manager: ``engine.kind``'s (``open_backend``) for streamed
    documents, this process (``LocalBackend``) for documents read whole."""
    return open_backend(config.engine) if config.data.streaming else LocalBackend()


def describe_documents(config: StudyConfig, info: dict, loop, backend) -> dict:
    """The data description of ``open_documents`` completed by the loop: streamed, the counts only the counting
    pass knew (documents, non-zeros, labels per document), how the documents were read and trained on, and where
    the test scores were held (the store's ``describe``); read whole, ``info`` as it is."""
    if not config.data.streaming:
        return info
    n_test, n_train = loop.store.n_documents, loop.n_train
    return info | {"n_documents": n_train + n_test, "n_train": n_train, "n_test": n_test, "nnz": loop.nnz_train,
                   "mean_labels_per_document": float(loop.train_positives.sum() / max(n_train, 1)),
                   "mean_features_per_document": loop.nnz_train / max(n_train, 1),
                   "streaming": {"chunk_size": config.data.chunk_size,
                                 "shuffle_buffer": config.data.shuffle_buffer,
                                 "engine": backend.describe(),
                                 "dask_training": {run.name: run.model.dask_training_ for run in loop.runs
                                                   if hasattr(run.model, "dask_training_")},
                                 **loop.store.describe()}}
