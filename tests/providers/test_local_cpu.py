"""Whether the embedded model's weights are repacked, decided from real CPUs' feature flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from heron import UserError
from heron.providers import LocalProvider
from heron.providers._local_cpu import (
    REPACK_ENV,
    cpu_flags,
    decide_repack,
    parse_cpu_flags,
)

_COMMON = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ht syscall nx rdtscp lm constant_tsc nopl pni pclmulqdq ssse3 cx16 sse4_1 sse4_2 "
    "popcnt aes xsave"
)
# /proc/cpuinfo "flags" lines (the vector and matrix part in full) of real machines.
SAPPHIRE_RAPIDS = (
    f"{_COMMON} avx f16c fma bmi1 avx2 bmi2 avx512f avx512dq avx512ifma avx512cd avx512bw "
    "avx512vl avx_vnni avx512_bf16 avx512vbmi avx512_vbmi2 gfni vaes avx512_vnni avx512_bitalg "
    "avx512_vpopcntdq serialize tsxldtrk amx_bf16 avx512_fp16 amx_tile amx_int8"
)
GRANITE_RAPIDS = f"{SAPPHIRE_RAPIDS} amx_fp16 amx_complex"
ICE_LAKE_SERVER = (
    f"{_COMMON} avx f16c fma bmi1 avx2 bmi2 avx512f avx512dq avx512ifma avx512cd avx512bw "
    "avx512vl avx512vbmi avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg "
    "avx512_vpopcntdq"
)
ZEN_4 = (
    f"{_COMMON} avx f16c fma bmi1 avx2 bmi2 avx512f avx512dq avx512ifma avx512cd avx512bw "
    "avx512vl avx512_bf16 avx512vbmi avx512_vbmi2 gfni vaes avx512_vnni avx512_bitalg "
    "avx512_vpopcntdq"
)
HASWELL = f"{_COMMON} avx f16c fma bmi1 avx2 bmi2"
SANDY_BRIDGE = f"{_COMMON} avx"  # AVX, no AVX2
GRAVITON_3 = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid sve bf16"


@pytest.mark.parametrize(
    ("cpu", "flags", "repack"),
    [
        ("Sapphire Rapids (AMX)", SAPPHIRE_RAPIDS, False),
        ("Granite Rapids (AMX)", GRANITE_RAPIDS, False),
        ("Ice Lake server (AVX-512, no AMX)", ICE_LAKE_SERVER, True),
        ("Zen 4 (AVX-512)", ZEN_4, True),
        ("Haswell (AVX2 only)", HASWELL, True),
        ("Sandy Bridge (no AVX2)", SANDY_BRIDGE, True),
        ("Graviton 3 (Arm)", GRAVITON_3, True),
        ("unknown (no /proc/cpuinfo)", "", True),
    ],
)
def test_repacking_is_off_exactly_on_cpus_with_amx(cpu: str, flags: str, repack: bool) -> None:
    assert decide_repack(set(flags.split()), env={}) is repack, cpu


def test_a_single_amx_flag_is_enough_to_switch_repacking_off() -> None:
    for flag in ("amx_int8", "amx_tile", "amx_bf16"):
        assert decide_repack(set(HASWELL.split()) | {flag}, env={}) is False


@pytest.mark.parametrize(
    ("value", "amx", "repack"),
    [
        ("on", True, True),
        ("ON", True, True),
        ("off", False, False),
        (" Off ", False, False),
        ("auto", True, False),
        ("auto", False, True),
        ("", True, False),
    ],
)
def test_the_environment_overrides_the_cpu(value: str, amx: bool, repack: bool) -> None:
    flags = set(SAPPHIRE_RAPIDS.split() if amx else HASWELL.split())
    assert decide_repack(flags, env={REPACK_ENV: value}) is repack


def test_the_argument_overrides_the_environment_and_the_cpu() -> None:
    amx = set(SAPPHIRE_RAPIDS.split())
    assert decide_repack(amx, explicit=True, env={REPACK_ENV: "off"}) is True
    assert decide_repack(set(HASWELL.split()), explicit=False, env={REPACK_ENV: "on"}) is False


@pytest.mark.parametrize("value", ["yes", "1", "true", "amx"])
def test_a_bad_environment_value_is_a_clear_error(value: str) -> None:
    with pytest.raises(UserError, match=r"HERON_LOCAL_REPACK must be auto, on or off"):
        decide_repack(set(), env={REPACK_ENV: value})


def test_flags_are_read_from_cpuinfo_text(tmp_path: Path) -> None:
    text = (
        "processor\t: 0\nvendor_id\t: GenuineIntel\n"
        f"flags\t\t: {SAPPHIRE_RAPIDS}\nbugs\t\t: spectre_v1\n\n"
        f"processor\t: 1\nflags\t\t: {SAPPHIRE_RAPIDS}\n"
    )
    flags = parse_cpu_flags(text)
    assert {"avx2", "avx512f", "amx_int8"} <= flags
    assert "spectre_v1" not in flags and "GenuineIntel" not in flags
    assert parse_cpu_flags(f"Features\t: {GRAVITON_3}\n") == set(GRAVITON_3.split())
    info = tmp_path / "cpuinfo"
    info.write_text(text)
    assert cpu_flags(info) == flags
    assert cpu_flags(tmp_path / "missing") == frozenset()


def test_the_provider_takes_the_argument_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(REPACK_ENV, "on")
    assert LocalProvider().repack is True
    assert LocalProvider(repack=False).repack is False
    monkeypatch.setenv(REPACK_ENV, "off")
    assert LocalProvider().repack is False
    monkeypatch.setenv(REPACK_ENV, "sometimes")
    with pytest.raises(UserError, match="HERON_LOCAL_REPACK"):
        LocalProvider()
    monkeypatch.delenv(REPACK_ENV)
    assert LocalProvider().repack is decide_repack(cpu_flags(), env={})


def test_the_loaded_model_has_the_repacking_decided() -> None:
    provider = LocalProvider(n_ctx=512)
    llm = provider._load().llm
    assert bool(llm.model_params.use_extra_bufts) is provider.repack
    # Loads that are not Heron's still get llama.cpp's defaults.
    import llama_cpp.llama_cpp as bindings

    assert bindings.llama_model_default_params().use_extra_bufts is True
