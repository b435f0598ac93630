"""The ``mlnb`` command line: assembles config, study and report; computes nothing itself."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from mlnb import progress
from mlnb.config import dump_toml, load_config
from mlnb.errors import MlnbError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Naive Bayes vs logistic regression, one-vs-rest over every category, "
                       "driven by a TOML config. Start with: mlnb run configs/quickstart.toml")

SET_HELP = ("Override a config key, e.g. --set nb.alpha=0.1 or --set data.source=svmlight "
            "(repeatable; the value is read as TOML, else as a string).")


def _fail(error: MlnbError) -> None:
    typer.echo(f"error: {error}", err=True)
    raise typer.Exit(code=2)


@app.command()
def run(config: Path = typer.Argument(..., help="Study config (TOML), e.g. configs/quickstart.toml."),
        out: Path = typer.Option(Path("results"), "--out", help="Root folder of the results: the run "
                                 "goes to OUT/<config name>/<timestamp>/."),
        set_: Optional[List[str]] = typer.Option(None, "--set", help=SET_HELP),
        quiet: bool = typer.Option(False, "--quiet", help="No progress display.")) -> None:
    """Train NB and LR, evaluate every category, write a results folder.

    The folder holds the resolved config.toml, metrics.csv (model x category),
    summary.json, ROC and lift curve tables, plots/*.png and report.md.
    """
    from mlnb.report.results import format_summary, write_results
    from mlnb.study import run_study

    progress.enable(not quiet)
    try:
        study_config = load_config(config, set_ or [])
        result = run_study(study_config)
        folder = write_results(result, out, command=" ".join(["mlnb"] + sys.argv[1:]))
    except MlnbError as error:
        _fail(error)
    data = result.data
    typer.echo(f"{data['name']}: {data['n_train']} train / {data['n_test']} test documents, "
               f"{data['n_features_used']} features, {data['n_categories']} categories")
    typer.echo(format_summary(result))
    typer.echo(f"results: {folder}")


@app.command("show-config")
def show_config(config: Optional[Path] = typer.Argument(None, help="Config file; none = the defaults."),
                set_: Optional[List[str]] = typer.Option(None, "--set", help=SET_HELP)) -> None:
    """Print the resolved config (defaults, file, overrides) with every key explained."""
    try:
        typer.echo(dump_toml(load_config(config, set_ or [])), nl=False)
    except MlnbError as error:
        _fail(error)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
