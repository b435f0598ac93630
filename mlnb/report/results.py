"""Results folders of `mlnb run`, `sweep`, `curve` and `compare`.

Layout of ``<root>/<name>/<timestamp>/`` for a run::

    config.toml          the resolved config (loads again to the same study)
    summary.json         averages per model, comparisons, timings, data shape, seed, versions, git commit;
                         multilabel, each model's ranking metrics at k (``ranking``) and ``ranking_at_k``;
                         the frequency bands (``bands``), each model's macro averages per band (``by_band``)
                         and each band's contribution to P@j (``ranking_by_band``; ``mlnb.metrics.bands``)
    metrics.csv          one row per model × category
    comparison.csv       AUC difference test per compared pair × category (column test: delong or permutation)
    curves/roc_grid.csv  TPR and ROC lift on the FPR grid, per model × category with a test positive and negative
    curves/lift_grid.csv cumulative gains and lift by depth, per model × the same categories
    curves/calibration.csv reliability bins per model
    scores.npz           test labels and every model's test scores (``mlnb compare``)
    plots/*.png          per-category accuracy, ROC and lift of one category, calibration, AUC plots
    report.md            the summary and the plots, for reading
    report.html          the same as one self-contained page: plots embedded, opens offline

and ``<root>/index.html`` links every results folder under the root (both made by ``atomic_folder``,
for every command's folders).

Every folder is written atomically (``folder.atomic_folder``).
"""

from __future__ import annotations

import csv
import json
import re
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from mlnb import timings
from mlnb.config import config_dict, dump_toml, toml_value
from mlnb.errors import MlnbWarning
from mlnb.metrics.bands import LARGE_LABEL_SPACE, band_summary, frequency_bands, macro_by_band
from mlnb.report import drawing  # mlnb.report.plots (matplotlib) where a figure is drawn: not for a run without plots
from mlnb.report.folder import atomic_folder
from mlnb.report.band_tables import BAND_RULE
from mlnb.report.markdown import comparison_markdown, plain, study_markdown
from mlnb.report.provenance import json_safe, provenance, with_absolute_paths
from mlnb.report.tables import (confusion_frame, curve_frames, decisions_frame, every_score_evaluated, markdown_table,
                                metrics_frame)
from mlnb.scores import SCORES_FILE, save_scores
from mlnb.study import StudyResult


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet read a cell as a formula
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _neutralise(value):
    """A text cell a spreadsheet would run as a formula, prefixed with ``'`` (OWASP CSV injection);
    anything else unchanged: numbers, and text that is a plain number such as svmlight's '-1'."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Every CSV of a results folder goes through here: text cells and headers (category names come
    from the data) are neutralised; numeric columns are written as they are."""
    columns, text = [], [str(name) for name in frame.columns]
    for _, column in frame.items():
        if not (pd.api.types.is_numeric_dtype(column) or pd.api.types.is_datetime64_any_dtype(column)):
            # each distinct value once: a multiclass confusion table repeats K names K² times
            neutralised = {value: _neutralise(value) for value in pd.unique(column.astype(object))}
            column = column.astype(object).map(neutralised)
            text += [v for v in neutralised.values() if isinstance(v, str)]
        columns.append(column)
    if columns:
        frame = pd.concat(columns, axis=1).set_axis([_neutralise(name) for name in frame.columns], axis=1)
    # the csv module quotes a cell with "\n" but not one with a lone "\r", which a spreadsheet reads as a
    # line break: the rest of the cell would start a row, un-neutralised. Such files quote every text cell.
    quoting = csv.QUOTE_NONNUMERIC if any("\r" in v for v in text) else csv.QUOTE_MINIMAL
    frame.to_csv(path, index=False, quoting=quoting)


def _write_json(path: Path, summary: dict) -> None:
    path.write_text(json.dumps(json_safe(summary), indent=2), encoding="utf-8")


def _summary_json(result: StudyResult, command: str | None, quick: bool = False) -> dict:
    names = result.category_names
    bands = frequency_bands(result.train_positives)
    models = {}
    for run in result.models:
        untrainable = getattr(run.model, "untrainable_categories_", [])
        models[run.name] = {
            "kind": run.kind, "label": run.label, "fit_seconds": run.fit_seconds,
            "compile_seconds": run.compile_seconds,  # numba compiling during the fit: not in fit_seconds
            "random_state": result.config.models[run.name].training_seed(result.config.seed),
            "score_seconds": run.score_seconds, "eval_seconds": run.eval_seconds, **run.evaluation.summary,
            "excluded_categories": [names[k] for k in run.evaluation.excluded],
            "untrainable_categories": [names[k] for k in untrainable],
            "decision": None if run.decision is None else run.decision.rule,
            "calibration": None if run.calibration is None else run.calibration.method,
            "intervals": {metric: list(bounds) for metric, bounds in run.intervals.items()},
        }
        if result.ranking_ks:  # multilabel, eval.ranking_k > 0: the ranking metrics at k, their intervals
            models[run.name] |= {"ranking": run.ranking["metrics"], "ranking_intervals": run.ranking["intervals"]}
        models[run.name]["by_band"] = macro_by_band(run.evaluation.per_category, bands)  # ``mlnb.metrics.bands``
        if run.ranking.get("by_band"):  # each band's contribution to P@j: the bands add up to P@j
            models[run.name]["ranking_by_band"] = run.ranking["by_band"]
    baselines = result.models[0].evaluation.baselines if result.models else {}
    config = with_absolute_paths(result.config)  # as config.toml saves it: it re-runs from any folder
    return {"name": result.config.name, "seed": result.config.seed, "data_seed": result.config.data_seed(),
            "task": result.config.task, "data": result.data,
            "load_seconds": result.load_seconds, "models": models, "baselines": baselines,
            "timings": result.timings.table() if result.timings is not None else [],  # seconds per stage
            "confidence": result.config.eval.confidence,
            "comparisons": [comparison.summary() for comparison in result.comparisons],
            "bands": {"rule": BAND_RULE, "categories": band_summary(result.train_positives, bands)},
            **({"ranking_at_k": _ranking_settings(result)} if result.ranking_ks else {}),
            "quick": quick, "left_out": left_out(result.config),  # what a full run adds: ``QUICK``
            **provenance(command, config, result.data_fingerprint), "config": config_dict(config)}


def _ranking_settings(result: StudyResult) -> dict:
    """How the ranking metrics at k were measured, and the paired comparisons of the best model by P@1."""
    ev = result.config.eval
    return {"k": ev.ranking_k, "ks": list(result.ranking_ks),
            "propensities": {"A": ev.propensity_a, "B": ev.propensity_b} if result.ranking_propensity_scored
            else None, "bootstrap": ev.bootstrap, "confidence": ev.confidence,
            "comparisons": result.ranking_comparisons}


def comparison_frame(comparisons) -> pd.DataFrame:
    """Every compared pair's per-category table, stacked, with the pair's model names first."""
    frames = [c.table.assign(a=c.name_a, b=c.name_b)[["a", "b", *c.table.columns]] for c in comparisons]
    return pd.concat(frames, ignore_index=True)


def pair_file_stems(comparisons) -> list[str]:
    """One file-name stem per compared pair, distinct even on a case-insensitive file system.

    A pair's stem is ``<a>_vs_<b>``; model names may hold '_', so two pairs can share it (models
    'x_vs' and 'y' against 'x' and 'vs_y': both 'x_vs_vs_y'), or differ only in case. Stems that no
    other pair shares stay as they are; each shared one gets '-<pair number>' (1-based, in the
    order of the comparisons), and more where even that is taken, so that no pair's plot
    overwrites another's."""
    stems = [f"{c.name_a}_vs_{c.name_b}" for c in comparisons]
    folded = [s.casefold() for s in stems]
    taken = {s for s in folded if folded.count(s) == 1}
    unique = []
    for number, (stem, key) in enumerate(zip(stems, folded), start=1):
        if folded.count(key) == 1:
            unique.append(stem)
            continue
        candidate = f"{stem}-{number}"
        while candidate.casefold() in taken:
            candidate += f"-{number}"
        taken.add(candidate.casefold())
        unique.append(candidate)
    return unique


def _study_plots(result: StudyResult, folder: Path) -> list[Path]:
    """Every figure of a study into ``folder``, drawn here or side by side in worker processes
    (``mlnb.report.drawing``); the paths of those made. A study of one category gets its ROC, lift and
    calibration figures, not the four that plot one point per category."""
    from mlnb.report import plots

    k = result.config.report.category
    slim = drawing.for_drawing(result) if drawing.worker_processes(2) else result  # what is pickled to them
    figures = [(plots.accuracy_per_category, (slim, folder / "accuracy_per_category.png")),
               (plots.roc_for_category, (slim, k, folder / f"roc_category_{k}.png")),
               (plots.lift_for_category, (slim, k, folder / f"lift_category_{k}.png")),
               (plots.calibration, (slim, folder / "calibration.png")),
               (plots.auc_by_frequency, (slim, folder / "auc_by_frequency.png"))]
    if result.config.task == "multiclass":
        figures += [(plots.confusion_matrix, (run, result.category_names, folder / f"confusion_{run.name}.png"))
                    for run in slim.models]
    colors = plots.study_colors(result)
    for comparison, pair in zip(result.comparisons, pair_file_stems(result.comparisons)):
        figures += [(plots.auc_scatter, (slim, comparison, folder / f"auc_scatter_{pair}.png")),
                    (plots.auc_difference, (comparison, folder / f"auc_difference_{pair}.png",
                                            (colors[comparison.name_a], colors[comparison.name_b])))]
    if len(result.category_names) > LARGE_LABEL_SPACE and result.ranking_ks:  # where P@k comes from, by band
        figures.append((plots.precision_at_k_by_band, (slim, folder / "precision_at_k_by_band.png")))
    if not every_score_evaluated(result):  # no AUC, curve, expected accuracy or calibration to draw: P@k by band
        figures = [(plots.precision_at_k_by_band, (slim, folder / "precision_at_k_by_band.png"))] \
            if result.ranking_ks else []
    if len(result.category_names) == 1:  # a point (or bar) per category is one number of the tables: not drawn
        per_category = (plots.accuracy_per_category, plots.auc_by_frequency, plots.auc_scatter, plots.auc_difference)
        figures = [(function, arguments) for function, arguments in figures if function not in per_category]
    return [p for p in drawing.draw(figures) if p is not None]


#: what ``mlnb run --quick`` sets before the run's own --set: the parts of a run that cost time and are no table
QUICK = {"eval.bootstrap": 0, "report.plots": False}
#: what a run whose config holds QUICK's value of a key leaves out
_LEFT_OUT = {"eval.bootstrap": "no bootstrap confidence intervals of the summary metrics or of a compared pair's "
                               "macro AUC difference",
             "report.plots": "no figures (no plots/ folder)"}


def quick_settings() -> list[str]:
    """``QUICK`` as ``--set`` overrides."""
    return [f"{key}={toml_value(value)}" for key, value in QUICK.items()]


def _setting(config, key: str, default: bool = False):
    """The value of a dotted ``key`` ('eval.bootstrap') in ``config``, or its default."""
    section, name = key.split(".")
    options = getattr(config, section)
    return getattr(type(options)() if default else options, name)


def _quick_keys(config) -> list[str]:
    """The keys of ``QUICK`` that ``config`` holds at their quick value."""
    return [key for key, value in QUICK.items() if _setting(config, key) == value]


def left_out(config) -> dict[str, str]:
    """{'key = value': what is missing} for each part of a full run that ``config`` leaves out (``QUICK``)."""
    return {f"{key} = {toml_value(QUICK[key])}": _LEFT_OUT[key] for key in _quick_keys(config)}


def left_out_markdown(config, quick: bool) -> str:
    """The report's paragraph on what ``left_out`` names, why, and the command that adds it; '' if nothing."""
    missing = left_out(config)
    if not missing:
        return ""
    restore = " ".join(f"--set {key}={toml_value(_setting(config, key, default=True))}" for key in _quick_keys(config))
    why = "this is a quick run (`mlnb run --quick`)" if quick else "the config says so"
    return (f"Left out because {why}: " + "; ".join(f"{setting}, so {what}" for setting, what in missing.items())
            + f". Every table is written as in a full run; `mlnb run config.toml {restore}` adds what is missing.")


def write_results(result: StudyResult, root: str | Path = "results", command: str | None = None,
                  quick: bool = False) -> Path:
    """Write the results folder of ``result`` under ``root`` and return its path; ``quick``: the run's
    config was made by ``mlnb run --quick`` (``QUICK``), which the summary and the report say."""
    with atomic_folder(Path(root), result.config.name) as staging:
        folder = staging.path
        (folder / "config.toml").write_text(dump_toml(with_absolute_paths(result.config)), encoding="utf-8")
        # the scores (128 MB at RCV1 scale) are written on another thread while this one writes the tables and
        # draws the plots: the zip's checksum and the file writes let Python's lock go, the plots hold it
        with ThreadPoolExecutor(max_workers=1) as writer:
            scores_written = writer.submit(_save_study_scores, result, folder) if (
                result.config.report.save_scores and result.Y_test is not None) else None  # a stream keeps none
            plot_files = _write_tables_and_plots(result, folder)
        if scores_written is not None:
            scores_written.result()  # its error, if it had one
        _write_json(folder / "summary.json", _summary_json(result, command, quick))
        where_time_went = "" if result.timings is None else \
            "\n## Where the time went\n\n" + result.timings.markdown() + "\n"  # writing: until summary.json
        title, body = study_markdown(result, plot_files).split("\n\n", 1)
        left = left_out_markdown(result.config, quick)  # under the title: read before any number
        (folder / "report.md").write_text(f"{title}\n\n" + (f"{left}\n\n" if left else "") + body + where_time_went,
                                          encoding="utf-8")
    if result.config.tracking.mlflow_uri:  # the folder has its report.html and index.html (atomic_folder)
        track(staging.final, result.config.tracking)
    return staging.final


def _save_study_scores(result: StudyResult, folder: Path) -> None:
    save_scores(folder / SCORES_FILE, result.Y_test, {run.name: run.scores for run in result.models},
                {run.name: run.label for run in result.models}, result.category_names,
                result.train_positives, task=result.config.task,
                excluded=result.untrainable if result.config.eval.untrainable == "exclude" else ())


def _write_tables_and_plots(result: StudyResult, folder: Path) -> list[Path]:
    """metrics.csv, the curves, the comparison, confusion and decision tables, and the plots (their paths)."""
    _write_csv(metrics_frame(result), folder / "metrics.csv")
    if every_score_evaluated(result):  # else no curve and no calibration was computed (``not_computed``)
        (folder / "curves").mkdir()
        roc, lift = curve_frames(result)
        _write_csv(roc, folder / "curves" / "roc_grid.csv")
        _write_csv(lift, folder / "curves" / "lift_grid.csv")
        _write_csv(pd.concat([run.evaluation.calibration.assign(model=run.name) for run in result.models]),
                   folder / "curves" / "calibration.csv")
    if result.comparisons:
        _write_csv(comparison_frame(result.comparisons), folder / "comparison.csv")
    if result.config.task == "multiclass":
        _write_csv(confusion_frame(result), folder / "confusion.csv")
    decisions = decisions_frame(result)
    if decisions is not None:
        _write_csv(decisions, folder / "decisions.csv")
    plot_files = []
    if result.config.report.plots:
        (folder / "plots").mkdir()
        with timings.stage("plots"):
            plot_files = _study_plots(result, folder / "plots")
    return plot_files


#: the address of the MLflow run of each results folder that this process logged (``mlnb run`` prints it)
mlflow_runs: dict[Path, str] = {}


def track(folder: Path, tracking) -> str | None:
    """Log a written results folder to MLflow (``[tracking]``, ``mlnb.tracking``); the MLflow run id (its
    address in ``mlflow_runs``). A failure there is a warning: the results folder is complete without it."""
    from mlnb.tracking import log_run  # imports MLflow: only when a config asks for it

    try:
        run_id, mlflow_runs[folder] = log_run(folder, tracking.mlflow_uri, tracking.experiment)
        return run_id
    except Exception as error:  # noqa: BLE001  (MLflow's own errors, a store that cannot be written)
        warnings.warn(MlnbWarning(f"{folder}: written, but not logged to MLflow at {tracking.mlflow_uri} "
                                  f"({type(error).__name__}: {' '.join(str(error).split())[:300]})"))
        return None


def _write_study_folder(root, name: str, files: dict, summary: dict, report: str, plot_makers: list) -> Path:
    """A results folder with CSV tables, plots made by ``plot_makers`` (path -> Path | None), JSON, report."""
    with atomic_folder(Path(root), name) as staging:
        folder = staging.path
        for filename, frame in files.items():
            _write_csv(frame, folder / filename)
        (folder / "plots").mkdir()
        made = [p for p in (make(folder / "plots" / filename) for filename, make in plot_makers) if p is not None]
        _write_json(folder / "summary.json", {**summary, **provenance()})
        (folder / "report.md").write_text(report + "\n" + "\n".join(f"![{p.stem}](plots/{p.name})" for p in made)
                                          + "\n", encoding="utf-8")
    return staging.final


def _schedule_line(curve) -> str:
    if curve.config.curve.schedule == "as_config":
        return ("Minibatch models train with the config's batch size and passes at every size "
                "(curve.schedule = 'as_config'): small samples get few updates.")
    return ("Minibatch models keep the number of updates of their full-size fit at every size "
            "(curve.schedule = 'fixed_updates': batch ≤ a tenth of the sample, at least 10; passes raised to "
            f"match, at most {curve.config.curve.max_passes}; `curve.csv` has each size's batch_size and npasses), "
            "so that the curve measures the data, not the schedule.")


def write_curve(curve, root: str | Path = "results") -> Path:
    from mlnb.report import plots
    from mlnb.report.ranking_points import curve_ranking_markdown, curve_ranking_plot, ranking_settings

    means = curve.table.groupby(["model", "size"])[list(curve.metrics)].mean().reset_index()
    lines = [f"# mlnb learning curve: {curve.config.name}", "",
             f"Mean test metrics over {curve.table['seed'].nunique()} training samples per size. Models: "
             + "; ".join(f"{plain(name)} = {plain(label)}" for name, label in curve.labels.items()) + ".", "",
             markdown_table(means.set_index("model")), "", _schedule_line(curve), ""]
    for pair, found in curve.crossings.items():
        lines += [f"Where the mean curves of {plain(pair.replace('-vs-', ' and '))} cross:", ""]
        for metric, sizes in found.items():
            lines.append(f"- {metric}: " + (", ".join(f"~{s:,.0f} training documents" for s in sizes) if sizes
                                             else "they do not cross in this range"))
        lines.append("")
    lines += curve_ranking_markdown(curve)  # multilabel, eval.ranking_k > 0: P@j, nDCG@j, PSP@j per size
    ranking = list(getattr(curve, "ranking_metrics", ()))
    summary = {"name": curve.config.name, "labels": curve.labels, "crossings": curve.crossings,
               "seed": curve.config.seed, "config": config_dict(curve.config),
               **({"ranking_at_k": ranking_settings(curve.config, ranking)} if ranking else {})}
    return _write_study_folder(root, f"{curve.config.name}-curve", {"curve.csv": curve.table}, summary,
                               "\n".join(lines) + "\n",
                               [(f"curve_{m}.png", (lambda path, m=m: plots.learning_curve(curve, m, path)))
                                for m in curve.metrics]
                               + ([("curve_ranking.png", lambda path: curve_ranking_plot(curve, path))]
                                  if ranking else []))


def config_diff_markdown(comparison, diff) -> str:
    """The top of a comparison's report: the config keys where a's and b's runs (or models) differ."""
    if not diff:
        return ("Config: the two runs' configs (and the compared models' tables) are the same, or a run has no "
                "config.toml to compare.\n")
    table = pd.DataFrame([(key, toml_value(a) if a is not None else "(not set)",
                           toml_value(b) if b is not None else "(not set)") for key, a, b in diff],
                         columns=["key", comparison.name_a, comparison.name_b]).set_index("key")
    return "## What differs\n\n" + markdown_table(table) + "\n"


def write_comparison(comparison, root: str | Path = "results", sources: list[str] = (), diff=()) -> Path:
    """A results folder for `mlnb compare`: comparison.csv, summary.json, the plot, report.md (the config
    ``diff``, (key, value of a, value of b) rows, at its top)."""
    report = (f"# mlnb compare\n\nRuns: {', '.join(map(plain, sources))}\n\n" + config_diff_markdown(comparison, diff)
              + "\n" + comparison_markdown(comparison))
    from mlnb.report import plots

    colors = plots.pair_colors(comparison)
    return _write_study_folder(root, "compare", {"comparison.csv": comparison_frame([comparison])},
                               {**comparison.summary(), "runs": list(sources),
                                "config_diff": [{"key": key, "a": a, "b": b} for key, a, b in diff]}, report,
                               [("auc_difference.png", lambda path: plots.auc_difference(comparison, path, colors))])
