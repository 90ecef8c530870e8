"""Reading GGUF metadata without loading the model."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from heron.providers import default_model_path
from heron.providers._gguf import GGUFError, read_metadata


def test_the_embedded_models_metadata() -> None:
    metadata = read_metadata(default_model_path())
    assert metadata["general.architecture"] == "llama"
    assert metadata["llama.context_length"] == 8192
    assert "<|im_start|>" in str(metadata["tokenizer.chat_template"])


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def test_a_hand_built_header_with_every_value_kind(tmp_path: Path) -> None:
    pairs = [
        _string("a.u32") + struct.pack("<II", 4, 7),
        _string("a.f32") + struct.pack("<If", 6, 0.5),
        _string("a.bool") + struct.pack("<I?", 7, True),
        _string("a.ints") + struct.pack("<IIQ", 9, 5, 3) + struct.pack("<3i", 1, 2, 3),
        _string("a.strs") + struct.pack("<IIQ", 9, 8, 2) + _string("x") + _string("yy"),
        _string("a.name") + struct.pack("<I", 8) + _string("tiny"),
    ]
    file = tmp_path / "m.gguf"
    file.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(pairs)) + b"".join(pairs))
    assert read_metadata(file) == {"a.u32": 7, "a.f32": 0.5, "a.bool": True, "a.name": "tiny"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"PK\x03\x04 not a model", "not a GGUF model file"),
        (b"GGUF" + struct.pack("<IQQ", 9, 0, 0), "unsupported GGUF version 9"),
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 2) + _string("k"), "ends inside"),
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _string("k") + struct.pack("<I", 99), "type 99"),
    ],
)
def test_bad_files_are_refused_clearly(tmp_path: Path, content: bytes, message: str) -> None:
    file = tmp_path / "bad.gguf"
    file.write_bytes(content)
    with pytest.raises(GGUFError, match=message):
        read_metadata(file)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(GGUFError, match="cannot read model file"):
        read_metadata(tmp_path / "nope.gguf")
