"""Chart files: one chart as PNG (2x), SVG and a standalone HTML page that opens with no network.

PNG and SVG come from vl-convert (the engine behind Altair's ``chart.save``) with the Vega-Lite
version of Altair's public ``alt.SCHEMA_VERSION``: rendering them is most of a report's time, so a
report writes them only when asked (``EXPORT_FORMATS``, ``explorer report --export png,svg``).
HTML is Altair's inline page with the Vega libraries embedded. ``vega_bundle`` is those libraries as one script: every chart's page and the
report (a page holding many charts) embed it. JSON that lands in a ``<script>``
element is written with ``<``, ``>`` and ``&`` escaped (``_HtmlSafeJSON``).
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
from pathlib import Path

import altair as alt
import numpy as np

from ..errors import UsageError
from .output_folder import OutputFolder

CHART_FORMATS = ("png", "svg", "html")
PAGE_FORMATS = ("html",)  # written with every report: no rendering, the Vega libraries inline
EXPORT_FORMATS = ("png", "svg")  # rendered by vl-convert: only on request (``explorer report --export``)


def export_formats(names) -> tuple[str, ...]:
    """The chart exports asked for (``"png,svg"``, or a list of names), checked, in
    ``EXPORT_FORMATS`` order, each once.

    Raises:
        UsageError: a name that is not an export format (one line naming it and the valid ones).
    """
    asked = [n.strip().lower() for n in (names.split(",") if isinstance(names, str) else names) if n.strip()]
    unknown = [n for n in asked if n not in EXPORT_FORMATS]
    if unknown:
        raise UsageError(f"unknown chart export {unknown[0]!r}; expected one or more of: {', '.join(EXPORT_FORMATS)} "
                         "(comma-separated, e.g. --export png,svg)")
    return tuple(f for f in EXPORT_FORMATS if f in asked)


def vega_lite_version() -> str:
    """The Vega-Lite version of Altair's schema (public ``alt.SCHEMA_VERSION``, e.g. "v6.4.1"),
    as vl-convert names it ("6.4")."""
    return ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])


@functools.lru_cache(maxsize=1)
def vega_bundle() -> str:
    """The Vega + Vega-Lite + Vega-Embed JavaScript bundle (vl-convert), computed once per
    vl-convert and Vega-Lite version and kept in ``bundle_cache_path()``: making it starts
    vl-convert's JavaScript engine, seconds that every report paid again otherwise.

    Raises:
        ValueError: vl-convert has no bundle for Altair's Vega-Lite version (upgrade vl-convert-python).
    """
    import vl_convert as vlc

    version = vega_lite_version()
    cached = bundle_cache_path(vlc.__version__, version)
    try:
        return cached.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pass  # not made yet here (or unreadable): make it
    if version not in vlc.get_vegalite_versions():
        raise ValueError(f"vl-convert {vlc.__version__} has no Vega-Lite {version} (Altair {alt.__version__}); "
                         f"it offers {', '.join(vlc.get_vegalite_versions())}: upgrade vl-convert-python")
    bundle = vlc.javascript_bundle(vl_version=version)
    _keep(cached, bundle)
    return bundle


def bundle_cache_path(converter_version: str, vega_lite: str) -> Path:
    """Where the bundle of these versions is kept: ``$XDG_CACHE_HOME`` (default ``~/.cache``)
    ``/resnet-scaling-explorer/vega-bundle-<vl-convert>-<Vega-Lite>.js``."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "resnet-scaling-explorer" / f"vega-bundle-{converter_version}-{vega_lite}.js"


def _keep(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a temporary file, then a rename: a reader
    never sees half a bundle); a cache that cannot be written is only slower."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)


def json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


class _HtmlSafeJSON(json.JSONEncoder):
    """JSON whose text is safe inside a <script> element: <, > and & as \\u escapes (valid
    JSON, and no ``</script>`` or ``<!--`` can appear)."""

    def default(self, o):
        return json_default(o)

    def encode(self, o) -> str:
        return super().encode(o).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def chart_html(chart) -> str:
    """A standalone HTML page for one chart (Altair's inline page, with the Vega libraries inline:
    no network).

    ``chart`` is an Altair chart or its Vega-Lite spec (dict). Its JSON is script-safe. Altair's
    own inline save turns a spec back into a chart and validates it again, the slow part of a
    chart's page; a spec the caller has (``save_chart``) is written as it is."""
    from altair.utils.html import INLINE_HTML_TEMPLATE

    spec = chart if isinstance(chart, dict) else chart.to_dict()
    return INLINE_HTML_TEMPLATE.render(spec=json.dumps(spec, cls=_HtmlSafeJSON),
                                       embed_options=json.dumps({"mode": "vega-lite"}), output_div="vis",
                                       vegalite_version=alt.SCHEMA_VERSION.lstrip("v"), vegaembed_script=vega_bundle())


def save_chart(chart, directory: str | Path, name: str, formats=CHART_FORMATS, spec: dict | None = None,
               output: OutputFolder | None = None) -> list[Path]:
    """Write a chart (Altair chart or Vega-Lite dict) as ``name.png`` (2x), ``name.svg`` and
    ``name.html`` into ``directory``.

    PNG and SVG come from vl-convert (the engine behind Altair's ``chart.save``) with the
    Vega-Lite version of Altair's schema; HTML from ``chart_html`` (the Vega libraries inline,
    no network; script-safe JSON).

    Args:
        spec: ``chart.to_dict()`` when the caller has it already (validating a spec is the
            slow part of saving).
        output: the ``OutputFolder`` (``--out``) that ``directory`` lies in: its rules apply (no
            file it did not write is replaced without ``--force``). Default: ``directory``
            itself, replacing what is there, but never writing through a link.
    Returns:
        The written paths.
    Raises:
        ValueError: an unknown format.
    """
    import vl_convert as vlc  # one converter per process, started at its first use

    unknown = [f for f in formats if f not in CHART_FORMATS]
    if unknown:
        raise ValueError(f"unknown chart format {unknown[0]!r}; expected one of: {', '.join(CHART_FORMATS)}")
    directory = Path(directory)
    folder = output if output is not None else OutputFolder(directory, force=True)
    if spec is None:
        spec = chart if isinstance(chart, dict) else chart.to_dict()
    paths = []
    for f in formats:
        relative = os.path.relpath(directory / f"{name}.{f}", folder.root)
        if f == "png":
            data = vlc.vegalite_to_png(spec, vl_version=vega_lite_version(), scale=2)
        elif f == "svg":
            data = vlc.vegalite_to_svg(spec, vl_version=vega_lite_version())
        else:
            data = chart_html(spec)
        paths.append(folder.write(relative, data))  # temporary name, then rename: never through a link
    return paths


__all__ = ["CHART_FORMATS", "EXPORT_FORMATS", "PAGE_FORMATS", "bundle_cache_path", "chart_html", "export_formats",
           "save_chart", "vega_bundle", "vega_lite_version"]
