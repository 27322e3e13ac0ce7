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
from typing import cast

__all__ = ["NpyFormatError", "dumps_npy", "loads_npy"]

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


def loads_npy(data: bytes) -> list[list[float]]:
    """The rows of a ``.npy`` float matrix (a non-empty 1-D array is read as one row, an
    empty one as no rows).

    :raises NpyFormatError: for anything but a C-ordered float32/float64 array of 1 or 2
        dimensions.
    """
    if not data.startswith(_MAGIC) or len(data) < 10:
        raise NpyFormatError("not a .npy file")
    major = data[6]
    if major == 1:
        (length,) = struct.unpack("<H", data[8:10])
        start = 10
    elif major in (2, 3):
        (length,) = struct.unpack("<I", data[8:12])
        start = 12
    else:
        raise NpyFormatError(f".npy version {major} is not supported")
    try:
        header = ast.literal_eval(data[start : start + length].decode("latin1"))
    except (ValueError, SyntaxError, UnicodeDecodeError) as exc:
        raise NpyFormatError(f"unreadable .npy header: {exc}") from None
    if not isinstance(header, dict):
        raise NpyFormatError("unreadable .npy header")
    descr, shape = header.get("descr"), header.get("shape")
    if not isinstance(descr, str) or descr[1:] not in _TYPECODES or descr[0] not in "<>=|":
        raise NpyFormatError(f"a .npy of {descr!r} is not a float matrix")
    if header.get("fortran_order") or not isinstance(shape, tuple) or len(shape) not in (1, 2):
        raise NpyFormatError(f"a .npy of shape {shape!r} is not a matrix")
    values = array(_TYPECODES[descr[1:]])
    body = data[start + length :]
    count = 1
    for n in shape:
        count *= n
    expected = count * values.itemsize
    if len(body) < expected:
        raise NpyFormatError(f"truncated .npy: {len(body)} of {expected} data bytes")
    values.frombytes(body[:expected])
    file_order = "big" if descr[0] == ">" else "little"
    if descr[0] in "<>" and file_order != sys.byteorder:
        values.byteswap()
    floats = cast("list[float]", values.tolist())
    if len(shape) == 1:
        return [] if shape[0] == 0 else [floats]
    rows, cols = shape
    return [floats[i * cols : (i + 1) * cols] for i in range(rows)]
