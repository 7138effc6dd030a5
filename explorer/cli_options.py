"""The click options shared by several commands (written once, as decorators).

    @main.command()
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
metric_option = click.option("--metric", default="err_out", show_default=True, metavar="NAME",
                             help="Error metric: err_out (outputs) or err_hidden (last hidden state).")
step_option = click.option("--step", type=int, default=None, metavar="K",
                           help="GD step to read (default: each trial's final step).")
where_option = click.option("--where", default=None, metavar="SQL",
                            help="Only metric rows matching this SQL condition, e.g. \"alpha = 1\".")
