"""Study configuration: defaults in one place, TOML files override them.

Every option is a dataclass field with its default and a one-line ``help``.
``load_config`` reads a TOML file (``tomllib``), applies ``--set key=value``
overrides, and validates everything against these dataclasses: an unknown
key is rejected with the nearest valid key suggested, and a wrong type or
value names the key, the file and what is allowed. The resolved config is
written back with every run (``dump_toml``) and loads again unchanged.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import re
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

from mlnb.errors import MlnbError

_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")


def option(default, help: str, choices: tuple | None = None, min: float | None = None,
           max: float | None = None, exclusive_min: bool = False, exclusive_max: bool = False):
    """A config field: its default, what it means, and what values are allowed
    (for a list, the bounds apply to each element)."""
    metadata = dict(help=help, choices=choices, min=min, max=max, exclusive_min=exclusive_min,
                    exclusive_max=exclusive_max)
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def section(cls):
    return field(default_factory=cls)


@dataclass
class SyntheticConfig:
    n_documents: int = option(20_000, "documents generated, train and test together (RCV1: 804414)", min=2)
    n_features: int = option(10_000, "vocabulary size (RCV1: 47236)", min=2)
    n_categories: int = option(103, "categories, 4 roots plus a two-level hierarchy (RCV1: 103)", min=1)
    words_per_document: float = option(77.0, "mean distinct words per document (RCV1: ~77)", min=1)
    extra_topics: float = option(0.75, "mean topic picks beyond the first; sets labels per document", min=0)
    topical_fraction: float = option(0.25, "share of tokens drawn from the document's topics", min=0, max=1)
    topic_words: int = option(200, "words in each topic's own vocabulary", min=1)
    zipf_exponent: float = option(1.0, "exponent of the background word-frequency law", min=0,
                                  exclusive_min=True)


@dataclass
class SvmlightConfig:
    path: str = option("", "LIBSVM multilabel file (plain, .gz or .bz2); relative to the working directory")
    test_path: str = option("", "optional separate test file; empty = seeded random split of `path`")
    n_features: int = option(0, "number of features; 0 = the largest index seen", min=0)
    index_base: int = option(1, "index of the first feature: 1 (LIBSVM) or 0", choices=(0, 1))
    n_categories: int = option(0, "number of categories; 0 = largest label id + 1", min=0)
    category_names_path: str = option("", "optional file with one category name per line, in id order")


SPLITS = ("lyrl2004", "swapped", "random")


@dataclass
class _SplitOptions:
    split: str = option("lyrl2004", "'lyrl2004': the 23,149 LYRL2004 training documents train, the rest "
                        "test; 'swapped': the reverse; 'random': a seeded split of all", choices=SPLITS)
    train_size: int = option(0, "random split: training documents; 0 = all not in the test part", min=0)
    test_size: int = option(0, "random split: test documents; 0 = data.test_fraction of all", min=0)


@dataclass
class Rcv1Config(_SplitOptions):
    data_home: str = option("", "scikit-learn's data cache folder; empty = its default (~/scikit_learn_data)")
    download_if_missing: bool = option(False, "let scikit-learn download RCV1 (~650 MB) when not cached")


@dataclass
class Lyrl2004Config(_SplitOptions):
    folder: str = option("", "folder with lyrl2004_vectors_train.dat, lyrl2004_vectors_test_pt0..3.dat "
                         "(optionally .gz) and rcv1-v2.topics.qrels")


@dataclass
class Reuters21578Config:
    folder: str = option("", "folder with reut2-000.sgm ... reut2-021.sgm")
    min_train_per_topic: int = option(1, "keep topics with at least this many ModApte training documents "
                                      "(1 and 1: the standard 90 topics)", min=0)
    min_test_per_topic: int = option(1, "... and at least this many test documents", min=0)


@dataclass
class ArffConfig:
    train_path: str = option("", "Mulan training ARFF file")
    test_path: str = option("", "Mulan test ARFF file")
    xml_path: str = option("", "Mulan XML file naming the label attributes")


@dataclass
class TextConfig:
    path: str = option("", "CSV, TSV or JSON-lines file with one document per row")
    test_path: str = option("", "optional separate test file; empty = seeded random split of `path`")
    format: str = option("auto", "file format; 'auto' = from the file suffix",
                         choices=("auto", "csv", "tsv", "jsonl"))
    header: bool = option(True, "CSV/TSV: the first row names the columns (else columns are '0', '1', ...)")
    text_column: str = option("text", "column (or JSON key) holding the text")
    label_column: str = option("label", "column (or JSON key) holding the label(s)")
    labels: str = option("single", "'single': one label per row; 'multi': a list of labels per row",
                         choices=("single", "multi"))
    label_separator: str = option(",", "multi: separator of the labels in a CSV/TSV cell")
    negative_labels: list[str] = option([], "labels that mean 'no category' (e.g. [\"ham\"] for spam)")
    encoding: str = option("utf-8", "text encoding of the file")


@dataclass
class DataConfig:
    source: str = option("synthetic", "where documents come from",
                         choices=("synthetic", "svmlight", "rcv1", "lyrl2004", "reuters21578", "arff", "text"))
    test_fraction: float = option(0.5, "share of documents held out for testing (random split)",
                                  min=0, max=1, exclusive_min=True, exclusive_max=True)
    max_train_documents: int = option(0, "train on a seeded sample of this many documents; 0 = all", min=0)
    synthetic: SyntheticConfig = section(SyntheticConfig)
    svmlight: SvmlightConfig = section(SvmlightConfig)
    rcv1: Rcv1Config = section(Rcv1Config)
    lyrl2004: Lyrl2004Config = section(Lyrl2004Config)
    reuters21578: Reuters21578Config = section(Reuters21578Config)
    arff: ArffConfig = section(ArffConfig)
    text: TextConfig = section(TextConfig)


@dataclass
class FeaturesConfig:
    transform: str = option("none", "feature values given to both models",
                            choices=("none", "binary", "log_tfidf"))
    min_df: int = option(0, "keep only words in at least this many training documents; 0 = keep all",
                         min=0)
    max_features: int = option(0, "keep at most this many words, by training document frequency; 0 = all",
                               min=0)
    vectorizer: str = option("count", "text sources: CountVectorizer vocabulary or HashingVectorizer",
                             choices=("count", "hashing"))
    lowercase: bool = option(True, "text sources: lowercase before tokenising")
    stop_words: str = option("none", "text sources: drop scikit-learn's English stop words",
                             choices=("none", "english"))
    hash_features: int = option(2**18, "text sources: number of hashed features (vectorizer = 'hashing')",
                                min=1)


@dataclass
class NaiveBayesConfig:
    enabled: bool = option(True, "fit and evaluate Naive Bayes")
    event_model: str = option("multinomial", "word counts or word presence",
                              choices=("multinomial", "bernoulli"))
    smoothing: str = option("additive", "additive alpha per word, or m-estimate m/|V| per word",
                            choices=("additive", "m_estimate"))
    alpha: float = option(0.5, "additive pseudo-count per word", min=0, exclusive_min=True)
    m: float = option(1.0, "m-estimate total pseudo-count", min=0, exclusive_min=True)
    binarize: bool = option(False, "count word presence instead of counts (the RCV1 tutorial does)")
    mode: str = option("exact", "exact complement counts and priors, or the RCV1 tutorial's approximations",
                       choices=("exact", "tutorial"))


@dataclass
class SklearnSGDConfig:
    learning_rate: str = option("optimal", "scikit-learn's step-size schedule",
                                choices=("optimal", "constant", "invscaling", "adaptive"))
    eta0: float = option(0.01, "initial step size (not used by 'optimal')", min=0)
    alpha: float = option(1e-4, "regularisation strength (scikit-learn's default)", min=0)
    penalty: str = option("l2", "regulariser", choices=("l2", "l1", "elasticnet"))
    l1_ratio: float = option(0.15, "elastic-net mixing, 0 = l2 .. 1 = l1", min=0, max=1)
    average: bool = option(False, "averaged SGD")
    n_jobs: int = option(1, "categories fitted in parallel (processes)", min=1)


@dataclass
class LogisticConfig:
    enabled: bool = option(True, "fit and evaluate logistic regression")
    engine: str = option("mlnb", "'mlnb': all categories at once by minibatch AdaGrad/SGD; "
                         "'sklearn': SGDClassifier one category at a time (the reference)",
                         choices=("mlnb", "sklearn"))
    npasses: int = option(2, "passes over the training data (both engines)", min=1)
    updater: str = option("adagrad", "mlnb engine: update rule", choices=("adagrad", "sgd"))
    lrate: float = option(0.3, "mlnb engine: learning rate", min=0, exclusive_min=True)
    lrate_per_category: list[float] = option([], "mlnb engine: one learning rate per category (overrides lrate)",
                                      min=0, exclusive_min=True)
    batch_size: int = option(1000, "mlnb engine: documents per minibatch", min=1)
    l1: float = option(0.0, "mlnb engine: L1 regularisation", min=0)
    l2: float = option(1e-4, "mlnb engine: L2 regularisation (as scikit-learn's SGD alpha default)", min=0)
    texp: float = option(0.5, "mlnb engine: step scale t^(-texp) over minibatches t", min=0)
    vexp: float = option(0.5, "mlnb engine: AdaGrad divides by (mean squared gradient)^vexp", min=0)
    epsilon: float = option(1e-8, "mlnb engine: added to the AdaGrad denominator", min=0)
    shuffle: bool = option(True, "mlnb engine: new random document order every pass")
    init: str = option("zeros", "mlnb engine: start from zeros or from this run's Naive Bayes weights",
                       choices=("zeros", "nb"))
    kernel: str = option("numba", "mlnb engine: minibatch kernel, two-core numba or scipy reference",
                         choices=("numba", "scipy"))
    monitor: bool = option(False, "mlnb engine: report the test-set log loss after every pass "
                           "(display only, never used to choose anything)")
    sklearn: SklearnSGDConfig = section(SklearnSGDConfig)


@dataclass
class EvalConfig:
    threshold: float = option(0.5, "probability cut for accuracy, precision, recall, F1",
                              min=0, max=1, exclusive_min=True, exclusive_max=True)
    roc_points: int = option(101, "points of the FPR grid (x from 0 to 1) for ROC and lift", min=2)


@dataclass
class ReportConfig:
    category: int = option(6, "category shown in the ROC and lift plots (index)", min=0)
    category_name: str = option("", "the same by name (e.g. 'earn'); overrides category when given")
    plots: bool = option(True, "draw the PNG plots")
    top_differences: int = option(10, "categories listed where the models differ most", min=0)
    compare: bool = option(True, "DeLong test per category between the two models (Holm, sign test)")
    alpha: float = option(0.05, "significance level of the comparison (after Holm)", min=0, max=1,
                          exclusive_min=True, exclusive_max=True)
    save_scores: bool = option(True, "save test scores (scores.npz) so that `mlnb compare` can pair runs")


PER_CATEGORY_METRICS = ("auc", "expected_accuracy", "accuracy", "f1", "log_loss", "brier")
SUMMARY_METRICS = ("macro_auc", "micro_auc", "macro_f1", "micro_f1", "mean_expected_accuracy",
                   "mean_accuracy", "mean_log_loss", "mean_brier")


@dataclass
class SweepConfig:
    params: list[str] = option([], "grid: 'key=v1,v2,...' per swept nb.* or lr.* key, e.g. 'lr.lrate=0.1,0.3,1'")
    metric: str = option("macro_auc", "what picks the best setting: a summary metric, or with category >= 0 a "
                         "per-category one", choices=SUMMARY_METRICS + PER_CATEGORY_METRICS)
    category: int = option(-1, "category whose metric decides; -1 = the summary metric over all", min=-1)
    model: str = option("auto", "model whose metric decides; auto = the section of the swept keys",
                        choices=("auto", "nb", "lr"))
    validation_fraction: float = option(0.2, "share of the training part held out to score settings "
                                        "(the test part is never used)", min=0, max=1, exclusive_min=True,
                                        exclusive_max=True)
    random_samples: int = option(0, "try this many seeded random settings of the grid; 0 = all", min=0)


@dataclass
class CurveConfig:
    sizes: list[int] = option([], "training sizes; empty = 8 log-spaced sizes from 100 to all training documents",
                              min=1)
    seeds: int = option(3, "training samples (seeds) per size", min=1)


@dataclass
class StudyConfig:
    name: str = option("", "name of the study; empty = the config file's name")
    seed: int = option(0, "seed of data generation, split, subsampling and SGD", min=0, max=2**32 - 1)
    data: DataConfig = section(DataConfig)
    features: FeaturesConfig = section(FeaturesConfig)
    nb: NaiveBayesConfig = section(NaiveBayesConfig)
    lr: LogisticConfig = section(LogisticConfig)
    eval: EvalConfig = section(EvalConfig)
    report: ReportConfig = section(ReportConfig)
    sweep: SweepConfig = section(SweepConfig)
    curve: CurveConfig = section(CurveConfig)


# -- loading and validation -------------------------------------------------------------------
_TYPE_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _check_value(value: Any, kind: type, meta: dict, where: str) -> Any:
    """The value converted to ``kind``, or an MlnbError that names ``where``."""
    if typing.get_origin(kind) is list:
        (item_kind,) = typing.get_args(kind)
        if not isinstance(value, list):
            raise MlnbError(f"{where}: expected a list of {_TYPE_NAMES[item_kind].split(' ', 1)[-1]}s, "
                            f"got {value!r}")
        return [_check_value(item, item_kind, meta, f"{where}[{i}]") for i, item in enumerate(value)]
    ok = (isinstance(value, bool) if kind is bool else
          isinstance(value, int) and not isinstance(value, bool) if kind is int else
          isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float else
          isinstance(value, str))
    if not ok:
        raise MlnbError(f"{where}: expected {_TYPE_NAMES[kind]}, got {value!r}")
    if kind is float:
        value = float(value)
        if not math.isfinite(value):
            raise MlnbError(f"{where}: expected a finite number, got {value!r}")
    if meta.get("choices") is not None and value not in meta["choices"]:
        allowed = ", ".join(repr(c) for c in meta["choices"])
        raise MlnbError(f"{where}: expected one of {allowed}, got {value!r}")
    low, high = meta.get("min"), meta.get("max")
    if low is not None and (value <= low if meta.get("exclusive_min") else value < low):
        raise MlnbError(f"{where}: expected a value {'>' if meta.get('exclusive_min') else '>='} "
                        f"{low}, got {value!r}")
    if high is not None and (value >= high if meta.get("exclusive_max") else value > high):
        raise MlnbError(f"{where}: expected a value {'<' if meta.get('exclusive_max') else '<='} "
                        f"{high}, got {value!r}")
    return value


def _build(cls, table: dict, prefix: str, source: str, overridden: set, set_label: str = "--set"):
    """An instance of dataclass ``cls`` from a TOML table, validated key by key."""
    hints = get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        from_set = any(o == dotted or o.startswith(dotted + ".") for o in overridden)
        origin = set_label if from_set else source
        if key not in fields:
            close = difflib.get_close_matches(key, fields, n=1)
            hint = f"; did you mean '{prefix}{close[0]}'?" if close else f"; valid keys: {', '.join(fields)}"
            raise MlnbError(f"{origin}: unknown key '{dotted}'{hint}")
        kind = hints[key]
        if dataclasses.is_dataclass(kind):
            if not isinstance(value, dict):
                raise MlnbError(f"{origin}: '{dotted}' must be a table ([{dotted}]), got {value!r}")
            values[key] = _build(kind, value, f"{dotted}.", source, overridden, set_label)
        else:
            values[key] = _check_value(value, kind, fields[key].metadata, f"{origin}: {dotted}")
    return cls(**values)


def parse_override(text: str) -> tuple[list[str], Any]:
    """'nb.alpha=0.1' -> (['nb', 'alpha'], 0.1); the value is read as TOML, else as a string."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise MlnbError(f"--set {text!r}: expected key=value, e.g. nb.alpha=0.1")
    try:
        value = tomllib.loads(f"value = {raw.strip()}")["value"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return key.split("."), value


def _apply_overrides(table: dict, overrides: list[str], origin: str) -> set[str]:
    """Write 'a.b=value' overrides into a nested table; return the dotted keys written."""
    overridden = set()
    for text in overrides:
        keys, value = parse_override(text)
        node = table
        for part in keys[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise MlnbError(f"{origin} {text!r}: '{part}' is not a section")
        node[keys[-1]] = value
        overridden.add(".".join(keys))
    return overridden


def load_config(path: str | Path | None, overrides: list[str] = ()) -> StudyConfig:
    """The validated study config: defaults < TOML file < ``--set`` overrides."""
    table: dict = {}
    source = "defaults"
    if path is not None:
        path = Path(path)
        source = str(path)
        if not path.is_file():
            raise MlnbError(f"{path}: no such config file")
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as error:
            raise MlnbError(f"{path}: not valid TOML ({error})") from None
        except UnicodeDecodeError:
            raise MlnbError(f"{path}: not a UTF-8 text file") from None
    overridden = _apply_overrides(table, overrides, "--set")
    config = _build(StudyConfig, table, "", source, overridden)
    if not config.name:
        config.name = path.stem if path is not None else "study"
    if not _NAME.fullmatch(config.name):
        origin = "--set" if "name" in overridden else source
        raise MlnbError(f"{origin}: name: expected letters, digits, '.', '_' or '-' (not starting with "
                        f"'.'), as it names the results folder; got {config.name!r}")
    return config


# -- writing ---------------------------------------------------------------------------------
def toml_value(value: Any) -> str:
    """A value as TOML text (the inverse of reading it back)."""
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value)  # a JSON string is a valid TOML basic string, control characters escaped


def dump_toml(config, prefix: str = "") -> str:
    """The config as TOML, every key written (with its help as a comment)."""
    scalars, tables = [], []
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if dataclasses.is_dataclass(value):
            tables.append(f"\n[{prefix}{f.name}]\n" + dump_toml(value, f"{prefix}{f.name}."))
        else:
            scalars.append(f"{f.name} = {toml_value(value)}  # {f.metadata['help']}")
    return "\n".join(scalars) + "\n" + "".join(tables)


def config_dict(config) -> dict:
    return dataclasses.asdict(config)


def with_overrides(config: StudyConfig, overrides: list[str], origin: str = "--set") -> StudyConfig:
    """A copy of ``config`` with 'key=value' overrides, validated like a file."""
    table = config_dict(config)
    return _build(StudyConfig, table, "", origin, _apply_overrides(table, overrides, origin), origin)
