"""Read a GGUF file's metadata header without loading the weights.

Capabilities (context length, chat template) must be known before a model is
loaded, and loading a multi-gigabyte model only to read one integer is wasteful.
The header format: magic ``GGUF``, a version, the tensor and key-value counts,
then typed key-value pairs (little-endian).
"""

from __future__ import annotations

import functools
import struct
from pathlib import Path
from typing import BinaryIO

__all__ = ["GGUFError", "read_metadata"]

# value type id -> struct format of one element (strings and arrays are special)
_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9
_MAX_STRING = 64 * 1024 * 1024  # a corrupt length must not make us allocate gigabytes

Value = int | float | bool | str | None


class GGUFError(ValueError):
    """The file is not a readable GGUF model."""


def _read(f: BinaryIO, fmt: str) -> tuple[int | float | bool, ...]:
    size = struct.calcsize(fmt)
    data = f.read(size)
    if len(data) != size:
        raise GGUFError("file ends inside its metadata header")
    return struct.unpack(fmt, data)


def _string(f: BinaryIO) -> str:
    (length,) = _read(f, "<Q")
    if not isinstance(length, int) or length > _MAX_STRING:
        raise GGUFError(f"implausible string length {length} in metadata")
    data = f.read(length)
    if len(data) != length:
        raise GGUFError("file ends inside its metadata header")
    return data.decode("utf-8", errors="replace")


def _value(f: BinaryIO, kind: int) -> Value:
    """Read one value; arrays are skipped (returned as None): none is needed here."""
    if kind in _SCALARS:
        return _read(f, _SCALARS[kind])[0]
    if kind == _STRING:
        return _string(f)
    if kind == _ARRAY:
        item_kind, count = _read(f, "<IQ")
        assert isinstance(item_kind, int) and isinstance(count, int)
        if item_kind in _SCALARS:
            f.seek(struct.calcsize(_SCALARS[item_kind]) * count, 1)
        else:
            for _ in range(count):
                _value(f, item_kind)
        return None
    raise GGUFError(f"unknown metadata value type {kind}")


def read_metadata(path: Path) -> dict[str, Value]:
    """Every scalar and string key of ``path``'s GGUF header (arrays omitted).

    Cached per file version (path, size, modification time); the caller gets its
    own copy.
    """
    try:
        stat = path.stat()
    except OSError as exc:
        raise GGUFError(f"cannot read model file {path}: {exc.strerror or exc}") from exc
    return dict(_read_metadata(path, stat.st_size, stat.st_mtime_ns))


@functools.lru_cache(maxsize=16)
def _read_metadata(path: Path, _size: int, _mtime: int) -> dict[str, Value]:
    try:
        with path.open("rb") as f:
            if f.read(4) != b"GGUF":
                raise GGUFError(f"{path} is not a GGUF model file (bad magic number)")
            version, _tensors, count = _read(f, "<IQQ")
            if version not in (2, 3):
                raise GGUFError(f"{path}: unsupported GGUF version {version}")
            assert isinstance(count, int)
            metadata: dict[str, Value] = {}
            for _ in range(count):
                key = _string(f)
                (kind,) = _read(f, "<I")
                assert isinstance(kind, int)
                value = _value(f, kind)
                if value is not None:
                    metadata[key] = value
            return metadata
    except GGUFError as exc:
        message = str(exc)
        raise GGUFError(message if str(path) in message else f"{path}: {message}") from None
    except OSError as exc:
        raise GGUFError(f"cannot read model file {path}: {exc.strerror or exc}") from exc
