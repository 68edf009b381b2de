"""``srnet.machine``: the CPU's model name and flags, read from a ``/proc/cpuinfo``-like file."""

from __future__ import annotations

import platform

from srnet.machine import cpu_flags, cpu_model

CPUINFO = ("processor\t: 0\nmodel name\t: Test CPU @ 2.0GHz\nflags\t\t: fpu avx2 avx512_vnni\n\n"
           "processor\t: 1\nmodel name\t: Test CPU @ 2.0GHz\nflags\t\t: fpu avx2 avx512_vnni amx_int8\n")


def test_the_model_name_and_the_flags_of_every_cpu_are_read(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    assert cpu_model(str(path)) == "Test CPU @ 2.0GHz"
    assert cpu_flags(str(path)) == {"fpu", "avx2", "avx512_vnni", "amx_int8"}


def test_arm_features_count_as_flags_and_a_missing_file_gives_none(tmp_path):
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd bf16\nCPU part\t: 0xd40\n")
    assert cpu_flags(str(arm)) == {"fp", "asimd", "bf16"}
    assert cpu_model(str(arm)) == (platform.processor() or "unknown")
    assert cpu_flags(str(tmp_path / "missing")) == frozenset()
    assert cpu_model(str(tmp_path / "missing")) == (platform.processor() or "unknown")


def test_the_fastest_int8_path_is_named_when_a_cpu_has_several(tmp_path):
    """A CPU with AVX-VNNI and AVX512-VNNI (this session's Xeon) has the 512-bit one as its best."""
    from srnet.machine import cpu_int8_features

    path = tmp_path / "cpuinfo"
    path.write_text("flags\t: fpu avx2 avx512_vnni avx_vnni\n")
    assert cpu_int8_features(str(path)) == {"flags": ["avx2", "avx_vnni", "avx512_vnni"],
                                            "best": "AVX512-VNNI (one-instruction int8 dot products)"}
    path.write_text("flags\t: fpu avx2\n")
    assert cpu_int8_features(str(path))["best"].startswith("AVX2")
    assert cpu_int8_features(str(tmp_path / "missing"))["best"] == "unknown (no /proc/cpuinfo flags)"
