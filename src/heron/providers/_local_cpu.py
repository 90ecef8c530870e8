"""Whether llama.cpp may repack the embedded model's weights on this CPU: not where its
AMX path crashes (ARCHITECTURE.md says why and what repacking is worth)."""

from __future__ import annotations

import functools
import os
from collections.abc import Collection, Mapping
from pathlib import Path

from .._core import UserError

__all__ = [
    "AMX_FLAGS",
    "REPACK_ENV",
    "cpu_flags",
    "decide_repack",
    "parse_cpu_flags",
    "repack_safe",
]

REPACK_ENV = "HERON_LOCAL_REPACK"
"""Environment variable overriding the repacking decision: ``auto``, ``on`` or ``off``."""
AMX_FLAGS = frozenset({"amx_int8", "amx_tile", "amx_bf16", "amx_fp16", "amx_complex"})
"""Linux ``/proc/cpuinfo`` flags of Intel AMX: any of them sends llama.cpp down its AMX path."""
_ENV_VALUES = {"auto": None, "on": True, "off": False}


def parse_cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The feature flags in the text of ``/proc/cpuinfo`` (x86 ``flags``, Arm ``Features``)."""
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() in ("flags", "features"):
            flags.update(value.split())
    return frozenset(flags)


@functools.cache
def cpu_flags(path: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """This machine's CPU feature flags; empty where ``/proc/cpuinfo`` cannot be read."""
    try:
        return parse_cpu_flags(path.read_text(errors="replace"))
    except OSError:
        return frozenset()


def repack_safe(flags: Collection[str]) -> bool:
    """Whether weight repacking is safe on a CPU with these flags: not with AMX."""
    return AMX_FLAGS.isdisjoint(flags)


def decide_repack(
    flags: Collection[str],
    *,
    explicit: bool | None = None,
    env: Mapping[str, str] | None = None,
) -> bool:
    """Whether to load weights with repacking (llama.cpp's ``use_extra_bufts``).

    ``explicit`` (the provider's ``repack`` argument) wins; then
    ``HERON_LOCAL_REPACK`` in ``env`` (default: ``os.environ``), ``auto`` meaning
    no override; then the CPU: on, unless it has AMX.

    >>> decide_repack({"avx2", "amx_int8"})
    False
    >>> decide_repack({"avx2", "amx_int8"}, env={"HERON_LOCAL_REPACK": "on"})
    True
    """
    if explicit is not None:
        return explicit
    raw = (os.environ if env is None else env).get(REPACK_ENV, "")
    value = raw.strip().lower() or "auto"
    if value not in _ENV_VALUES:
        raise UserError(f"{REPACK_ENV} must be auto, on or off, got {raw!r}")
    chosen = _ENV_VALUES[value]
    return repack_safe(flags) if chosen is None else chosen
