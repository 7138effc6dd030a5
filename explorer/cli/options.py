"""The click options shared by several commands (written once, as decorators).

    @click.command("mycommand")
    @store_option
    def mycommand(store_uri: str) -> None:
        ...
"""
from __future__ import annotations

import click

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
        self._registry_help = registry_help
        self._base_help = self.help

    def get_help_record(self, ctx):
        self.help = f"{self._base_help} {self._registry_help()}"
        return super().get_help_record(ctx)


def _metric_names() -> str:
    from ..analysis.laws import DECOMPOSED_METRICS
    from ..analysis.queries import FIT_METRICS

    return (f"One of: {', '.join(FIT_METRICS)} (the decomposed law: {', '.join(DECOMPOSED_METRICS)}; "
            "docs/store.md defines each).")


def _form_names() -> str:
    from ..analysis.laws import FORMS

    named = ", ".join(f"{f.name} ({f.expression if f.method == 'law' else f.source})" for f in FORMS.values())
    return f"One of the registry's laws: {named}; or an expression over L, M, D, P, e.g. \"c1*L**-a + c2\"."


metric_option = click.option("--metric", default="err_out", show_default=True, metavar="NAME", cls=RegistryHelpOption,
                             registry_help=_metric_names, help="Error metric.")


def form_option(help_text: str):
    """``--form``: a law of the registry or an expression, with ``help_text`` before the names."""
    return click.option("--form", default="decomposed", show_default=True, metavar="F", cls=RegistryHelpOption,
                        registry_help=_form_names, help=help_text)
step_option = click.option("--step", type=int, default=None, metavar="K",
                           help="GD step to read (default: each trial's final step).")
where_option = click.option("--where", default=None, metavar="SQL",
                            help="Only metric rows matching this SQL condition, e.g. \"alpha = 1\".")
