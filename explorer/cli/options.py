"""The click options shared by several commands (written once, as decorators).

    @click.command("mycommand")
    @store_option
    def mycommand(store_uri: str) -> None:
        ...
"""
from __future__ import annotations

import click

from ..analysis.laws import DEFAULT_FORM

DEFAULT_STORE = "./results"

store_option = click.option(
    "--store",
    "store_uri",
    default=DEFAULT_STORE,
    show_default=True,
    envvar="EXPLORER_STORE",
    metavar="URI",
    help="Results store: a directory or s3://bucket/prefix (env EXPLORER_STORE; for S3 the AWS_* "
    "variables, AWS_ENDPOINT_URL included, select the endpoint and credentials).",
)

sweep_filter_option = click.option(
    "--sweep", default=None, metavar="NAME", help="Only this sweep (default: every sweep in the store)."
)

sweep_required_option = click.option("--sweep", "sweep", required=True, metavar="NAME", help="The sweep to analyse.")


class RegistryHelpOption(click.Option):
    """An option whose help ends with the valid names of a registry, read when the help is shown:
    the registries live beside numpy and pyarrow, which a command must not import to start."""

    def __init__(self, *args, registry_help, **kwargs):
        super().__init__(*args, **kwargs)
        self.registry_help = registry_help
        self._base_help = self.help

    def get_help_record(self, ctx):
        self.help = f"{self._base_help} {self.registry_help()}"
        return super().get_help_record(ctx)


def metric_names() -> str:
    """The metrics a law may be fitted to, for ``--metric`` (and those a method of its own narrows to)."""
    from ..analysis.data import FIT_METRICS
    from ..analysis.laws import METHODS

    fewer = "".join(f"the {m.name} law: {', '.join(m.metrics)}; " for m in METHODS.values() if m.metrics != FIT_METRICS)
    return f"One of: {', '.join(FIT_METRICS)} ({fewer}docs/store.md defines each)."


def fit_metric_names() -> str:
    """``metric_names`` and the terms of the decomposition ``explorer fit`` also accepts."""
    from ..analysis.data import TERM_METRICS

    terms = ", ".join(f"{m.name} ({m.term} of {m.error})" for m in TERM_METRICS.values())
    return (f"{metric_names()} Or one term of an error's decomposition over seeds, fitted with any --form: "
            f"{terms}.")


def form_names() -> str:
    """The registry's laws, each with its expression or source, for ``--form``."""
    from ..analysis.laws import FORMS

    named = ", ".join(f"{f.name} ({f.summary})" for f in FORMS.values())
    return f"One of the registry's laws: {named}; or an expression over L, M, D, P, e.g. \"c1*L**-a + c2\"."


def axis_names() -> str:
    """The axes a phase diagram may be drawn over, for ``--x`` and ``--y``."""
    from ..analysis.phase import AXES

    return f"One of the swept columns: {', '.join(AXES)}."


def column_names() -> str:
    """The configuration columns two sides may differ in or be held at (``compare --by``, ``--at``)."""
    from ..analysis.data import GRID_COLUMNS

    return f"A configuration column: {', '.join(GRID_COLUMNS)}."


def compared_forms() -> str:
    """The laws ``explorer compare`` fits."""
    from ..analysis.laws import compared_forms as forms

    return f"One of: {', '.join(forms())} (the laws compare fits)."


metric_option = click.option("--metric", default="err_out", show_default=True, metavar="NAME", cls=RegistryHelpOption,
                             registry_help=metric_names, help="Error metric.")
fit_metric_option = click.option("--metric", default="err_out", show_default=True, metavar="NAME",
                                 cls=RegistryHelpOption, registry_help=fit_metric_names, help="Error metric or term.")


def form_option(help_text: str):
    """``--form``: a law of the registry or an expression, with ``help_text`` before the names."""
    return click.option("--form", default=DEFAULT_FORM, show_default=True, metavar="F", cls=RegistryHelpOption,
                        registry_help=form_names, help=help_text)
step_option = click.option("--step", type=int, default=None, metavar="K",
                           help="GD step to read (default: each trial's final step).")
where_option = click.option("--where", default=None, metavar="SQL",
                            help="Only metric rows matching this SQL condition, e.g. \"alpha = 1\".")


def bounded_list(ctx, param, value):
    """A click callback: a repeated option's values, refused past ``explorer.bounds.MAX_LIST_ITEMS``
    (one line, exit 2)."""
    from ..bounds import MAX_LIST_ITEMS

    if value is not None and len(value) > MAX_LIST_ITEMS:
        raise click.BadParameter(f"{len(value):,} given; at most {MAX_LIST_ITEMS} are accepted")
    return value


def echo_notes(notes) -> None:
    """An analysis's lines on its data (partial, trials outside the last run's grid), on standard
    error before its result: ``explorer.analysis.data.data_notes``."""
    for line in notes or ():
        click.echo(line, err=True)
