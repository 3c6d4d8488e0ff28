"""ciphergrid.settings: the transfer layer's options read from the environment (the variables'
names, defaults and one-line errors), and TransferSettings objects as values."""

from __future__ import annotations

import dataclasses
import os

import pytest

from ciphergrid import settings
from ciphergrid.errors import InvalidArgument

VARS = [settings.ENV_CHUNK, settings.ENV_DEPTH, settings.ENV_TUNING_CACHE, settings.ENV_AUTOTUNE,
        settings.ENV_HOST_THREADS, settings.ENV_PIN_GRAIN, settings.ENV_PIN_CACHE,
        settings.ENV_MAPPED_LOCK, settings.ENV_STREAM_MMAP, settings.ENV_PREFAULT]


@pytest.fixture
def clean_env(monkeypatch):
    for v in VARS:
        monkeypatch.delenv(v, raising=False)
    return monkeypatch


def test_variable_names():
    assert VARS == ["CIPHERGRID_CHUNK_SIZE", "CIPHERGRID_DEPTH", "CIPHERGRID_TUNING_CACHE",
                    "CIPHERGRID_AUTOTUNE", "CIPHERGRID_HOST_THREADS", "CIPHERGRID_PIN_GRAIN",
                    "CIPHERGRID_PIN_CACHE", "CIPHERGRID_MAPPED_LOCK", "CIPHERGRID_STREAM_MMAP",
                    "CIPHERGRID_PREFAULT"]


def test_defaults(clean_env, tmp_path):
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path))
    s = settings.transfer()
    assert s == settings.TransferSettings()
    assert (s.chunk_bytes, s.depth, s.autotune) == (None, None, True)
    assert s.tuning_cache == os.path.join(str(tmp_path), "ciphergrid", "tuning.json")
    assert s.host_threads == max(1, min(8, (os.cpu_count() or 2) // 2))
    assert s.pin_grain == settings.PIN_GRAIN == 64 << 20
    assert 0 < s.pin_cache <= 64 << 30
    assert (s.mapped_lock, s.stream_mmap, s.prefault_min) == ("none", "1", 256 << 20)
    hash(s)  # frozen: usable as a key (cached pipelines)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.depth = 2


def test_each_variable(clean_env, tmp_path):
    env = {settings.ENV_CHUNK: "8Mi", settings.ENV_DEPTH: "5",
           settings.ENV_TUNING_CACHE: str(tmp_path / "t.json"), settings.ENV_AUTOTUNE: "0",
           settings.ENV_HOST_THREADS: "100", settings.ENV_PIN_GRAIN: "1",
           settings.ENV_PIN_CACHE: "1Gi", settings.ENV_MAPPED_LOCK: "both",
           settings.ENV_STREAM_MMAP: "populate", settings.ENV_PREFAULT: " 64Mi "}
    for k, v in env.items():
        clean_env.setenv(k, v)
    s = settings.transfer()
    assert s == settings.TransferSettings(
        chunk_bytes=8 << 20, depth=5, tuning_cache=str(tmp_path / "t.json"), autotune=False,
        host_threads=64, pin_grain=os.sysconf("SC_PAGE_SIZE"), pin_cache=1 << 30,
        mapped_lock="both", stream_mmap="populate", prefault_min=64 << 20)
    clean_env.setenv(settings.ENV_PREFAULT, "0")
    clean_env.setenv(settings.ENV_HOST_THREADS, "0")
    s = settings.transfer()
    assert (s.prefault_min, s.host_threads) == (0, 1)
    for k in env:  # empty: the default
        clean_env.setenv(k, "")
    assert settings.transfer().chunk_bytes is None


@pytest.mark.parametrize("var,value,words", [
    (settings.ENV_CHUNK, "12 parsecs", "bad CIPHERGRID_CHUNK_SIZE"),
    (settings.ENV_CHUNK, "100", "chunk size must be between"),
    (settings.ENV_DEPTH, "many", "CIPHERGRID_DEPTH must be an integer"),
    (settings.ENV_DEPTH, "65", "CIPHERGRID_DEPTH"),  # (out of range: reported as "an integer")
    (settings.ENV_HOST_THREADS, "lots", "CIPHERGRID_HOST_THREADS must be an integer"),
    (settings.ENV_PIN_GRAIN, "big", "bad CIPHERGRID_PIN_GRAIN"),
    (settings.ENV_PIN_CACHE, "-1", "bad CIPHERGRID_PIN_CACHE"),
    (settings.ENV_PREFAULT, "soon", "bad CIPHERGRID_PREFAULT"),
])
def test_malformed_values_are_one_line_errors(clean_env, var, value, words):
    clean_env.setenv(var, value)
    with pytest.raises(InvalidArgument, match=words):
        settings.transfer()


def test_parse_bytes_and_limits():
    assert settings.parse_bytes("4096") == 4096
    assert settings.parse_bytes("64Ki") == settings.parse_bytes("64K") == 64 << 10
    assert settings.parse_bytes("8MiB") == 8 << 20 and settings.parse_bytes(" 1gb ") == 1 << 30
    assert settings.parse_bytes(7) == 7
    with pytest.raises(InvalidArgument, match="bad --size"):
        settings.parse_bytes("1.5Gi", "--size")
    assert settings.check_chunk(4096) == 4096 and settings.check_depth(64) == 64
    with pytest.raises(InvalidArgument):
        settings.check_chunk(settings.MAX_CHUNK + 1)
    with pytest.raises(InvalidArgument):
        settings.check_depth(0)
