"""Showing results: charts, chart files, the HTML page and its templates, tables, the output folder."""

__all__: list[str] = []
