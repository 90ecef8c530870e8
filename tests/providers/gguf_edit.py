"""Copy a GGUF model with one string metadata value changed (for tests of template handling)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def _u(f: BinaryIO, fmt: str) -> int:
    value = struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]
    assert isinstance(value, int)
    return value


def _skip_string(f: BinaryIO) -> None:
    f.seek(_u(f, "<Q"), 1)


def _skip_value(f: BinaryIO, kind: int) -> None:
    if kind in _SIZES:
        f.seek(_SIZES[kind], 1)
    elif kind == 8:
        _skip_string(f)
    else:
        item, count = _u(f, "<I"), _u(f, "<Q")
        for _ in range(count):
            _skip_value(f, item)


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def with_metadata(source: Path, target: Path, key: str, value: str) -> Path:
    """Write ``source`` to ``target`` with the string ``key`` set to ``value``."""
    with source.open("rb") as f:
        assert f.read(4) == b"GGUF"
        version, tensors, count = struct.unpack("<IQQ", f.read(20))
        pairs: list[bytes] = []
        alignment = 32
        for _ in range(count):
            start = f.tell()
            key_len = _u(f, "<Q")
            name = f.read(key_len).decode()
            kind = _u(f, "<I")
            value_start = f.tell()
            _skip_value(f, kind)
            end = f.tell()
            if name == "general.alignment":
                f.seek(value_start)
                alignment = _u(f, "<I")
                f.seek(end)
            if name != key:
                f.seek(start)
                pairs.append(f.read(end - start))
        pairs.append(_string(key) + struct.pack("<I", 8) + _string(value))
        infos_start = f.tell()
        for _ in range(tensors):
            _skip_string(f)
            dims = _u(f, "<I")
            f.seek(8 * dims + 4 + 8, 1)
        infos_end = f.tell()
        f.seek(infos_start)
        infos = f.read(infos_end - infos_start)
        data_start = -(-infos_end // alignment) * alignment
        f.seek(data_start)
        data = f.read()
    header = b"GGUF" + struct.pack("<IQQ", version, tensors, len(pairs)) + b"".join(pairs) + infos
    padding = b"\0" * (-len(header) % alignment)
    target.write_bytes(header + padding + data)
    return target
