"""A folder of text files, one document per file: scikit-learn's ``load_files`` layout.

Two layouts (``data.source = "files"``):

* **one sub-folder per category** (single-label): ``corpus/sport/001.txt``, ``corpus/politics/002.txt``;
  the sub-folder's name is the document's category. Files directly in the folder (a README) are not
  documents; neither are hidden files and folders (a name starting with '.').
* **files and a labels file** (multilabel): a CSV, TSV or JSON-lines file whose rows name a document
  file (relative to the folder) and its labels (``"sport;politics"``, or a JSON list); the rows are the
  documents, in the file's order, read by the one CSV/TSV/JSON-lines reader (:mod:`mlnb.data.text`).

Documents are numbered (their ids) by their position in the listing: the files sorted by category
folder then name, or the labels file's rows. A row is named in messages by the labels file and its
line, or by the folder and the document's 1-based number in its listing. A file that is not text of
the encoding (a NUL byte, undecodable bytes) is refused in one line naming it; a symbolic link that
leads out of the folder is refused unless ``follow_links`` says to read it. Texts become counts as
every text source's do (:func:`mlnb.data.text.vectorize_texts`, vocabulary from the training documents),
read whole (:func:`load_folder_dataset`) or in chunks (:class:`FolderSource`): the same documents,
ids, split and matrices.
"""

from __future__ import annotations

import codecs
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlnb.budget import check_data_sizes
from mlnb.data.dataset import Dataset, RowOrigin, hash_split
from mlnb.data.hashing import split_mask
from mlnb.data.limits import MAX_DOCUMENTS, MAX_LINE_BYTES
from mlnb.data.regular import check_regular, open_regular
from mlnb.data.splits import given_split_rule, hash_split_rule
from mlnb.data.stream import ChunkSource, Chunk, Partition, check_chunk_size, make_chunk, split_source
from mlnb.data.text import (Records, TextFit, TextOptions, TextReading, _Fitting, label_matrix, text_records,
                            vectorize_texts, vectorizer, vocabulary_features)
from mlnb.errors import MlnbError, MlnbWarning

TABLE = "data.files"
#: documents per partition of a streamed folder (what one Dask worker reads on its own)
PARTITION_DOCUMENTS = 10_000
#: documents read at a time by the pass that learns the categories and the vocabulary
FIT_BATCH = 10_000


@dataclass(frozen=True)
class FolderReading:
    """How a folder's files become documents: the ``[data.files]`` options but the paths.

    labels_path : "" = one sub-folder per category; else the labels file (CSV/TSV/JSON lines)
    file_column, label_column, label_separator, format, header : how the labels file's rows are read
    negative_labels : sub-folders or labels that mean "no category"
    encoding : of the documents and the labels file
    extensions : only files whose name ends in one of these are documents (empty: every file)
    follow_links : read symbolic links that lead out of the folder (else refused)
    check_labels : refuse labels of a labels file that look mis-split
    """

    labels_path: str = ""
    file_column: str = "file"
    label_column: str = "labels"
    label_separator: str = ","
    format: str = "auto"
    header: bool = True
    negative_labels: tuple = ()
    encoding: str = "utf-8"
    extensions: tuple = ()
    follow_links: bool = False
    check_labels: bool = True

    def __post_init__(self):
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            raise MlnbError(f"{TABLE}.encoding: unknown encoding {self.encoding!r}") from None

    def labels_reading(self) -> TextReading:
        """The labels file read as a text file whose 'text' is the document's file name."""
        return TextReading(format=self.format, header=self.header, text_column=self.file_column,
                           label_column=self.label_column, labels="multi", label_separator=self.label_separator,
                           negative_labels=self.negative_labels, encoding=self.encoding,
                           check_labels=self.check_labels and bool(self.labels_path), table=TABLE)


@dataclass
class Listing:
    """The documents of one folder, in order.

    files : each document's file
    labels : each document's label names
    where : what names a document in messages: the labels file, or the folder
    lines : int64, each document's line in the labels file, or its 1-based number in the listing
    """

    folder: Path
    files: list = field(default_factory=list)
    labels: list = field(default_factory=list)
    where: str = ""
    lines: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def n_documents(self) -> int:
        return len(self.files)

    def records(self, index: np.ndarray, encoding: str) -> Records:
        """The documents ``index`` (positions in the listing) read: lines, texts, labels."""
        return Records(numbers=[int(self.lines[i]) for i in index],
                       texts=[read_document(self.files[i], encoding) for i in index],
                       labels=[self.labels[i] for i in index])


# -- the listing -------------------------------------------------------------------------------------------
def _hidden(name: str) -> bool:
    return name.startswith(".")


def _inside(path: Path, root: Path, reading: FolderReading, what: str) -> Path:
    """``path`` when it stays inside ``root`` once its links are resolved (or ``follow_links``); else
    one line naming it and where it leads."""
    target = path.resolve()
    if reading.follow_links or target == root or root in target.parents:
        return path
    kind = "a symbolic link to" if path.is_symlink() or any(p.is_symlink() for p in path.parents) else "leads to"
    raise MlnbError(f"{path}: {kind} {target}, outside the folder {root} ({what}); set {TABLE}.follow_links = true "
                    "to read it")


def _is_document(name: str, reading: FolderReading) -> bool:
    return not _hidden(name) and (not reading.extensions or name.lower().endswith(
        tuple(e.lower() for e in reading.extensions)))


def list_folder(folder, reading: FolderReading, labels_path: str = "", what: str = "path") -> Listing:
    """The documents of ``folder``: its category sub-folders' files, or the rows of ``labels_path``."""
    root = Path(folder)
    key = f"{TABLE}.{what}"
    if not root.exists():
        raise MlnbError(f"{key} = {str(folder)!r}: no such folder")
    if not root.is_dir():
        raise MlnbError(f"{key} = {str(folder)!r}: not a folder; expected a folder of text files (a CSV, TSV or "
                        "JSON-lines file of texts is data.source = 'text')")
    listing = _listed(root, labels_path, reading) if labels_path else _by_category(root, reading)
    check_data_sizes(listing.where, n_documents=listing.n_documents)
    if not listing.n_documents:
        raise MlnbError(f"{root}: no documents")
    return listing


def _by_category(root: Path, reading: FolderReading) -> Listing:
    real_root = root.resolve()
    listing = Listing(root, where=str(root))
    folders = sorted((entry for entry in os.scandir(root) if not _hidden(entry.name) and entry.is_dir()),
                     key=lambda entry: entry.name)
    if not folders:
        raise MlnbError(f"{root}: no sub-folders; expected one sub-folder of text files per category (scikit-learn's "
                        f"load_files layout), or files and a labels file ({TABLE}.labels_path)")
    negative = set(reading.negative_labels)
    for entry in folders:
        category = Path(entry.path)
        _inside(category, real_root, reading, "a category folder")
        documents = 0
        for item in sorted(os.scandir(category), key=lambda e: e.name):
            if not _is_document(item.name, reading):
                continue
            path = Path(item.path)
            if item.is_dir():
                raise MlnbError(f"{path}: a folder inside the category folder {entry.name!r}; expected the category's "
                                "documents as files directly inside it (one level of sub-folders)")
            _inside(path, real_root, reading, "a document")
            if not item.is_file():  # (no stat of a plain file: the folder's listing says what it is)
                check_regular(path, f"a document of the category folder {entry.name!r}")
            listing.files.append(path)
            listing.labels.append([] if entry.name in negative else [entry.name])
            documents += 1
            if len(listing.files) > MAX_DOCUMENTS:
                check_data_sizes(str(root), n_documents=len(listing.files))
        if not documents:
            warnings.warn(MlnbWarning(f"{category}: no documents in this category folder; it is not a category"),
                          stacklevel=3)
    listing.lines = np.arange(1, len(listing.files) + 1, dtype=np.int64)
    return listing


def _listed(root: Path, labels_path: str, reading: FolderReading) -> Listing:
    real_root = root.resolve()
    labels_file = Path(labels_path)
    listing = Listing(root, where=str(labels_file))
    lines, seen = [], {}
    for records in text_records(labels_file, reading.labels_reading(), batch=FIT_BATCH):
        for number, name, labels in zip(records.numbers, records.texts, records.labels):
            name = name.strip()
            if not name:
                raise MlnbError(f"{labels_file}:{number}: an empty file name ({TABLE}.file_column = "
                                f"{reading.file_column!r})")
            path = root / name
            if name in seen:
                raise MlnbError(f"{labels_file}:{number}: {name!r} is listed twice (first on line {seen[name]}); "
                                "expected each document once")
            seen[name] = number
            _inside(path, real_root, reading, f"named on line {number} of {labels_file}")
            try:
                check_regular(path, "a document")
            except MlnbError as error:
                raise MlnbError(f"{labels_file}:{number}: {error}") from None
            listing.files.append(path)
            listing.labels.append(labels)
            lines.append(number)
            if len(lines) > MAX_DOCUMENTS:
                check_data_sizes(str(labels_file), n_documents=len(lines))
    listing.lines = np.asarray(lines, dtype=np.int64)
    return listing


# -- a document ----------------------------------------------------------------------------------------------
def read_document(path: Path, encoding: str) -> str:
    """The text of one document file: decoded strictly (a UTF-8 byte-order mark dropped); a file that is not
    a readable regular file (a FIFO, a device), of more than MAX_LINE_BYTES bytes (read at most one byte
    more: a file that grows is bounded too), undecodable bytes or a NUL character is refused in one line."""
    try:
        with open_regular(path, "a document") as file:
            data = file.read(MAX_LINE_BYTES + 1)
    except OSError as error:
        raise MlnbError(f"{path}: cannot read ({error.strerror or error})") from None
    if len(data) > MAX_LINE_BYTES:
        raise MlnbError(f"{path}: a document of more than {MAX_LINE_BYTES:,} bytes; expected at most "
                        f"{MAX_LINE_BYTES:,} (not a text file? {TABLE}.extensions picks the files to read)")
    codec = "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding
    try:
        text = data.decode(codec)
    except UnicodeError as error:  # UnicodeDecodeError, or e.g. UTF-16 without its byte-order mark
        start = getattr(error, "start", 0)
        line = data.count(b"\n", 0, start) + 1
        reason = getattr(error, "reason", str(error))
        raise MlnbError(f"{path}:{line}: not {encoding} text (byte {start:,}: {reason}); a binary file? set "
                        f"{TABLE}.encoding, or {TABLE}.extensions to read only the text files") from None
    if "\x00" in text:
        raise MlnbError(f"{path}: a binary file (a NUL character at position {text.index(chr(0)):,}); expected a "
                        f"text document ({TABLE}.extensions picks the files to read)")
    return text


# -- what a first pass learns ---------------------------------------------------------------------------------
def fit_folders(parts: Sequence[tuple[Listing, Callable[[np.ndarray], np.ndarray] | None]], reading: FolderReading,
                options: TextOptions) -> TextFit:
    """Categories (the labels of every document, less ``negative_labels``) and, for CountVectorizer, the
    vocabulary of the training documents, read batch by batch: what :func:`mlnb.data.text.fit_text` finds
    in text files. ``is_train(ids)`` picks the training documents of a part (None: all)."""
    fitting = _Fitting(reading.labels_reading(), options, vocabulary=True)  # hashing: its collisions are counted
    for listing, is_train in parts:
        for start in range(0, listing.n_documents, FIT_BATCH):
            index = np.arange(start, min(start + FIT_BATCH, listing.n_documents))
            train = np.ones(index.size, dtype=bool) if is_train is None else is_train(index.astype(np.int64))
            texts_needed = fitting.analyzer is not None
            records = (listing.records(index, reading.encoding) if texts_needed else
                       Records(numbers=list(listing.lines[index]), texts=[""] * index.size,
                               labels=[listing.labels[i] for i in index]))
            fitting.add(records, train, listing.where)
    return fitting.result(Path(parts[0][0].where), Path(parts[-1][0].where))


# -- in memory -----------------------------------------------------------------------------------------------
def load_folder_dataset(path, test_path=None, reading: FolderReading = FolderReading(), test_labels_path: str = "",
                        text_options: TextOptions = TextOptions(), test_fraction: float = 0.5, seed: int = 0,
                        name: str | None = None) -> Dataset:
    """A Dataset of a folder of text files, split by a seeded hash of each document's id (its position in
    the listing), as streamed, or with a test folder, a given split. The matrices of
    :func:`folder_sources` of the same folders."""
    train = list_folder(path, reading, reading.labels_path)
    name = name or Path(path).name
    labels_reading = reading.labels_reading()
    if test_path:
        test = list_folder(test_path, reading, test_labels_path, "test_path")
        fitting = _Fitting(labels_reading, text_options, vocabulary=False)
        train_records = train.records(np.arange(train.n_documents), reading.encoding)
        test_records = test.records(np.arange(test.n_documents), reading.encoding)
        fitting.add(train_records, np.ones(train.n_documents, dtype=bool), train.where)
        fitting.add(test_records, np.zeros(test.n_documents, dtype=bool), test.where)
        fitted = fitting.result(Path(train.where), Path(test.where))
        counted = vectorize_texts(train_records.texts, test_records.texts, text_options)
        return replace(Dataset.from_train_test(
            counted.X_train, label_matrix(train_records.labels, fitted.categories), counted.X_test,
            label_matrix(test_records.labels, fitted.categories), fitted.categories, counted.feature_names, name=name,
            origins=(_origin(train), _origin(test)),
            ids=(np.arange(train.n_documents, dtype=np.int64), np.arange(test.n_documents, dtype=np.int64)),
            split_rule=given_split_rule("test folder", test_path)), text_features=counted.text_features)
    ids = np.arange(train.n_documents, dtype=np.int64)
    train_index, test_index = hash_split(ids, seed, test_fraction)
    is_train = np.zeros(ids.size, dtype=bool)
    is_train[train_index] = True
    records = train.records(ids, reading.encoding)
    fitting = _Fitting(labels_reading, text_options, vocabulary=False)
    fitting.add(records, is_train, train.where)
    fitted = fitting.result(Path(train.where), Path(train.where))
    texts = records.texts
    counted = vectorize_texts([texts[i] for i in train_index], [texts[i] for i in test_index], text_options)
    X = sp.vstack([counted.X_train, counted.X_test], format="csr")[np.argsort(np.concatenate([train_index,
                                                                                              test_index]))]
    return Dataset(X=X, Y=label_matrix(records.labels, fitted.categories), category_names=fitted.categories,
                   train_index=train_index, test_index=test_index, feature_names=counted.feature_names, name=name,
                   origins=(_origin(train),), ids=ids, split_rule=hash_split_rule(seed, test_fraction),
                   text_features=counted.text_features)


def _origin(listing: Listing) -> RowOrigin:
    return RowOrigin(listing.where, listing.n_documents, row_lines=listing.lines)


# -- in chunks -----------------------------------------------------------------------------------------------
class FolderSource(ChunkSource):
    """The documents of a folder read in chunks, each chunk's texts read and vectorised on their own:
    the conventions of :func:`load_folder_dataset`. Partitions are runs of ``PARTITION_DOCUMENTS``
    documents of the listing; a document's id is its position in the listing, so any run of positions is read
    as a partition."""

    reads_row_ranges = True

    def __init__(self, listing: Listing, reading: FolderReading, text_options: TextOptions, fitted: TextFit,
                 name: str | None = None):
        self.listing, self.reading, self.text_options = listing, reading, text_options
        self.category_names = list(fitted.categories)
        self.vocabulary, self.n_features, self.feature_names = vocabulary_features(fitted.vocabulary, text_options)
        self.name = name or listing.folder.name
        self.text_features = fitted.text_features

    def partitions(self) -> list[Partition]:
        n = self.listing.n_documents
        starts = range(0, n, PARTITION_DOCUMENTS)
        return [Partition(path=self.listing.where, number=k, first_id=start, start=start,
                          stop=min(start + PARTITION_DOCUMENTS, n), n_documents=min(PARTITION_DOCUMENTS, n - start))
                for k, start in enumerate(starts)]

    def read(self, partition: Partition, chunk_size: int) -> Iterator[Chunk]:
        return self.read_where(partition, chunk_size, None)

    def read_where(self, partition: Partition, chunk_size: int,
                   keep: Callable[[np.ndarray], np.ndarray] | None) -> Iterator[Chunk]:
        """Documents selected by ``keep(ids)`` before they are read and vectorised."""
        chunk_size = check_chunk_size(chunk_size)
        counter = vectorizer(self.text_options, self.vocabulary)
        stop = self.listing.n_documents if partition.stop is None else partition.stop
        for start in range(partition.start, stop, chunk_size):
            ids = np.arange(start, min(start + chunk_size, stop), dtype=np.int64)
            chosen = ids if keep is None else ids[keep(ids)]
            if not chosen.size:
                continue
            records = self.listing.records(chosen, self.reading.encoding)
            X = counter.transform(records.texts).tocsr()
            Y = label_matrix(records.labels, self.category_names)
            lines = self.listing.lines[chosen]
            yield make_chunk(X, Y, chosen, self.listing.where, int(lines[0]), row_lines=lines)


def folder_sources(path, test_path=None, *, reading: FolderReading = FolderReading(), test_labels_path: str = "",
                   text_options: TextOptions = TextOptions(), seed: int = 0,
                   test_fraction: float = 0.5) -> tuple[ChunkSource, ChunkSource]:
    """(train, test) sources of a folder: ``test_path`` is the test part, else a seeded hash split of the
    listing's ids. One first pass (:func:`fit_folders`) finds the categories and, for CountVectorizer,
    the training documents' vocabulary."""
    train = list_folder(path, reading, reading.labels_path)
    if test_path:
        test = list_folder(test_path, reading, test_labels_path, "test_path")
        fitted = fit_folders([(train, None), (test, lambda ids: np.zeros(ids.size, dtype=bool))], reading,
                             text_options)
        return (FolderSource(train, reading, text_options, fitted, Path(path).name),
                FolderSource(test, reading, text_options, fitted, Path(test_path).name))
    split_mask(np.zeros(0, dtype=np.int64), seed, test_fraction)  # checks the arguments first
    fitted = fit_folders([(train, lambda ids: ~split_mask(ids, seed, test_fraction))], reading, text_options)
    return split_source(FolderSource(train, reading, text_options, fitted, Path(path).name), seed, test_fraction)


def whole_folder_source(path, reading: FolderReading, text_options: TextOptions) -> FolderSource:
    """Every document of a folder as one source (``mlnb convert``): categories and vocabulary from all."""
    listing = list_folder(path, reading, reading.labels_path)
    return FolderSource(listing, reading, text_options, fit_folders([(listing, None)], reading, text_options),
                        Path(path).name)
