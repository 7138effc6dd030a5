"""A fingerprint of table contents, bit for bit and independent of chunking.

Compaction writes a part batch by batch and checks it by reading it back; holding the part to
compare it with would cost the memory that streaming saves. So both sides are reduced to a
fingerprint: per column, digests of its validity, its fixed-width values (floats as their bits,
so NaN payloads and signed zeros count), string lengths and bytes, list lengths and
(recursively) list values. Equal fingerprints mean the same columns, types and values, up to a
hash collision (BLAKE2b, 256 bits).
"""
from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def _type_name(kind: pa.DataType) -> str:
    """A type as compared: a list's item field name is not part of it (Parquet names it ``element``)."""
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return f"list<{_type_name(kind.value_type)}>"
    return str(kind)


class ContentDigest:
    """What a stream of tables holds, bit for bit, whatever its chunking: per column, digests of
    its validity, its fixed-width values (floats as their bits), string lengths and bytes, list
    lengths and (recursively) values. Two streams with the same fingerprint hold the same
    columns, types and values (up to a hash collision); ``table()`` gives it as a small table
    that ``same_content`` compares, so the read-back check holds no part in memory."""

    def __init__(self):
        self.rows = 0
        self.names: list[str] | None = None
        self.types: list[str] = []
        self._digests: dict[str, "hashlib._Hash"] = {}

    def add(self, table: pa.Table) -> None:
        types = [_type_name(t) for t in table.schema.types]
        if self.names is None:
            self.names, self.types = list(table.schema.names), types
        elif list(table.schema.names) != self.names or types != self.types:
            self.names, self.types = self.names + ["<schema changed>"], self.types + [str(table.schema)]
        self.rows += table.num_rows
        for name, column in zip(table.schema.names, table.columns):
            self._column(name, column.combine_chunks())

    def _feed(self, where: str, data) -> None:
        digest = self._digests.get(where)
        if digest is None:
            digest = self._digests[where] = hashlib.blake2b(digest_size=32)
        digest.update(data)

    def _column(self, where: str, array: pa.Array) -> None:
        kind = array.type
        if pa.types.is_dictionary(kind):
            array, kind = array.dictionary_decode(), kind.value_type
        # one byte per value (bit-packing would pad each chunk differently)
        self._feed(where + "/null", array.is_null().to_numpy(zero_copy_only=False).tobytes())
        if pa.types.is_list(kind) or pa.types.is_large_list(kind):
            lengths = pc.fill_null(array.value_lengths(), 0).cast(pa.int64())
            self._feed(where + "/len", lengths.to_numpy(zero_copy_only=False).tobytes())
            self._column(where + "/item", array.flatten())
        elif pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            filled = pc.fill_null(array.cast(pa.large_binary()), b"")
            offsets = np.frombuffer(filled.buffers()[1], dtype=np.int64)[filled.offset: filled.offset + len(filled) + 1]
            self._feed(where + "/len", np.diff(offsets).tobytes())
            if len(filled) and offsets[-1] > offsets[0]:
                self._feed(where + "/bytes", memoryview(filled.buffers()[2])[offsets[0]:offsets[-1]])
        elif pa.types.is_boolean(kind):
            self._feed(where + "/val", pc.fill_null(array, False).to_numpy(zero_copy_only=False).tobytes())
        elif kind.bit_width in (8, 16, 32, 64) and not pa.types.is_decimal(kind):
            as_int = {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}[kind.bit_width]
            values = pc.fill_null(array.view(as_int), 0)  # floats as their bits: NaN payloads, -0.0
            self._feed(where + "/val", values.to_numpy(zero_copy_only=False).tobytes())
        else:  # no such column in the store's schemas; compared by value
            self._feed(where + "/repr", repr(array.to_pylist()).encode())

    def table(self) -> pa.Table:
        """The fingerprint as a table: the row count, each column's name and type, each digest."""
        names = ["<rows>", "<columns>"] + sorted(self._digests)
        values = [str(self.rows), repr(list(zip(self.names or [], self.types)))] + [
            self._digests[k].hexdigest() for k in sorted(self._digests)]
        return pa.table({"what": names, "value": values})
