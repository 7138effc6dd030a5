"""Results store: Parquet layout, schema, atomic writes, reference cache and SQL views."""
__all__: list[str] = []
