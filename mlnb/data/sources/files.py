"""``data.source = "files"``: a folder of text files, one document per file, in scikit-learn's ``load_files``
layout (one sub-folder per category) or with a labels file for multilabel documents (:mod:`mlnb.data.folders`),
in memory or streamed: the same listing, documents, ids, split and vocabulary."""

from __future__ import annotations

from dataclasses import dataclass

from mlnb.data.registry import Request, SourceKind
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
                               text_options=request.text_options(), test_fraction=request.test_fraction,
                               seed=request.seed)


def open_streams(s: FilesConfig, request: Request):
    from mlnb.data.folders import folder_sources

    _check(s)
    return folder_sources(s.path, s.test_path or None, reading=reading(s), test_labels_path=s.test_labels_path,
                          text_options=request.text_options(), seed=request.seed, test_fraction=request.test_fraction)


def open_whole(s: FilesConfig, request: Request):
    """With a test folder, the pair; without, all documents as one source, its vocabulary from all of them
    (as ``data.source = "text"`` converts one file)."""
    from mlnb.data.folders import folder_sources, whole_folder_source

    _check(s)
    if s.test_path:
        return folder_sources(s.path, s.test_path, reading=reading(s), test_labels_path=s.test_labels_path,
                              text_options=request.text_options())
    return whole_folder_source(s.path, reading(s), request.text_options()), None


def split(s: FilesConfig, request: Request) -> str:
    return (given_split_rule("test folder", s.test_path) if s.test_path else
            hash_split_rule(request.seed, request.test_fraction))


SOURCE = SourceKind(name="files", options=FilesConfig, load=load, open_streams=open_streams, open_whole=open_whole,
                    split=split, required=("path",),
                    help="a folder of text files: one sub-folder per category, or files and a labels file",
                    files=lambda s: [p for p in (s.path, s.labels_path, s.test_path, s.test_labels_path) if p],
                    prunes_vocabulary=True)
