"""NumPy's ``.npy`` format for embedding matrices, read and written without NumPy.

:class:`FileEmbeddingCache` keeps AgentScope's file format (``np.save`` of the embeddings: a
float64 matrix, one row per text), so a cache directory can be shared with AgentScope. The
format (version 1.0) is a magic string, a little-endian header length, a Python-literal header
``{'descr': '<f8', 'fortran_order': False, 'shape': (rows, cols), }`` padded with spaces to a
multiple of 64 bytes, then the values. Writing one here keeps NumPy out of the cache's
dependencies; reading accepts what ``np.save`` writes for such a matrix (float64 or float32,
either byte order, versions 1.0 to 3.0).
"""

from __future__ import annotations

import ast
import struct
import sys
from array import array
from typing import TypeGuard, cast

import attrs

__all__ = [
    "MAX_HEADER_SIZE",
    "NpyFormatError",
    "NpyHeader",
    "check_size",
    "dumps_npy",
    "loads_npy",
    "read_header",
]

_MAGIC = b"\x93NUMPY"
_TYPECODES = {"f8": "d", "f4": "f"}


class NpyFormatError(ValueError):
    """The bytes are not a ``.npy`` file holding a float matrix."""


def dumps_npy(rows: list[list[float]]) -> bytes:
    """*rows* as a ``.npy`` file (float64; a 2-D matrix, or shape ``(0,)`` when empty, as
    ``np.save`` writes them).

    :raises ValueError: when the rows differ in length.
    """
    if not rows:
        shape: tuple[int, ...] = (0,)
    else:
        width = len(rows[0])
        if any(len(row) != width for row in rows):
            raise ValueError("embeddings of different lengths cannot be stored as one matrix")
        shape = (len(rows), width)
    values = array("d")
    for row in rows:
        values.extend(row)
    if sys.byteorder != "little":
        values.byteswap()
    header = f"{{'descr': '<f8', 'fortran_order': False, 'shape': {shape!r}, }}"
    # Magic (6) + version (2) + length (2) + header + "\n", padded to a multiple of 64.
    pad = (-(10 + len(header) + 1)) % 64
    header_bytes = (header + " " * pad + "\n").encode("latin1")
    return (
        _MAGIC
        + b"\x01\x00"
        + struct.pack("<H", len(header_bytes))
        + header_bytes
        + (values.tobytes())
    )


# np.load's own limit (``max_header_size``): np.save writes headers of ~120 bytes, and parsing a
# longer Python literal costs time and memory for nothing.
MAX_HEADER_SIZE = 10_000


@attrs.frozen
class NpyHeader:
    """What a ``.npy`` header says: the array's element type, shape and where its data starts."""

    typecode: str
    """The :mod:`array` type code of the elements (``"d"`` or ``"f"``)."""
    swap: bool
    """Whether the data's byte order is not this machine's."""
    shape: tuple[int, ...]
    offset: int
    """Where the data starts in the file."""

    @property
    def file_size(self) -> int:
        """The size of a file holding exactly this array, as np.save writes it."""
        count = 1
        for n in self.shape:
            count *= n
        return self.offset + count * array(self.typecode).itemsize


def read_header(prefix: bytes) -> NpyHeader:
    """The header of the ``.npy`` file starting with *prefix* (at least the header's bytes:
    ``MAX_HEADER_SIZE + 12`` suffice).

    :raises NpyFormatError: for anything but a valid header of a C-ordered float32/float64
        array of 1 or 2 dimensions, or a header longer than :data:`MAX_HEADER_SIZE`.
    """
    if not prefix.startswith(_MAGIC) or len(prefix) < 10:
        raise NpyFormatError("not a .npy file")
    major = prefix[6]
    if major == 1:
        (length,) = struct.unpack("<H", prefix[8:10])
        start = 10
    elif major in (2, 3):
        if len(prefix) < 12:
            raise NpyFormatError("truncated .npy header")
        (length,) = struct.unpack("<I", prefix[8:12])
        start = 12
    else:
        raise NpyFormatError(f".npy version {major} is not supported")
    if length > MAX_HEADER_SIZE:
        raise NpyFormatError(f".npy header of {length} bytes (at most {MAX_HEADER_SIZE})")
    if len(prefix) < start + length:
        raise NpyFormatError("truncated .npy header")
    try:
        header = ast.literal_eval(prefix[start : start + length].decode("latin1"))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise NpyFormatError(f"unreadable .npy header: {type(exc).__name__}") from None
    if not isinstance(header, dict):
        raise NpyFormatError("unreadable .npy header")
    descr, shape = header.get("descr"), header.get("shape")
    if not isinstance(descr, str) or descr[1:] not in _TYPECODES or descr[:1] not in "<>=|":
        raise NpyFormatError(f"a .npy of {descr!r} is not a float matrix")
    if header.get("fortran_order") is not False or not _is_matrix_shape(shape):
        raise NpyFormatError(f"a .npy of shape {shape!r} is not a matrix")
    file_order = "big" if descr[0] == ">" else "little"
    return NpyHeader(
        typecode=_TYPECODES[descr[1:]],
        swap=descr[0] in "<>" and file_order != sys.byteorder,
        shape=shape,
        offset=start + length,
    )


def check_size(header: NpyHeader, size: int) -> None:
    """:raises NpyFormatError: when a file of *size* bytes cannot hold exactly the array
    *header* describes (np.save writes nothing after the data)."""
    if size < header.file_size:
        raise NpyFormatError(
            f"truncated .npy: its header claims shape {header.shape!r} ({header.file_size} "
            f"bytes), the file has {size}"
        )
    if size > header.file_size:
        raise NpyFormatError(
            f"a .npy of shape {header.shape!r} is {header.file_size} bytes, the file has {size}"
        )


def _is_matrix_shape(shape: object) -> TypeGuard[tuple[int, ...]]:
    """Whether *shape* is a 1-D or 2-D shape of non-negative integers whose rows hold values
    (a matrix of rows of no values is no embedding)."""
    if not isinstance(shape, tuple) or len(shape) not in (1, 2):
        return False
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        return False
    return not (len(shape) == 2 and shape[0] > 0 and shape[1] == 0)


def loads_npy(data: bytes) -> list[list[float]]:
    """The rows of a ``.npy`` float matrix (a non-empty 1-D array is read as one row, an
    empty one as no rows).

    :raises NpyFormatError: for anything but a C-ordered float32/float64 array of 1 or 2
        dimensions whose data fills the rest of *data* exactly (see :func:`read_header`).
    """
    header = read_header(data[: MAX_HEADER_SIZE + 12])
    # Checked before anything is built: a header's shape may claim any number of rows.
    check_size(header, len(data))
    values = array(header.typecode)
    values.frombytes(data[header.offset :])
    if header.swap:
        values.byteswap()
    floats = cast("list[float]", values.tolist())
    if len(header.shape) == 1:
        return [] if header.shape[0] == 0 else [floats]
    rows, cols = header.shape
    return [floats[i * cols : (i + 1) * cols] for i in range(rows)]
