"""A study's results folder: config, metrics, curves, plots and a report.

Layout of ``<root>/<name>/<timestamp>/``::

    config.toml          the resolved config (loads again to the same study)
    summary.json         averages, timings, data shape, seed, versions, git commit
    metrics.csv          one row per model × category
    curves/roc_grid.csv  TPR and ROC lift on the FPR grid, per model × category
    curves/lift_grid.csv cumulative gains and lift by depth, per model × category
    plots/*.png          accuracy per category, ROC and lift of one category, AUC scatter
    report.md            the summary and the plots, for reading

The folder is written under a hidden temporary name and renamed into place
only when complete, so a failed run never leaves a folder that looks done.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from mlnb.config import config_dict, dump_toml
from mlnb.errors import MlnbError
from mlnb.report import plots
from mlnb.study import StudyResult
from mlnb.studies.compare import SCORES_FILE, save_scores

SUMMARY_COLUMNS = {"macro_auc": "macro AUC", "micro_auc": "micro AUC", "micro_f1": "micro F1",
                   "macro_f1": "macro F1", "mean_expected_accuracy": "mean exp. accuracy",
                   "mean_log_loss": "mean log loss"}


def summary_table(result: StudyResult) -> pd.DataFrame:
    """One row per model: the headline averages and the time each model took."""
    rows = []
    for run in result.models:
        row = {"model": run.label}
        row.update({title: run.evaluation.summary[key] for key, title in SUMMARY_COLUMNS.items()})
        row.update({"fit s": run.fit_seconds, "score s": run.score_seconds})
        rows.append(row)
    return pd.DataFrame(rows).set_index("model")


def format_summary(result: StudyResult) -> str:
    table = summary_table(result)
    text = table.to_string(float_format=lambda v: f"{v:.4f}")
    first = result.models[0].evaluation.summary
    if first["n_excluded"]:
        text += (f"\n{first['n_excluded']} of {first['n_categories']} categories have no positive or no "
                 "negative test document: AUC undefined, left out of the macro averages")
    return text


def _markdown_table(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join([frame.index.name or ""] + list(frame.columns)) + " |"
    rule = "|" + "---|" * (len(frame.columns) + 1)
    body = ["| " + " | ".join([str(i)] + [_cell(v) for v in row]) + " |"
            for i, row in zip(frame.index, frame.itertuples(index=False))]
    return "\n".join([header, rule, *body])


def _cell(value) -> str:
    if isinstance(value, (float, np.floating)):
        return "n/a" if np.isnan(value) else f"{value:.4f}"
    return str(value)


def _versions() -> dict:
    packages = ["mlnb", "numpy", "scipy", "scikit-learn", "pandas", "matplotlib", "typer"]
    found = {"python": platform.python_version()}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                                text=True, timeout=10)
        if commit.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return commit.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


class _Staging:
    """A hidden folder to write into, and the final name it got (set on success)."""

    def __init__(self, path: Path):
        self.path = path
        self.final: Path | None = None


def _claim(parent: Path, stamp: str) -> Path:
    """Create and return a new empty folder parent/stamp (or stamp-2, -3, ...)."""
    for n in range(1, 1000):
        final = parent / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            final.mkdir()
            return final
        except FileExistsError:
            continue
    raise MlnbError(f"{parent}: cannot find a free results folder name for {stamp}")


@contextmanager
def _atomic_folder(root: Path, name: str):
    """Yield a hidden staging folder; on success move it to a new timestamped one."""
    parent = root / name
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = _Staging(Path(tempfile.mkdtemp(prefix=".partial-", dir=parent)))
    except OSError as error:
        raise MlnbError(f"{parent}: cannot create the results folder ({error.strerror or error})") from None
    try:
        yield staging
        final = _claim(parent, time.strftime("%Y%m%d-%H%M%S"))
        staging.path.replace(final)  # onto the empty folder just claimed: atomic
        umask = os.umask(0)
        os.umask(umask)
        final.chmod(0o777 & ~umask)  # mkdtemp made it private; results are for everyone
        staging.final = final
    except BaseException as error:
        shutil.rmtree(staging.path, ignore_errors=True)
        if isinstance(error, OSError):
            raise MlnbError(f"{parent}: cannot write the results ({error.strerror or error})") from None
        raise


def _metrics_frame(result: StudyResult) -> pd.DataFrame:
    frames = []
    for run in result.models:
        table = run.evaluation.per_category.copy()
        table.insert(0, "model", run.key)
        table.insert(4, "train_pos", result.train_positives.astype(int))
        frames.append(table)
    return pd.concat(frames, ignore_index=True)


def _curve_frames(result: StudyResult) -> tuple[pd.DataFrame, pd.DataFrame]:
    roc, lift = [], []
    for run in result.models:
        ev = run.evaluation
        K, G = ev.roc_tpr.shape
        category = np.repeat(np.arange(K), G)
        x = np.tile(ev.grid, K)
        roc_lift = np.hstack([np.full((K, 1), np.nan), ev.roc_lift]).ravel()
        depth_lift = np.hstack([np.full((K, 1), np.nan), ev.depth_lift]).ravel()
        roc.append(pd.DataFrame({"model": run.key, "category": category, "fpr": x,
                                 "tpr": ev.roc_tpr.ravel(), "roc_lift": roc_lift}))
        lift.append(pd.DataFrame({"model": run.key, "category": category, "depth": x,
                                  "gains": ev.gains.ravel(), "lift": depth_lift}))
    return pd.concat(roc, ignore_index=True), pd.concat(lift, ignore_index=True)


def _summary_json(result: StudyResult, command: str | None) -> dict:
    names = result.category_names
    models = {}
    for run in result.models:
        untrainable = getattr(run.model, "untrainable_categories_", np.empty(0, dtype=int))
        models[run.key] = {
            "label": run.label, "fit_seconds": run.fit_seconds, "score_seconds": run.score_seconds,
            "eval_seconds": run.eval_seconds, **run.evaluation.summary,
            "excluded_categories": [names[k] for k in run.evaluation.excluded],
            "untrainable_categories": [names[k] for k in untrainable],
        }
    return {"name": result.config.name, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "seed": result.config.seed, "data": result.data, "load_seconds": result.load_seconds,
            "models": models, "comparison": result.comparison.summary() if result.comparison else None,
            "versions": _versions(), "git_commit": _git_commit(),
            "command": command or " ".join(sys.argv), "config": config_dict(result.config)}


def _largest_differences(result: StudyResult, n: int) -> pd.DataFrame:
    if len(result.models) < 2 or n == 0:
        return pd.DataFrame()
    a, b = result.models[0], result.models[1]
    table = pd.DataFrame({"category": np.arange(len(result.category_names)),
                          "name": result.category_names, "train pos": result.train_positives.astype(int),
                          f"AUC {a.key}": a.evaluation.per_category["auc"],
                          f"AUC {b.key}": b.evaluation.per_category["auc"]})
    table["difference"] = table[f"AUC {b.key}"] - table[f"AUC {a.key}"]
    table = table.dropna(subset=["difference"])
    order = table["difference"].abs().sort_values(ascending=False).index[:n]
    return table.loc[order].set_index("category")


def comparison_markdown(comparison, top: int = 10) -> str:
    """The paired comparison as a report section."""
    counts, sign = comparison.counts(), comparison.sign
    table = comparison.table.dropna(subset=["p_value"]).sort_values("p_value").head(top)
    shown = table[["category", "name", "train_pos", "auc_a", "auc_b", "difference", "p_value", "p_holm"]]
    return "\n".join([
        f"## Paired comparison: {comparison.label_a} (a) against {comparison.label_b} (b)", "",
        "DeLong's test of the AUC difference per category, p-values Holm-corrected over the "
        f"{len(comparison.table) - counts['not_testable']} testable categories; sign test over the raw "
        "differences (Yang & Liu 1999).", "",
        f"- a significantly higher: {counts['a_significantly_better']}; b significantly higher: "
        f"{counts['b_significantly_better']}; no significant difference: {counts['no_significant_difference']}; "
        f"not testable: {counts['not_testable']} (at {comparison.alpha:g} after Holm)",
        f"- sign test: a higher in {sign.wins}, b higher in {sign.losses}, ties {sign.ties}, "
        f"p = {sign.p_value:.3g}", "",
        "Most significant categories (`comparison.csv` has all):", "",
        _markdown_table(shown.set_index("category")), ""])


def _report_markdown(result: StudyResult, summary: dict, plot_files: list[Path]) -> str:
    data = result.data
    lines = [f"# mlnb study: {result.config.name}", "",
             f"Data: {data['name']}, {data['n_train']} training and {data['n_test']} test documents, "
             f"{data['n_features_used']} features ({data['feature_transform']}), "
             f"{data['n_categories']} categories, {data['mean_labels_per_document']:.2f} labels and "
             f"{data['mean_features_per_document']:.1f} distinct features per document. "
             f"Seed {result.config.seed}.", "",
             "## Summary", "",
             "Rank metrics (AUC) come from the models' log-odds; macro averages are over the "
             "categories with at least one positive and one negative test document.", "",
             _markdown_table(summary_table(result)), ""]
    for run in result.models:
        info = summary["models"][run.key]
        if info["excluded_categories"]:
            lines.append(f"- {run.label}: {len(info['excluded_categories'])} categories left out of the "
                         f"macro averages (no positive or no negative test document): "
                         f"{', '.join(info['excluded_categories'])}")
        if info["untrainable_categories"]:
            lines.append(f"- {run.label}: {len(info['untrainable_categories'])} categories had no "
                         f"positive (or no negative) training document and score by their prior only: "
                         f"{', '.join(info['untrainable_categories'])}")
    if result.comparison is not None:
        lines += ["", comparison_markdown(result.comparison, result.config.report.top_differences)]
    differences = _largest_differences(result, result.config.report.top_differences)
    if len(differences):
        lines += ["", "## Categories where the models differ most (AUC)", "",
                  _markdown_table(differences), ""]
    if plot_files:
        lines += ["", "## Plots", ""]
        lines += [f"![{p.stem}](plots/{p.name})" for p in plot_files]
    lines += ["", "## Files", "",
              "`metrics.csv` (model × category), `curves/roc_grid.csv`, `curves/lift_grid.csv`, "
              "`summary.json`, `config.toml` (rerun with `mlnb run config.toml`)."]
    return "\n".join(lines) + "\n"


def write_results(result: StudyResult, root: str | Path = "results", command: str | None = None) -> Path:
    """Write the results folder of ``result`` under ``root`` and return its path."""
    with _atomic_folder(Path(root), result.config.name) as staging:
        folder = staging.path
        (folder / "config.toml").write_text(dump_toml(result.config), encoding="utf-8")
        _metrics_frame(result).to_csv(folder / "metrics.csv", index=False)
        (folder / "curves").mkdir()
        roc, lift = _curve_frames(result)
        roc.to_csv(folder / "curves" / "roc_grid.csv", index=False)
        lift.to_csv(folder / "curves" / "lift_grid.csv", index=False)
        pd.concat([run.evaluation.calibration.assign(model=run.key) for run in result.models]).to_csv(
            folder / "curves" / "calibration.csv", index=False)
        if result.comparison is not None:
            result.comparison.table.to_csv(folder / "comparison.csv", index=False)
        if result.config.report.save_scores:
            save_scores(folder / SCORES_FILE, result.Y_test, {run.key: run.scores for run in result.models},
                        {run.key: run.label for run in result.models}, result.category_names,
                        result.train_positives)
        plot_files = []
        if result.config.report.plots:
            (folder / "plots").mkdir()
            k = result.config.report.category
            made = [plots.accuracy_per_category(result, folder / "plots" / "accuracy_per_category.png"),
                    plots.roc_for_category(result, k, folder / "plots" / f"roc_category_{k}.png"),
                    plots.lift_for_category(result, k, folder / "plots" / f"lift_category_{k}.png"),
                    plots.auc_scatter(result, folder / "plots" / "auc_scatter.png"),
                    plots.calibration(result, folder / "plots" / "calibration.png"),
                    plots.auc_by_frequency(result, folder / "plots" / "auc_by_frequency.png")]
            if result.comparison is not None:
                made.append(plots.auc_difference(result.comparison, folder / "plots" / "auc_difference.png"))
            plot_files = [p for p in made if p is not None]
        summary = _summary_json(result, command)
        (folder / "summary.json").write_text(json.dumps(_json_safe(summary), indent=2), encoding="utf-8")
        (folder / "report.md").write_text(_report_markdown(result, summary, plot_files), encoding="utf-8")
    return staging.final


def _json_safe(value):
    """NaN -> null (strict JSON), numpy scalars -> Python numbers."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def _write_study_folder(root, name: str, files: dict, summary: dict, report: str, plot_makers: list) -> Path:
    """A results folder with CSV tables, plots made by ``plot_makers`` (path -> Path | None), JSON, report."""
    with _atomic_folder(Path(root), name) as staging:
        folder = staging.path
        for filename, frame in files.items():
            frame.to_csv(folder / filename, index=False)
        (folder / "plots").mkdir()
        made = [p for p in (make(folder / "plots" / filename) for filename, make in plot_makers) if p is not None]
        summary = {**summary, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "versions": _versions(),
                   "git_commit": _git_commit(), "command": " ".join(["mlnb"] + sys.argv[1:])}
        (folder / "summary.json").write_text(json.dumps(_json_safe(summary), indent=2), encoding="utf-8")
        (folder / "report.md").write_text(report + "\n" + "\n".join(f"![{p.stem}](plots/{p.name})" for p in made)
                                          + "\n", encoding="utf-8")
    return staging.final


def write_sweep(sweep, root: str | Path = "results") -> Path:
    keys = list(sweep.grid)
    what = sweep.metric + (f" of category {sweep.category}" if sweep.category >= 0 else "")
    from mlnb.studies.sweep import LOWER_IS_BETTER

    table = sweep.table.sort_values(sweep.metric, ascending=sweep.metric in LOWER_IS_BETTER)
    report = "\n".join([
        f"# mlnb sweep: {sweep.config.name}", "",
        f"{sweep.model.upper()} over {', '.join(keys)}; validation {what} on {sweep.n_validation} documents "
        f"carved from the training part ({sweep.n_fit} fit the models); the test part is not used.", "",
        "**Best:** " + ", ".join(f"`{k} = {sweep.best[k]}`" for k in keys) + f": {what} {sweep.best[sweep.metric]:.4f}",
        "", _markdown_table(table.set_index(keys[0])), ""])
    summary = {"name": sweep.config.name, "model": sweep.model, "metric": sweep.metric, "category": sweep.category,
               "grid": sweep.grid, "best": sweep.best, "n_fit": sweep.n_fit, "n_validation": sweep.n_validation,
               "seed": sweep.config.seed, "config": config_dict(sweep.config)}
    return _write_study_folder(root, f"{sweep.config.name}-sweep", {"sweep.csv": sweep.table}, summary, report,
                               [("sweep.png", lambda path: plots.sweep_plot(sweep, path))])


def write_curve(curve, root: str | Path = "results") -> Path:
    from mlnb.studies.curve import CURVE_METRICS

    means = curve.table.groupby(["model", "size"])[list(CURVE_METRICS)].mean().reset_index()
    lines = [f"# mlnb learning curve: {curve.config.name}", "",
             f"Mean test metrics over {curve.table['seed'].nunique()} training samples per size.", "",
             _markdown_table(means.set_index("model")), "", "Where the mean curves of LR and NB cross:", ""]
    for metric, sizes in curve.crossings.items():
        lines.append(f"- {metric}: " + (", ".join(f"~{s:,.0f} training documents" for s in sizes) if sizes
                                         else "they do not cross in this range"))
    summary = {"name": curve.config.name, "crossings": curve.crossings, "seed": curve.config.seed,
               "config": config_dict(curve.config)}
    return _write_study_folder(root, f"{curve.config.name}-curve", {"curve.csv": curve.table}, summary,
                               "\n".join(lines) + "\n",
                               [(f"curve_{m}.png", (lambda path, m=m: plots.learning_curve(curve, m, path)))
                                for m in CURVE_METRICS])


def write_comparison(comparison, root: str | Path = "results", sources: list[str] = ()) -> Path:
    """A results folder for `mlnb compare`: comparison.csv, summary.json, the plot, report.md."""
    report = f"# mlnb compare\n\nRuns: {', '.join(sources)}\n\n" + comparison_markdown(comparison)
    return _write_study_folder(root, "compare", {"comparison.csv": comparison.table},
                               {**comparison.summary(), "runs": list(sources)}, report,
                               [("auc_difference.png", lambda path: plots.auc_difference(comparison, path))])
