"""``data.source = "files"``: a folder of text files, one document per file, in scikit-learn's ``load_files``
layout (one sub-folder per category) or with a labels file for multilabel documents (:mod:`mlnb.data.folders`),
in memory or streamed: the same listing, documents, ids, split and vocabulary."""

from __future__ import annotations

from dataclasses import dataclass

from mlnb.data.registry import Request, SourceKind, hashed_shape
from mlnb.data.sources.text import text_options_of
from mlnb.data.splits import given_split_rule, hash_split_rule
from mlnb.options import option


@dataclass
class FilesConfig:
    path: str = option("", "folder of text files: one sub-folder per category (its name is the category), or the "
                       "files that `labels_path` names")
    test_path: str = option("", "optional test folder of the same layout; empty = a seeded hash split of `path`")
    labels_path: str = option("", "multilabel: a CSV, TSV or JSON-lines file whose rows name a file (relative to "
                              "`path`) and its labels; empty = one sub-folder per category")
    test_labels_path: str = option("", "the labels file of `test_path` (with `labels_path`)")
    file_column: str = option("file", "labels file: the column (or JSON key) of the file name")
    label_column: str = option("labels", "labels file: the column (or JSON key) of the labels")
    label_separator: str = option(",", "labels file: the separator of the labels in a cell, e.g. ';' (JSON lists "
                                  "need none); labels that look split on the wrong one are refused")
    format: str = option("auto", "labels file format; 'auto' = from its suffix",
                         choices=("auto", "csv", "tsv", "jsonl"))
    header: bool = option(True, "labels file (CSV/TSV): the first row names the columns")
    negative_labels: list[str] = option([], "sub-folders or labels that mean 'no category' (e.g. [\"ham\"])")
    encoding: str = option("utf-8", "text encoding of the documents and the labels file")
    extensions: list[str] = option([], "read only files ending in these, e.g. [\".txt\"]; empty = every file but "
                                   "hidden ones")
    follow_links: bool = option(False, "read symbolic links that lead out of the folder (else refused)")
    check_labels: bool = option(True, "labels file: refuse labels that look mis-split or are not labels (most of "
                                "20 or more in one document only)")


def reading(s: FilesConfig):
    """The :class:`mlnb.data.folders.FolderReading` of the options."""
    from mlnb.data.folders import FolderReading

    return FolderReading(labels_path=s.labels_path, file_column=s.file_column, label_column=s.label_column,
                         label_separator=s.label_separator, format=s.format, header=s.header,
                         negative_labels=tuple(s.negative_labels), encoding=s.encoding,
                         extensions=tuple(s.extensions), follow_links=s.follow_links, check_labels=s.check_labels)


def _check(s: FilesConfig) -> None:
    from mlnb.errors import MlnbError

    if s.test_labels_path and not s.test_path:
        raise MlnbError("data.files.test_labels_path: given without data.files.test_path (the test folder)")
    if s.test_labels_path and not s.labels_path:
        raise MlnbError("data.files.test_labels_path: given without data.files.labels_path (the training labels file)")
    if s.labels_path and s.test_path and not s.test_labels_path:
        raise MlnbError("data.files.test_labels_path: required when data.files.labels_path and test_path are given "
                        "(the test folder's labels file)")


def load(s: FilesConfig, request: Request):
    from mlnb.data.folders import load_folder_dataset

    _check(s)
    return load_folder_dataset(s.path, s.test_path or None, reading(s), s.test_labels_path,
                               text_options=text_options_of(request), test_fraction=request.test_fraction,
                               seed=request.seed)


def open_streams(s: FilesConfig, request: Request):
    from mlnb.data.folders import folder_sources

    _check(s)
    return folder_sources(s.path, s.test_path or None, reading=reading(s), test_labels_path=s.test_labels_path,
                          text_options=text_options_of(request), seed=request.seed, test_fraction=request.test_fraction)


def open_whole(s: FilesConfig, request: Request):
    """With a test folder, the pair; without, all documents as one source, its vocabulary from all of them
    (as ``data.source = "text"`` converts one file)."""
    from mlnb.data.folders import folder_sources, whole_folder_source

    _check(s)
    if s.test_path:
        return folder_sources(s.path, s.test_path, reading=reading(s), test_labels_path=s.test_labels_path,
                              text_options=text_options_of(request))
    return whole_folder_source(s.path, reading(s), text_options_of(request)), None


def split(s: FilesConfig, request: Request) -> str:
    return (given_split_rule("test folder", s.test_path) if s.test_path else
            hash_split_rule(request.seed, request.test_fraction))


def labels(s: FilesConfig) -> str:
    """One sub-folder per category: one label a document (unless some sub-folders mean none); a labels file:
    what its rows say."""
    return "either" if s.labels_path or s.negative_labels else "single"


def detect(look):
    """``mlnb init``: a folder with a labels file (``labels.csv`` ..., or the one CSV/TSV/JSON-lines file whose name
    says 'label'), else with a ``train`` and a ``test`` folder of category sub-folders, else with sub-folders
    (one per category)."""
    from mlnb.data.detect import has_subfolders

    if not look.is_folder:
        return None
    labels_file = _labels_file(look.files)
    if labels_file is not None:
        return _files_with_labels(look.path, labels_file, look.hints)
    parts = {f.name.lower(): f for f in look.folders}
    train = parts.get("train") or parts.get("training")
    test = parts.get("test") or parts.get("testing")
    if train is not None and test is not None and len(look.folders) == 2 and has_subfolders(train):
        return _files_by_category(train, test)
    if look.folders:
        return _files_by_category(look.path)
    return None


def _files_by_category(path, test=None):
    from mlnb.data.detect import Detected, from_labels
    from mlnb.data.folders import FolderReading, list_folder, read_document

    reading = FolderReading()
    listings = [list_folder(path, reading)] + ([list_folder(test, reading, what="test_path")] if test else [])
    options = {"path": str(path)} | ({"test_path": str(test)} if test else {})
    found = Detected("files", options, "a folder of text files, one sub-folder per category (scikit-learn's "
                     "load_files layout)" + (", a train and a test folder" if test else ""))
    _sample_documents(listings, read_document)
    return from_labels(found, [labels for listing in listings for labels in listing.labels])


def _sample_documents(listings, read_document, n: int = 200) -> None:
    """Read the first ``n`` documents of each listing: a binary file is refused now, not after training."""
    for listing in listings:
        for file in listing.files[:n]:
            read_document(file, "utf-8")


def _labels_file(files):
    from mlnb.data.detect import LABELS_FILE_NAMES

    named = [f for f in files if f.name.lower() in LABELS_FILE_NAMES]
    if named:
        return named[0]
    candidates = [f for f in files if f.suffix.lower() in (".csv", ".tsv", ".jsonl") and "label" in f.name.lower()]
    return candidates[0] if len(candidates) == 1 else None


def _files_with_labels(folder, labels_file, hints):
    from mlnb.data.detect import Detected, from_labels, label_column, label_separator, read_table
    from mlnb.data.folders import FolderReading, list_folder, read_document
    from mlnb.errors import MlnbError

    fmt, header, rows, _ = read_table(labels_file)
    names = list(rows[0].keys()) if rows else []
    existing = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    file_column = next((c for c in names if sum(str(r.get(c, "")).strip() in existing for r in rows) > len(rows) / 2),
                       None)
    if file_column is not None and not header and str(rows[0][file_column]).strip() not in existing:
        fmt, header, rows, _ = read_table(labels_file, header=True)  # the first row names the columns, not a file
        names = list(rows[0].keys())
        file_column = names[int(file_column)]
    if file_column is None:
        raise MlnbError(f"{labels_file}: no column names files of {folder} (columns: {', '.join(names)}); expected "
                        "rows of a file name (relative to the folder) and its labels")
    others = [c for c in names if c != file_column]
    labels = hints.label_column or label_column(labels_file, others, rows)
    separator = hints.label_separator or label_separator(labels_file, [r.get(labels) for r in rows], force=True)
    options = {"path": str(folder), "labels_path": str(labels_file), "file_column": file_column,
               "label_column": labels, "label_separator": separator or ","}
    if fmt != "auto":
        options["format"] = fmt
    if not header:
        options["header"] = False
    reading = FolderReading(labels_path=str(labels_file), file_column=file_column, label_column=labels,
                            label_separator=separator or ",", format=fmt, header=header)
    listing = list_folder(folder, reading, str(labels_file))
    _sample_documents([listing], read_document)
    found = Detected("files", options, f"a folder of text files and the labels file {labels_file.name}")
    found.separator, found.label_column = separator, labels
    return from_labels(found, listing.labels)


SOURCE = SourceKind(name="files", options=FilesConfig, load=load, open_streams=open_streams, open_whole=open_whole,
                    split=split, required=("path",),
                    help="a folder of text files: one sub-folder per category, or files and a labels file",
                    files=lambda s: [p for p in (s.path, s.labels_path, s.test_path, s.test_labels_path) if p],
                    prunes_vocabulary=True, labels=labels, shape=hashed_shape, detect=detect, detect_order=30)
