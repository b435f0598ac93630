"""The results folder of ``mlnb bench``: per-corpus folders, the across-corpora tables, the CD diagram.

Layout of ``<root>/<name>-bench/<timestamp>/``::

    config.toml           the bench config as resolved
    corpora.csv           one row per corpus: its size, each model's metric and rank
    ranks.csv             one row per model: average rank, mean metric, wins
    pairs.csv             one row per pair of models: rank difference against Nemenyi's CD, Wilcoxon, Holm
    crossovers.csv        bench.curves: one row per corpus × compared pair, where the curves cross
    summary.json          the Friedman test, the CD, the tables, provenance
    plots/critical_difference.png, plots/<metric>_by_corpus.png, plots/curves_<metric>.png
    report.md             all of it, for reading
    corpora/<corpus>/     each corpus's `mlnb run` folder
    curves/<corpus>/      bench.curves: each corpus's `mlnb curve` folder

The critical-difference diagram follows Demšar (2006, Fig. 1–2): the models on an axis of average
rank (1 = best, on the left), the length of Nemenyi's CD drawn above it, and a thick bar joining
every maximal group of models whose average ranks lie within one CD of each other.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from mlnb.config import config_dict, dump_toml
from mlnb.metrics.across_corpora import MIN_CORPORA
from mlnb.report.escape import plain
from mlnb.report.folder import atomic_folder
from mlnb.report.plots import _figure, _log_scale, _save
from mlnb.report.provenance import provenance
from mlnb.report.results import _write_csv, _write_json, write_curve, write_results
from mlnb.report.style import model_colors
from mlnb.report.tables import markdown_table
from mlnb.studies.bench import BenchResult, run_bench

__all__ = ["cd_cliques", "cd_title", "critical_difference_diagram", "ranks_frame", "write_bench"]


def cd_cliques(average_ranks: np.ndarray, cd: float) -> list[tuple[int, int]]:
    """Maximal runs [i, j] (indices into the models sorted by average rank) whose ranks span < CD:
    the groups the Nemenyi test cannot tell apart (runs of one model are left out)."""
    R = np.sort(np.asarray(average_ranks, dtype=float))
    runs = []
    for i in range(R.size):
        j = i
        while j + 1 < R.size and R[j + 1] - R[i] < cd:
            j += 1
        if j > i and not any(a <= i and j <= b for a, b in runs):
            runs.append((i, j))
    return runs


def critical_difference_diagram(names: list[str], labels: dict, average_ranks: np.ndarray, cd: float | None,
                                path: Path, title: str) -> Path:
    """Demšar's CD diagram: rank axis on top, best left; models joined by a bar when within one CD
    (cd None: the average ranks alone, Nemenyi's test not made)."""
    k = len(names)
    order = np.argsort(average_ranks, kind="stable")
    R = np.asarray(average_ranks, dtype=float)[order]
    left = (k + 1) // 2  # the better half is labelled on the left, the rest on the right
    rows = max(left, k - left)
    fig, ax = _figure(figsize=(8.5, 2.3 + 0.42 * rows))
    low, high = 1, max(k, int(np.ceil(R.max())))
    ax.set_xlim(low - 1.4, high + 1.4)
    ax.set_ylim(-(rows + 0.6), 1.9)
    ax.axis("off")
    ax.plot([low, high], [0, 0], color="black", lw=1.2)
    for tick in range(low, high + 1):
        ax.plot([tick, tick], [0, 0.18], color="black", lw=1)
        ax.text(tick, 0.3, str(tick), ha="center", va="bottom", fontsize=10)
    for half in np.arange(low, high, 0.5)[1::2]:
        ax.plot([half, half], [0, 0.09], color="black", lw=0.8)
    if cd is not None:  # the critical difference, drawn from rank 1
        ax.plot([low, low + cd], [1.25, 1.25], color="black", lw=1.6)
        for end in (low, low + cd):
            ax.plot([end, end], [1.13, 1.37], color="black", lw=1.2)
        ax.text(low + cd / 2, 1.45, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=9)
    colors = model_colors(names)
    # tied models: their lines drawn a little apart so that each stays visible (the labels give the exact rank)
    nudge = np.zeros(k)
    for value in np.unique(R):
        tied = np.flatnonzero(R == value)
        nudge[tied] = (np.arange(tied.size) - (tied.size - 1) / 2) * 0.04
    for position, (index, rank) in enumerate(zip(order, R)):
        name = names[index]
        on_left = position < left
        row = position if on_left else k - 1 - position
        y = -(row + 1.0)
        x_text = low - 0.55 if on_left else high + 0.55
        x = rank + nudge[position]
        ax.plot([x, x, x_text], [0, y, y], color=colors[name], lw=1.1)
        ax.plot(x, 0, "o", color=colors[name], ms=4)
        label = f"{name} ({rank:.2f})" if on_left else f"({rank:.2f}) {name}"
        ax.text(x_text + (-0.05 if on_left else 0.05), y, label, ha="right" if on_left else "left",
                va="center", fontsize=9, color="black")
    for level, (i, j) in enumerate(cd_cliques(R, cd) if cd is not None else []):
        y = -0.3 - 0.22 * level
        ax.plot([R[i] - 0.04, R[j] + 0.04], [y, y], color="black", lw=4, solid_capstyle="round", alpha=0.75)
    legend = "; ".join(f"{name} = {labels[name]}" for name in names if labels.get(name, name) != name)
    fig.suptitle(title, fontsize=10)
    fig.text(0.5, 0.02, legend, ha="center", va="bottom", fontsize=7, wrap=True)
    fig.subplots_adjust(left=0.02, right=0.98, top=0.86, bottom=0.14)
    fig.savefig(path, dpi=130)
    return path


def cd_title(bench: BenchResult, alpha: float) -> str:
    """The CD diagram's title: the tests it shows, and those undefined for this bench named as such."""
    f = bench.friedman
    iman = "Iman-Davenport F_F undefined" if f.undefined else f"Friedman F_F p = {f.f_p_value:.3g}"
    nemenyi = f"Nemenyi CD at α = {alpha:g}" if f.n_corpora >= MIN_CORPORA else \
        f"no Nemenyi CD (fewer than {MIN_CORPORA} corpora)"
    return f"Average ranks by test {bench.metric} over {f.n_corpora} corpora (1 = best); {iman}; {nemenyi}"


def metric_by_corpus(bench: BenchResult, path: Path) -> Path:
    """The metric of every model on every corpus: one group of points per corpus."""
    table = bench.table
    fig, ax = _figure(figsize=(max(6.0, 0.9 * len(table) + 2.5), 4.2))
    colors = model_colors(table.columns)
    x = np.arange(len(table))
    width = 0.8 / len(table.columns)
    for j, name in enumerate(table.columns):
        ax.plot(x - 0.4 + width * (j + 0.5), table[name], "o", color=colors[name], label=name, ms=6)
    ax.set_xticks(x)
    ax.set_xticklabels(table.index, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(f"test {bench.metric}")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    ax.set_title(f"{bench.metric} of every model on every corpus", fontsize=10)
    return _save(fig, path)


def learning_curves(bench: BenchResult, path: Path) -> Path | None:
    """Small multiples: each corpus's mean learning curve of every model, crossings marked."""
    if not bench.curves:
        return None
    names = list(bench.curves)
    columns = min(4, len(names))
    rows = int(np.ceil(len(names) / columns))
    fig, axes = _figure(rows, columns, figsize=(3.4 * columns, 2.8 * rows), squeeze=False)
    colors = model_colors(bench.table.columns)
    for ax, corpus in zip(axes.ravel(), names):
        curve = bench.curves[corpus]
        metric = bench.metric if bench.metric in curve.metrics else curve.metrics[0]
        means = curve.table.groupby(["model", "size"])[metric].mean().reset_index()
        for name in curve.labels:
            part = means[means["model"] == name]
            ax.plot(part["size"], part[metric], "-o", ms=3, color=colors.get(name, "black"), label=name)
        for found in curve.crossings.values():
            for size in found.get(metric, []):
                ax.axvline(size, ls=":", color="black", lw=0.8)
        _log_scale(ax, "x", means["size"])
        ax.set_title(corpus, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3, which="both")
        ax.set_ylabel(metric, fontsize=7)
    for ax in axes.ravel()[len(names):]:
        ax.axis("off")
    handles, labels = axes.ravel()[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8)
    fig.suptitle("Learning curves (test, mean over seeds; dotted: compared pairs cross; x: training documents)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    fig.savefig(path, dpi=110)
    return path


def ranks_frame(bench: BenchResult) -> pd.DataFrame:
    """One row per model, best average rank first."""
    ranks = bench.ranks()
    frame = pd.DataFrame({"label": [bench.labels.get(n, n) for n in bench.models],
                          "average_rank": ranks.mean().to_numpy(),
                          f"mean_{bench.metric}": bench.table.mean().to_numpy(),
                          "first_on": (ranks == 1).sum().to_numpy()}, index=pd.Index(bench.models, name="model"))
    return frame.sort_values("average_rank", kind="stable")


def corpora_frame(bench: BenchResult) -> pd.DataFrame:
    ranks = bench.ranks().add_prefix("rank_")
    return bench.info.join(bench.table).join(ranks)


def _above(pair, higher_is_better: bool) -> str:
    """'a above b' for a pair whose Wilcoxon test rejects: a's values larger (R+ > R−) when higher is better."""
    a_larger = pair.r_plus > pair.r_minus
    better, worse = (pair.a, pair.b) if a_larger == higher_is_better else (pair.b, pair.a)
    return f"{better} above {worse}"


def _verdict(bench: BenchResult) -> list[str]:
    f, alpha = bench.friedman, bench.config.bench.alpha
    iman = (f"Iman-Davenport F_F is undefined: {f.undefined}" if f.undefined else
            f"Iman-Davenport F_F = {f.f_statistic:.3f} with {f.df[0]} and {f.df[1]} degrees of freedom, "
            f"p = {f.f_p_value:.3g}")
    lines = [f"Friedman test over N = {f.n_corpora} corpora and k = {f.n_models} models: χ²_F = {f.chi2:.3f} "
             f"(p = {f.chi2_p_value:.3g}); {iman}."]
    if f.undefined:
        lines.append(f"No verdict at α = {alpha:g}: the post-hoc differences below are descriptive only.")
    elif f.f_p_value >= alpha:
        lines.append(f"At α = {alpha:g} the test does not reject that every model ranks alike: the post-hoc "
                     "differences below are descriptive only.")
    else:
        lines.append(f"At α = {alpha:g} the models do not all rank alike.")
    significant = bench.pairs[bench.pairs["nemenyi_significant"]]
    if f.n_corpora < MIN_CORPORA:
        lines.append(f"Nemenyi critical difference: not tested, it needs at least {MIN_CORPORA} corpora.")
    else:
        lines.append(f"Nemenyi critical difference (α = {alpha:g}): CD = {bench.critical_difference:.3f} average "
                     "ranks; " + (", ".join(f"{r.a if r.rank_difference < 0 else r.b} ranks above "
                                            f"{r.b if r.rank_difference < 0 else r.a} by {abs(r.rank_difference):.2f}"
                                            for r in significant.itertuples())
                                  if len(significant) else "no pair of models differs by that much") + ".")
    holm = bench.pairs[bench.pairs["holm_significant"]]
    lines.append("Wilcoxon signed-ranks test per pair, Holm-adjusted: "
                 + (", ".join(f"{_above(r, bench.higher_is_better)} (p_Holm = {r.p_holm:.3g})" for r in holm.itertuples())
                    if len(holm) else "no pair significant") + ".")
    return lines


def _shown(frame: pd.DataFrame) -> pd.DataFrame:
    """Ranks, sizes and crossings as the numbers they are (3, 2.5, 1324), not 3.0000."""
    frame = frame.copy()
    for column in frame.columns:
        if column.startswith("rank_") or column in ("first_crossing",):
            frame[column] = [("n/a" if not np.isfinite(v) else f"{v:g}") for v in frame[column].astype(float)]
    return frame


def bench_markdown(bench: BenchResult, plot_files: list[Path]) -> str:
    c = bench.config
    lines = [f"# mlnb bench: {c.name}", "",
             f"The same {len(bench.models)} models on {len(bench.table)} corpora, each an ordinary study "
             f"(folders in `corpora/`); ranked by test {bench.metric} "
             f"({'higher' if bench.higher_is_better else 'lower'} is better), rank 1 = best, ties share ranks.",
             "", "Models: " + "; ".join(f"{plain(n)} = {plain(bench.labels.get(n, n))}" for n in bench.models) + ".",
             ""]
    if c.bench.set:
        lines += ["Applied to every corpus: " + ", ".join(map(plain, c.bench.set)) + ".", ""]
    lines += ["## Across corpora (Demšar 2006)", "", *_verdict(bench), "", markdown_table(ranks_frame(bench)), "",
              "## Per corpus", "", markdown_table(_shown(corpora_frame(bench))), "", "## Pairs", "",
              "Rank difference a − b against Nemenyi's CD; Wilcoxon's signed-ranks test on the metric values "
              "(zero differences split, exact p without ties), Holm-adjusted over the pairs.", "",
              markdown_table(bench.pairs.set_index("a")), ""]
    if not bench.crossovers.empty:
        lines += ["## Learning curves: where the compared models cross (Ng & Jordan 2001)", "",
                  f"[curve] sizes {c.curve.sizes or '8 log-spaced from 100 to all training documents'}, "
                  f"{c.curve.seeds} seed(s) per size; per corpus folders in `curves/`.", "",
                  markdown_table(_shown(bench.crossovers.set_index("corpus"))), ""]
    lines += [f"![{p.stem}](plots/{p.name})" for p in plot_files]
    return "\n".join(lines) + "\n"


def _flatten(final: Path, target: Path) -> None:
    """Move the one timestamped folder that ``write_results``/``write_curve`` made under ``target``
    into ``target`` itself: corpora/<corpus>/ holds the run's files."""
    staged = target.with_name(target.name + ".moving")
    final.replace(staged)
    shutil.rmtree(target)
    staged.replace(target)


def write_bench(config, root: str | Path = "results", source: str = "config", command: str | None = None
                ) -> tuple[BenchResult, Path]:
    """Run the bench (``studies.bench.run_bench``) into a new results folder, writing each corpus's
    folder as soon as it is done; return the result and the folder."""
    with atomic_folder(Path(root), f"{config.name}-bench") as staging:
        folder = staging.path

        def each_study(result):
            final = write_results(result, folder / "corpora", command=command)
            _flatten(final, folder / "corpora" / result.config.name)

        def each_curve(curve):
            final = write_curve(curve, folder / "curves")
            _flatten(final, folder / "curves" / f"{curve.config.name}-curve")

        bench = run_bench(config, source, on_study=each_study, on_curve=each_curve)
        (folder / "config.toml").write_text(dump_toml(config), encoding="utf-8")
        _write_csv(corpora_frame(bench).reset_index(), folder / "corpora.csv")
        _write_csv(ranks_frame(bench).reset_index(), folder / "ranks.csv")
        _write_csv(bench.pairs, folder / "pairs.csv")
        if not bench.crossovers.empty:
            _write_csv(bench.crossovers, folder / "crossovers.csv")
        made = []
        if config.report.plots:
            (folder / "plots").mkdir()
            f = bench.friedman
            made.append(critical_difference_diagram(bench.models, bench.labels, f.average_ranks,
                                                    bench.critical_difference if f.n_corpora >= MIN_CORPORA else None,
                                                    folder / "plots" / "critical_difference.png",
                                                    cd_title(bench, config.bench.alpha)))
            made.append(metric_by_corpus(bench, folder / "plots" / f"{bench.metric}_by_corpus.png"))
            curves = learning_curves(bench, folder / "plots" / f"curves_{bench.metric}.png")
            made += [curves] if curves is not None else []
        f = bench.friedman
        summary = {"name": config.name, "metric": bench.metric, "higher_is_better": bench.higher_is_better,
                   "alpha": config.bench.alpha, "n_corpora": f.n_corpora, "n_models": f.n_models,
                   "labels": bench.labels,
                   "average_ranks": dict(zip(bench.models, map(float, f.average_ranks))),
                   "friedman": {"chi2": f.chi2, "chi2_p_value": f.chi2_p_value, "f_statistic": f.f_statistic,
                                "f_p_value": f.f_p_value, "df": list(f.df), "f_undefined": f.undefined},
                   "critical_difference": bench.critical_difference,
                   "table": bench.table.to_dict(orient="index"), "pairs": bench.pairs.to_dict(orient="records"),
                   "crossovers": bench.crossovers.to_dict(orient="records"),
                   "corpora": [c.name for c in bench.corpora], **provenance(command),
                   "config": config_dict(config)}
        _write_json(folder / "summary.json", summary)
        (folder / "report.md").write_text(bench_markdown(bench, made), encoding="utf-8")
    return bench, staging.final
