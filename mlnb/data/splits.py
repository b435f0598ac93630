"""The report's sentence for each rule that decides which documents are test documents.

A Dataset records its rule (``Dataset.split_rule``, ``describe()["split"]``) and a streamed
study states the same sentence (``mlnb.data.sources.describe_split``): both build it here, so
that a run in memory and a streamed run of one config say the same thing.
"""

from __future__ import annotations

from mlnb.data.files import is_pattern


def hash_split_rule(seed: int, test_fraction: float) -> str:
    """The hash split (``mlnb.data.dataset.hash_split``): every source without a given test part."""
    return f"a seeded hash of each document's id (seed {seed}, test_fraction {test_fraction})"


def given_split_rule(what: str, path) -> str:
    """A given test part: ``what`` ('test file', 'test shards') and its path; a glob pattern names
    its files in the plural."""
    plural = "s" if is_pattern(path) and not what.endswith("s") else ""
    return f"the given {what}{plural} {path}"


def random_split_rule(train_size: int, test_size: int, test_fraction: float, seed: int) -> str:
    """A seeded random permutation of given sizes (``Dataset.split_by_counts``: RCV1's split = 'random')."""
    test = f"{test_size} test documents" if test_size else f"test_fraction {test_fraction} of all documents for testing"
    train = f"{train_size} training documents" if train_size else "the rest for training"
    return f"a seeded random permutation (seed {seed}): {test}, {train}"


def sample_rule(n_documents: int, seed: int) -> str:
    """What ``Dataset.subsample_train`` (data.max_train_documents) adds to the split's sentence."""
    return (f"; training on at most {n_documents} of the training documents, those with the smallest seeded hash "
            f"of their id (seed {seed})")
