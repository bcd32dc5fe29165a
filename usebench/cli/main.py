"""The `bench` command group; each sub-command lives in its own module of this package and is added here."""
from __future__ import annotations

import sys

import click

from usebench.cli.analyze import analyze
from usebench.cli.catalog import methods_cmd, tasks_cmd
from usebench.cli.compare import compare
from usebench.cli.data import data
from usebench.cli.doctor import doctor
from usebench.cli.eval import eval_cmd
from usebench.cli.report import check, report
from usebench.cli.reproduce import reproduce
from usebench.cli.run import run
from usebench.cli.search import config_search
from usebench.cli.status import status
from usebench.errors import BenchError


# Exit codes: 0 done, 1 nothing done (every task skipped, no data root) or a check failed, 2 bad input or an
# error (a BenchError), 130 interrupted (SIGINT, the shell's 128 + 2).
EXIT_INTERRUPTED = 130


class BenchGroup(click.Group):
    """Turns BenchError into one clean `error:` line and its exit code (2, or 1 when nothing was done) instead
    of a traceback, and Ctrl-C into exit 130 (results already written are complete: every write is atomic)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BenchError as e:
            click.secho(f"error: {e}", fg="red", err=True)
            sys.exit(e.exit_code)
        except KeyboardInterrupt as e:
            click.secho("interrupted: stopped before finishing; results already written are complete", fg="red",
                        err=True)
            for note in getattr(e, "__notes__", ()):  # the training loop says where a stage resumes
                click.secho(f"  {note}", fg="red", err=True)
            click.secho(f"to resume: {resume_command(sys.argv)} (finished units and results are kept)", fg="red",
                        err=True)
            sys.exit(EXIT_INTERRUPTED)


def resume_command(argv: list[str]) -> str:
    """The command that was interrupted, as the user runs it again (``bench ...``)."""
    import shlex

    return shlex.join(["bench", *argv[1:]]) if len(argv) > 1 else "the same command"


@click.group(cls=BenchGroup)
@click.version_option(package_name="usebench")
def main() -> None:
    """usebench: train and evaluate unsupervised sentence encoders on USEB, STS and BEIR tasks."""
    _quiet_libraries()


def _quiet_libraries() -> None:
    """transformers at error level, without its (and the hub's) progress bars. Before transformers is imported this
    goes through the environment it reads then: importing it here would cost ~1.5 s on every command, also those
    that never load a model (a dry run, `bench report`)."""
    import os

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if "transformers" not in sys.modules:
        os.environ["TRANSFORMERS_VERBOSITY"] = "error"  # as set_verbosity_error()
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # as disable_progress_bar(), which turns off the hub's too
        if "huggingface_hub" in sys.modules:  # it has read the variable already
            from huggingface_hub.utils import disable_progress_bars

            disable_progress_bars()
        return
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


for command in (eval_cmd, run, status, report, compare, check, data, tasks_cmd, methods_cmd, config_search,
                analyze, reproduce, doctor):
    main.add_command(command)

if __name__ == "__main__":
    main()
