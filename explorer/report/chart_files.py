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
import hashlib
import json
import os
import re
from pathlib import Path

import altair as alt
import numpy as np

from ..errors import CacheError, UsageError
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

    The kept file carries its bundle's size and sha256 on its first line (``BUNDLE_HEADER``) and is
    checked against them when read: an emptied, truncated or altered file (or one without the
    line) is dropped and made again, so that a page never goes out without its Vega. A bundle
    that does not look like one (``_usable``), kept or made, is never used.

    Raises:
        CacheError: vl-convert has no bundle for Altair's Vega-Lite version (upgrade
            vl-convert-python), or the one it makes is not a usable bundle: one line.
    """
    import vl_convert as vlc

    version = vega_lite_version()
    cached = bundle_cache_path(vlc.__version__, version)
    kept = _read_kept(cached)
    if kept is not None:
        return kept
    if version not in vlc.get_vegalite_versions():
        raise CacheError(f"vl-convert {vlc.__version__} has no Vega-Lite {version} (Altair {alt.__version__}); "
                         f"it offers {', '.join(vlc.get_vegalite_versions())}: upgrade vl-convert-python")
    try:
        bundle = vlc.javascript_bundle(vl_version=version)
    except Exception as exc:  # noqa: BLE001 - the engine's own error, as one line
        raise CacheError(f"vl-convert {vlc.__version__} could not make the Vega bundle: {exc}") from None
    if not _usable(bundle):
        raise CacheError(f"vl-convert {vlc.__version__} made a Vega bundle of {len(bundle):,} characters without "
                         "the Vega libraries; no report is written without them (reinstall vl-convert-python)")
    _keep(cached, _with_header(bundle))
    return bundle


def bundle_digest() -> str:
    """sha256 of ``vega_bundle()`` (a millisecond): the report cache keys a page on it (a page
    kept with another bundle is never replayed)."""
    return hashlib.sha256(vega_bundle().encode("utf-8")).hexdigest()


# The first line of a kept bundle: its size in bytes (UTF-8) and its sha256.
BUNDLE_HEADER = "/* resnet-scaling-explorer vega bundle bytes={size} sha256={digest} */\n"
_HEADER_RE = re.compile(rb"/\* resnet-scaling-explorer vega bundle bytes=(\d{1,12}) sha256=([0-9a-f]{64}) \*/\n")
# Every bundle vl-convert makes defines this and is far larger than this many characters (about 0.9 MB):
# an empty or cut file is never taken for one.
_BUNDLE_MARK = "window.vegaEmbed="
_BUNDLE_MIN_CHARS = 100_000


def _usable(bundle: str) -> bool:
    return len(bundle) >= _BUNDLE_MIN_CHARS and _BUNDLE_MARK in bundle


def _with_header(bundle: str) -> str:
    data = bundle.encode("utf-8")
    return BUNDLE_HEADER.format(size=len(data), digest=hashlib.sha256(data).hexdigest()) + bundle


def _read_kept(path: Path) -> str | None:
    """The bundle kept at ``path`` when its first line's size and sha256 match the rest and it is
    usable; None otherwise, a damaged file removed (it is made again)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None  # not made yet here (or unreadable): make it
    match = _HEADER_RE.match(data)
    body = data[match.end():] if match else b""
    if match and int(match.group(1)) == len(body) and hashlib.sha256(body).hexdigest() == match.group(2).decode():
        with contextlib.suppress(UnicodeDecodeError):
            bundle = body.decode("utf-8")
            if _usable(bundle):
                return bundle
    with contextlib.suppress(OSError):
        path.unlink()  # damaged (emptied, cut, altered, of an older layout): dropped, made again
    return None


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


__all__ = ["BUNDLE_HEADER", "CHART_FORMATS", "EXPORT_FORMATS", "PAGE_FORMATS", "bundle_cache_path", "bundle_digest", "chart_html", "export_formats",
           "save_chart", "vega_bundle", "vega_lite_version"]
