"""Chart files: one chart as PNG (2x), SVG and a standalone HTML page that opens with no network.

PNG and SVG come from vl-convert (the engine behind Altair's ``chart.save``) with the Vega-Lite
version of Altair's public ``alt.SCHEMA_VERSION``; HTML is Altair's inline page with the Vega
libraries embedded. ``vega_bundle`` is those libraries as one script: every chart's page and the
report (a page holding many charts) embed it. JSON that lands in a ``<script>``
element is written with ``<``, ``>`` and ``&`` escaped (``_HtmlSafeJSON``).
"""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import altair as alt
import numpy as np

from .output_folder import OutputFolder

CHART_FORMATS = ("png", "svg", "html")


def vega_lite_version() -> str:
    """The Vega-Lite version of Altair's schema (public ``alt.SCHEMA_VERSION``, e.g. "v6.4.1"),
    as vl-convert names it ("6.4")."""
    return ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])


@functools.lru_cache(maxsize=1)
def vega_bundle() -> str:
    """The Vega + Vega-Lite + Vega-Embed JavaScript bundle (vl-convert), computed once.

    Raises:
        ValueError: vl-convert has no bundle for Altair's Vega-Lite version (upgrade vl-convert-python).
    """
    import vl_convert as vlc

    version = vega_lite_version()
    if version not in vlc.get_vegalite_versions():
        raise ValueError(f"vl-convert {vlc.__version__} has no Vega-Lite {version} (Altair {alt.__version__}); "
                         f"it offers {', '.join(vlc.get_vegalite_versions())}: upgrade vl-convert-python")
    return vlc.javascript_bundle(vl_version=version)


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
    import vl_convert as vlc

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


__all__ = ["CHART_FORMATS", "chart_html", "save_chart", "vega_bundle", "vega_lite_version"]
