"""The ``mlnb`` command line: assembles config, study and report; computes nothing itself.

Exit codes: 0 done; 2 bad input (one line ``error: ...``); 130 Ctrl-C (SIGINT) and 143 SIGTERM
(128 + the signal's number, as shells report them), each after one line ``interrupted`` and with
no ``.partial-*`` staging folder left behind. A signal that comes once the command's results folder
is in place (only the index page, MLflow or the summary lines were left) is exit 0 and one line
``done: results in ...``: the results are complete, and kept. Every command that writes checks its ``--out``
before it loads any data.

Any other exception (a file that cannot be read or written, input nested too deeply for Python's
recursion limit, memory, a bug) is one line ``error: ...`` and exit code 2 as well;
``mlnb --debug <command>`` (or ``MLNB_DEBUG=1``) prints the traceback first. How (signals, the
one-line errors and warnings, the garbage collector after a command's imports): ``mlnb.cli_process``.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import List, Optional

import typer

from mlnb import progress, timings
from mlnb.cli_process import fail, imports_done, interruptible, run_command_line, show_tracebacks
from mlnb.errors import MlnbError, MlnbWarning

# Everything else is imported inside the command that needs it: mlnb.config alone imports every model
# (scikit-learn, numba), a second or two that `mlnb --help` and a mistyped command should not wait for.

# rich_markup_mode=None: help texts are plain text, so "[sweep]" or "[data]" is shown, not read as markup
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Naive Bayes vs logistic regression, one-vs-rest over every category, "
                       "driven by a TOML config. Start with: mlnb run configs/quickstart.toml")

SET_HELP = ("Override a config key, e.g. --set models.nb.alpha=0.1 or --set data.source=svmlight "
            "(repeatable; the value is read as TOML, else as a string).")


def _show_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"mlnb {version('mlnb')}")
        except PackageNotFoundError:  # run from a source tree that is not installed
            typer.echo("mlnb (not installed: no version recorded)")
        raise typer.Exit()


@app.callback()
def _options(debug: bool = typer.Option(False, "--debug", help="Print the Python traceback of an error before its "
                                        "one-line message (also: MLNB_DEBUG=1)."),
             version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                          help="Print mlnb's version and exit.")) -> None:
    """Naive Bayes vs logistic regression, one-vs-rest over every category, driven by a TOML config."""
    show_tracebacks(debug)


def _run_clock() -> timings.Timings:
    """The recording of ``mlnb run``: from the process's start (a ``start-up`` row: the interpreter, the
    imports, the config) when this process is the ``mlnb`` command (``mlnb_entry``); else (a program or a
    test calling the CLI) from now."""
    entry = sys.modules.get("mlnb_entry")
    if not getattr(entry, "RUNNING_AS_COMMAND", False):
        return timings.Timings()
    return timings.from_process_start(getattr(entry, "IMPORTED_AT", None))


def _run_stages(config) -> list[str]:
    """The stages a run of ``config`` enters, for its live line's count (``progress.run_display``)."""
    return ["load", *([] if config.data.streaming else ["features"]), "fit", "score", "evaluate", "intervals",
            *(["comparisons"] if config.compared_pairs() else []), *(["plots"] if config.report.plots else []),
            "writing"]


def _prepare_engine(config) -> None:
    """Before a study: spill folders that dead processes left in engine.spill_folder are removed, and a
    streamed study's spill folder must be writable (checked now, not when the test scores are written), and
    the first study on this cache compiles every kernel, in parallel processes (``mlnb.precompile``)."""
    from mlnb.backends.spill import check_spill_folder, clean_stale_spills
    from mlnb.precompile import ensure_compiled

    removed = clean_stale_spills(config.engine.spill_folder)
    if removed:
        progress.log(f"removed {len(removed)} spill folder(s) of processes that ended without removing them: "
                     f"{', '.join(str(path) for path in removed[:5])}{' ...' if len(removed) > 5 else ''}")
    if config.data.streaming:
        check_spill_folder(config.engine.spill_folder)
    ensure_compiled()


def _start_compiling(config: Path, quiet: bool) -> None:
    """The study commands' first step: progress on (or off), and the kernels' compile started where this cache
    lacks them, so that it runs while the command imports the rest of mlnb (seconds) and reads its config
    (``mlnb.precompile.start_compiling``; ``_prepare_engine`` waits for it). Not for a config path that names
    no file: that command ends in one line, with nothing started."""
    from mlnb.precompile import start_compiling

    progress.enable(not quiet)
    if config.is_file():
        start_compiling()


def _results_written(folder: Path, note: str = "") -> None:
    """A command's last lines: the page to open, the folder's report.html, then the folder itself (last, as
    ever: scripts read it from the last line)."""
    if (folder / "report.html").is_file():  # written for every folder with a report.md (atomic_folder)
        typer.echo(f"report: {folder / 'report.html'}")
    typer.echo(f"results: {folder}{note}")



@app.command()
@interruptible
def run(config: Path = typer.Argument(..., readable=False,  # unreadable: one line from load_config, not click's usage
                                      help="Study config (TOML), e.g. configs/quickstart.toml."),
        out: Path = typer.Option(Path("results"), "--out", help="Root folder of the results: the run "
                                 "goes to OUT/<config name>/<timestamp>/."),
        set_: Optional[List[str]] = typer.Option(None, "--set", help=SET_HELP),
        quiet: bool = typer.Option(False, "--quiet", help="No progress display."),
        profile: bool = typer.Option(False, "--profile", help="Print the seconds of each stage (start-up, load, "
                                     "features, fit per model, decide, score, evaluate, intervals, comparisons, "
                                     "plots, writing; numba's compiling apart) at the end, from the process's "
                                     "start; summary.json has them always."),
        quick: bool = typer.Option(False, "--quick", help="The tables only: --set eval.bootstrap=0 --set "
                                   "report.plots=false before your own --set (no bootstrap intervals, no "
                                   "figures); the report says what was left out.")) -> None:
    """Train every model of the study, evaluate every category, write a results folder.

    The folder holds the resolved config.toml, metrics.csv (model x category),
    summary.json, ROC and lift curve tables, plots/*.png and report.md.
    """
    _start_compiling(config, quiet)
    from mlnb.budget import check_budget
    from mlnb.config import load_config
    from mlnb.report.folder import check_writable
    from mlnb.report.results import left_out, mlflow_runs, quick_settings, write_results
    from mlnb.report.tables import format_summary
    from mlnb.study import run_study
    imports_done()

    progress.enable(not quiet)
    try:
        study_config = load_config(config, (quick_settings() if quick else []) + (set_ or []))
        check_writable(out, study_config.name)  # before the data: a bad --out fails in a second
        _prepare_engine(study_config)  # and a spill folder that cannot be written
        check_budget(study_config)  # and a run that cannot fit in memory too
        if study_config.report.plots:
            from mlnb.report import drawing

            drawing.start_early()  # many cores: the processes that draw the figures get ready meanwhile
        # the stages of the study, the plots and the writing (from the process's start: --profile's total is the
        # command's wall time), on a terminal with one live line
        with timings.recording(_run_clock()) as clock, progress.run_display(clock, _run_stages(study_config)):
            result = run_study(study_config)
            with timings.stage("writing"):
                folder = write_results(result, out, command=" ".join(["mlnb"] + sys.argv[1:]), quick=quick)
    except MlnbError as error:
        fail(error)
    data = result.data
    if quick:
        typer.echo(f"quick run, left out: {', '.join(left_out(study_config)) or 'nothing'} (see report.md)")
    typer.echo(f"{data['name']}: {data['n_train']} train / {data['n_test']} test documents, "
               f"{data['n_features_used']} features, {data['n_categories']} categories")
    typer.echo(format_summary(result))
    if folder in mlflow_runs:
        typer.echo(f"mlflow: {mlflow_runs[folder]}")
    _results_written(folder)
    if profile:
        import numba

        typer.echo("\nwhere the time went (--profile):\n" + clock.format(threads=numba.get_num_threads()))


@app.command()
@interruptible
def compare(run_a: Path = typer.Argument(..., help="A results folder of `mlnb run`."),
            run_b: Optional[Path] = typer.Argument(None, help="A second results folder; none = compare "
                                                   "the two models of RUN_A."),
            model_a: Optional[str] = typer.Option(None, "--model-a", help="Model name in RUN_A (default: its "
                                                  "second model within one run, else its first; never a pair of "
                                                  "identical models: the next pair then)."),
            model_b: Optional[str] = typer.Option(None, "--model-b", help="Model name in RUN_B (default: the "
                                                  "first model within one run, else the same as --model-a)."),
            alpha: float = typer.Option(0.05, "--alpha", help="Significance level after Holm."),
            out: Path = typer.Option(Path("results"), "--out", help="Results root: OUT/compare/<timestamp>/.")) -> None:
    """Paired per-category comparison of two models' AUCs: DeLong's test (exact permutation where positives
    are few), Holm, sign test.

    Both must have been evaluated on the same test documents (same data, split and seed).
    """
    from mlnb.report.folder import check_writable
    from mlnb.report.markdown import tests_used
    from mlnb.report.results import write_comparison
    from mlnb.studies.compare import compare_runs, config_diff, default_pair, load_scores
    imports_done()

    try:
        if not 0 < alpha < 1:
            raise MlnbError(f"--alpha: expected a value in (0, 1), got {alpha}")
        check_writable(out, "compare")
        first = load_scores(run_a)
        second = load_scores(run_b) if run_b is not None else first
        names = list(first.scores)
        if run_b is None and model_a is None and len(names) < 2:
            raise MlnbError(f"{run_a}: one model only ({names[0]}); name a second run to compare with")
        if model_a is None and model_b is None:  # never two identical models
            key_a, key_b = default_pair(first, None if run_b is None else second)
        else:
            key_a = model_a or (names[1] if run_b is None else names[0])
            key_b = model_b or (names[0] if run_b is None else key_a)
        comparison = compare_runs(first, key_a, second, key_b, alpha)
        folder = write_comparison(comparison, out, sources=[str(run_a)] + ([str(run_b)] if run_b else []),
                                  diff=config_diff(first, key_a, second, key_b))
    except MlnbError as error:
        fail(error)
    counts, sign = comparison.counts(), comparison.sign
    typer.echo(f"a = {comparison.label_a} ({comparison.name_a})\nb = {comparison.label_b} ({comparison.name_b})")
    typer.echo(f"significantly higher AUC (Holm, alpha {alpha:g}): a in {counts['a_significantly_better']}, "
               f"b in {counts['b_significantly_better']}; no significant difference in "
               f"{counts['no_significant_difference']}; not testable {counts['not_testable']}")
    typer.echo(f"sign test: a higher in {sign.wins}, b higher in {sign.losses}, ties {sign.ties}, p = {sign.p_value:.3g}")
    typer.echo(f"per-category tests: {tests_used(comparison)}")
    _results_written(folder)


@app.command()
@interruptible
def runs(folder: Path = typer.Argument(Path("results"), help="A results root (what --out named), or any folder "
                                       "above results folders (searched 6 levels down: `mlnb runs ..` from a "
                                       "sibling of results/ finds them)."),
         html: bool = typer.Option(False, "--html", help="Also (re)write FOLDER/index.html, a page linking every "
                                   "run's report.html, in this order, sortable by any column (`mlnb run` rewrites "
                                   "it after each run).")) -> None:
    """List the results folders under FOLDER, oldest first: name, time, data, models, headline metric
    (macro AUC per model), the --set overrides that made each. A folder that cannot be read is named in
    a warning and left out."""
    from mlnb.report.html import write_index
    from mlnb.report.runs import format_runs, runs_frame, scan_runs
    imports_done()

    try:
        if not folder.is_dir():
            raise MlnbError(f"{folder}: no such folder (a results root, e.g. results/)")
        entries, skipped = scan_runs(folder)
        for left_out in skipped:
            warnings.warn(MlnbWarning(str(left_out)))
        page = write_index(folder, (entries, skipped)) if html else None
    except MlnbError as error:
        fail(error)
    if not entries:
        typer.echo(f"{folder}: no results folders (folders with a summary.json) found")
    else:
        typer.echo(format_runs(runs_frame(entries, folder)))
    if page is not None:
        typer.echo(f"index: {page}")


@app.command()
@interruptible
def sweep(config: Path = typer.Argument(..., readable=False,  # unreadable: one line from load_config, not click's usage
                                        help="Study config (TOML); its [sweep] section may hold the grid."),
          param: Optional[List[str]] = typer.Option(None, "--param", help="A swept key and its values, "
                                                    "e.g. --param models.lr.lrate=0.1,0.3,1 (repeatable; adds to "
                                                    "or replaces [sweep] params)."),
          set_: Optional[List[str]] = typer.Option(None, "--set", help=SET_HELP),
          out: Path = typer.Option(Path("results"), "--out", help="Results root: OUT/<name>-sweep/<timestamp>/."),
          quiet: bool = typer.Option(False, "--quiet", help="No progress display.")) -> None:
    """Grid or seeded random search over any model's keys (models.<name>.*), scored on repeated validation
    splits of the training part (sweep.repeats, mean and spread); the setting chosen by sweep.rule ('best' or
    'one_standard_error') is written as best.toml, refitted on the whole training part and tested once on
    the test part. E.g. the best lrate and batch_size for category 6:
    --param models.lr.lrate=0.1,0.3,1 --param models.lr.batch_size=100,1000 --set sweep.metric=auc
    --set sweep.category=6
    """
    _start_compiling(config, quiet)
    from mlnb.budget import check_budget
    from mlnb.config import load_config
    from mlnb.metrics.evaluation import LOWER_IS_BETTER
    from mlnb.report.folder import check_writable
    from mlnb.report.sweep import write_sweep
    from mlnb.studies.sweep import run_sweep
    imports_done()

    progress.enable(not quiet)
    try:
        study_config = load_config(config, set_ or [])
        check_writable(out, f"{study_config.name}-sweep")  # the folder write_sweep writes into
        _prepare_engine(study_config)
        check_budget(study_config)
        given = {p.split("=", 1)[0].strip(): p for p in study_config.sweep.params}
        given.update({p.split("=", 1)[0].strip(): p for p in param or []})
        result = run_sweep(study_config, list(given.values()))
        folder = write_sweep(result, out, command=" ".join(["mlnb"] + sys.argv[1:]))
    except MlnbError as error:
        fail(error)
    keys, metric = list(result.grid), result.metric
    best_first = result.table.sort_values(metric, ascending=metric in LOWER_IS_BETTER)
    typer.echo(best_first.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    typer.echo("best: " + ", ".join(f"{k} = {result.best[k]}" for k in keys) +
               f" ({metric} {result.best[metric]:.4f} ± {result.best[metric + '_sd']:.4f} sd over "
               f"{int(result.best['repeats'])} repeats of {result.n_validation} validation documents; "
               f"rule {result.rule})")
    if result.test:
        typer.echo(f"test: {metric} {result.test['value']:.4f} (refitted on {result.test['n_train']} training "
                   f"documents, {result.test['n_test']} test documents)")
    _results_written(folder, f"  (best.toml: mlnb run {folder / 'best.toml'})")


@app.command()
@interruptible
def curve(config: Path = typer.Argument(..., readable=False,  # unreadable: one line from load_config, not click's usage
                                        help="Study config (TOML); [curve] sets sizes and seeds."),
          set_: Optional[List[str]] = typer.Option(None, "--set", help=SET_HELP),
          out: Path = typer.Option(Path("results"), "--out", help="Results root: OUT/<name>-curve/<timestamp>/."),
          quiet: bool = typer.Option(False, "--quiet", help="No progress display.")) -> None:
    """Learning curves: every model on growing training samples (several seeds each), test macro AUC,
    micro F1 and mean expected accuracy against training size, and where the compared models' curves cross."""
    _start_compiling(config, quiet)
    from mlnb.budget import check_budget
    from mlnb.config import load_config
    from mlnb.report.folder import check_writable
    from mlnb.report.results import write_curve
    from mlnb.studies.curve import run_curve
    imports_done()

    progress.enable(not quiet)
    try:
        study_config = load_config(config, set_ or [])
        check_writable(out, f"{study_config.name}-curve")  # the folder write_curve writes into
        _prepare_engine(study_config)
        check_budget(study_config)
        result = run_curve(study_config)
        folder = write_curve(result, out)
    except MlnbError as error:
        fail(error)
    means = result.table.groupby(["model", "size"])[list(result.metrics)].mean()
    typer.echo(means.to_string(float_format=lambda v: f"{v:.4f}"))
    for pair, found in result.crossings.items():
        for metric, sizes in found.items():
            typer.echo(f"{pair}, {metric}: " + (", ".join(f"curves cross at ~{s:,.0f}" for s in sizes)
                                                 or "no crossing"))
    _results_written(folder)


@app.command()
@interruptible
def bench(config: Path = typer.Argument(..., readable=False,  # unreadable: one line from load_config, not click's usage
                                        help="Bench config (TOML): a study config whose [bench] corpora lists "
                                        "the corpora's study configs, e.g. configs/corpora.toml."),
          set_: Optional[List[str]] = typer.Option(None, "--set", help=SET_HELP + " E.g. --set bench.curves=true."),
          out: Path = typer.Option(Path("results"), "--out", help="Results root: OUT/<name>-bench/<timestamp>/."),
          quiet: bool = typer.Option(False, "--quiet", help="No progress display.")) -> None:
    """The same models on many corpora: a results folder per corpus, then average ranks, the Friedman
    test (Iman-Davenport F), Nemenyi's critical difference with its diagram and Holm-adjusted Wilcoxon
    tests across them (Demšar 2006); with bench.curves, learning curves and crossover sizes per corpus."""
    _start_compiling(config, quiet)
    from mlnb.config import load_config
    from mlnb.metrics.across_corpora import MIN_CORPORA
    from mlnb.report.bench import ranks_frame, write_bench
    from mlnb.report.folder import check_writable
    from mlnb.studies.bench import corpus_configs
    imports_done()

    progress.enable(not quiet)
    try:
        bench_config = load_config(config, set_ or [])
        corpus_configs(bench_config, str(config))  # every corpus config checked before any data is read
        check_writable(out, f"{bench_config.name}-bench")
        _prepare_engine(bench_config)
        result, folder = write_bench(bench_config, out, str(config), command=" ".join(["mlnb"] + sys.argv[1:]))
    except MlnbError as error:
        fail(error)
    f = result.friedman
    typer.echo(result.table.to_string(float_format=lambda v: f"{v:.4f}"))
    typer.echo(ranks_frame(result).drop(columns="label").to_string(float_format=lambda v: f"{v:.4f}"))
    typer.echo(f"Friedman over {f.n_corpora} corpora, {f.n_models} models: chi2_F = {f.chi2:.3f} (p = {f.chi2_p_value:.3g}), "
               + (f"Iman-Davenport F_F undefined ({f.undefined})" if f.undefined else
                  f"Iman-Davenport F_F = {f.f_statistic:.3f} (p = {f.f_p_value:.3g})")
               + (f"; Nemenyi CD = {result.critical_difference:.3f}" if f.n_corpora >= MIN_CORPORA else ""))
    _results_written(folder)


@app.command()
@interruptible
def convert(config: Path = typer.Argument(..., readable=False,  # unreadable: one line from load_config, not click's usage
                                          help="Study config (TOML) whose [data] names the corpus: source "
                                          "svmlight, text or shards."),
            out: Path = typer.Argument(..., help="Folder for the shards (new or empty); a test file goes to "
                                       "OUT/test. Written beside OUT and swapped in once complete."),
            shard_documents: int = typer.Option(100_000, "--shard-documents", help="Documents per shard."),
            overwrite: bool = typer.Option(False, "--overwrite", help="Replace an earlier conversion in OUT (once "
                                           "the new one is complete; never one that holds the input)."),
            set_: Optional[List[str]] = typer.Option(None, "--set", help=SET_HELP),
            quiet: bool = typer.Option(False, "--quiet", help="No progress display.")) -> None:
    """Write a corpus as binary shards (memory-mapped .npy arrays and a manifest) that a streaming
    study reads many times faster than svmlight (experiments/bench_shards.py): data.source = "shards",
    data.shards.path = OUT."""
    from mlnb.config import load_config
    from mlnb.data.shards import convert as convert_shards
    from mlnb.data.sources import open_source
    imports_done()

    from mlnb.data.stream import check_chunk_size

    progress.enable(not quiet)
    try:
        check_chunk_size(shard_documents, "--shard-documents")
        study_config = load_config(config, set_ or [])
        source, test_source = open_source(study_config.data, study_config.features)
        # one conversion, train and test (OUT/test) together, swapped in whole once complete
        manifest = convert_shards(source, out, shard_documents=shard_documents, overwrite=overwrite,
                                  test_source=test_source)
    except MlnbError as error:
        fail(error)
    typer.echo(f"shards: {manifest.parent}")
    if test_source is not None:
        typer.echo(f"shards: {manifest.parent / 'test'}")


@app.command("show-config")
@interruptible
def show_config(config: Optional[Path] = typer.Argument(None, readable=False,  # unreadable: load_config's line
                                                        help="Config file; none = the defaults."),
                set_: Optional[List[str]] = typer.Option(None, "--set", help=SET_HELP)) -> None:
    """Print the resolved config (defaults, file, overrides) with every key explained, then every
    model kind with its options."""
    from mlnb.config import describe_kinds, dump_toml, load_config
    imports_done()

    try:
        typer.echo(dump_toml(load_config(config, set_ or [])) + "\n" + describe_kinds(), nl=False)
    except MlnbError as error:
        fail(error)


@app.command()
@interruptible
def init(data: Path = typer.Argument(..., readable=False,  # (unreadable: refused by detect in one line, not click)
                                     help="Your data: a file (svmlight, ARFF, CSV, TSV or JSON lines of texts) "
                                     "or a folder (one sub-folder of text files per category, text files and a "
                                     "labels file, a Mulan ARFF pair, shards of `mlnb convert`)."),
         out: Path = typer.Option(Path("config.toml"), "--out", help="The config file to write."),
         text_column: str = typer.Option("", "--text-column", help="The column (JSON key) of the texts, when "
                                         "init cannot tell."),
         label_column: str = typer.Option("", "--label-column", help="The column (JSON key) of the labels, when "
                                          "init cannot tell."),
         label_separator: str = typer.Option("", "--label-separator", help="The separator of several labels in "
                                             "one cell (e.g. ';'), when init cannot tell."),
         force: bool = typer.Option(False, "--force", help="Replace an existing --out file.")) -> None:
    """Look at DATA, print what it holds (format, documents, categories, label column and separator, split)
    and write a starter config that runs as is: mlnb init DATA && mlnb run config.toml"""
    from mlnb.starter import Hints, write_starter
    imports_done()

    try:
        path, lines = write_starter(data, out, Hints(text_column, label_column, label_separator), overwrite=force)
    except MlnbError as error:
        fail(error)
    for line in lines:
        typer.echo(line)
    typer.echo(f"wrote: {path} (run it: mlnb run {path})")


@app.command("compile")
def compile_kernels(quiet: bool = typer.Option(False, "--quiet", help="No progress display.")) -> None:
    """Compile every kernel of mlnb now, in one process per core (the first study does it otherwise), so that
    no run compiles anything, whatever its data."""
    from mlnb.precompile import ensure_compiled
    imports_done()

    progress.enable(not quiet)
    ensure_compiled()


def main() -> None:
    run_command_line(app)


if __name__ == "__main__":
    main()
