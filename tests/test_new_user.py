"""Defects a new user met following the README, each checked where it was fixed."""

from __future__ import annotations

import types

from ciphergrid import fileio
from ciphergrid.cli import seal as cli_seal


def _said(capsys, tmp_path, verb: str, through: bool = False, size: int = 100) -> str:
    src_path = tmp_path / "in"
    src_path.write_bytes(b"x" * size)
    args = types.SimpleNamespace(verbose=True)
    where = ("the-device", False, "")
    src = fileio.Input(str(src_path))
    try:
        with fileio.Output("/dev/null" if through else str(tmp_path / "out")) as out:
            cli_seal._say_where(args, _Scheme(), verb, where, src, out)
    finally:
        src.f.close()
    return capsys.readouterr().err


class _Scheme:
    name = "cobblestone-128"


def test_seal_v_says_one_batch_between_regular_files(capsys, tmp_path, monkeypatch):
    """seal/open -v on a device said "AEAD batches of 64 MiB" where the whole message runs as
    one batch over the mapped files (transfer.sealed.mapped); a stream keeps the pieces."""
    monkeypatch.delenv("CIPHERGRID_STREAM_MMAP", raising=False)
    for verb in ("seal", "open"):
        line = _said(capsys, tmp_path, verb)
        assert line == (f"ciphergrid: cobblestone-128 {verb} on the-device (the whole message "
                        "one AEAD batch over the mapped files)\n")
    line = _said(capsys, tmp_path, "seal", through=True)
    assert line == "ciphergrid: cobblestone-128 seal on the-device (AEAD batches of 64 MiB)\n"
    monkeypatch.setenv("CIPHERGRID_STREAM_MMAP", "0")
    line = _said(capsys, tmp_path, "open")
    assert line == "ciphergrid: cobblestone-128 open on the-device (AEAD batches of 64 MiB)\n"
