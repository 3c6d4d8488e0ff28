"""The command line under a fuzzer (ciphergrid/testing/cli_fuzz.py): argument vectors for
encrypt, decrypt and list made from the parser's own options -- valid values, boundary and huge
integers, negative numbers, non-hex text, empty strings, unicode, missing files, directories and
/dev/zero as files -- run in this process.  Every run keeps the README's contract: an exit code of
0, 2, 3, 4 or 5; stderr only ``ciphergrid:`` lines, one error line on a failure and none on
success, never a traceback; nothing left in the output folder after a failure.

A fixed seed and a bounded run here (tiny inputs, the native engine); scripts/dev/fuzz_cli.py
runs any seed for as long as asked."""

from __future__ import annotations

import pytest

from ciphergrid.testing.cli_fuzz import Fuzzer, fuzz

SEED = 4648
CASES = 500
SECONDS = 20


def test_fuzzed_argument_vectors_keep_the_contract(tmp_path):
    n, bad = fuzz(SEED, str(tmp_path), cases=CASES, seconds=SECONDS)
    assert n >= min(CASES, 50), f"only {n} vectors ran in {SECONDS} s"
    assert not bad, f"{len(bad)} of {n} vectors broke the contract; the first:\n{bad[0].report()}"


@pytest.mark.parametrize("argv", [
    # each of these once broke it: a Rust panic, an OverflowError, a read that never ends
    ["encrypt", "-c", "aes-128-cbc", "--pbkdf2", "--pass", "pass:x", "--iter", str(2**31)],
    ["encrypt", "-c", "aes-128-cbc", "--pbkdf2", "--pass", "pass:x", "--iter", str(2**64)],
    ["encrypt", "-c", "aes-128-gcm", "--key", "00" * 16, "--nonce", "00" * 12, "--aad-file", "/dev/zero"],
])
def test_known_breakers(argv, tmp_path):
    fz = Fuzzer(SEED, str(tmp_path))
    res = fz.run(argv + ["--in", fz.files["d16"], "--out", str(tmp_path / "out" / "o"),
                         "--device", "native", "--service", "off"])
    assert res.code == 2 and not res.problems(), res.report()


def test_iteration_counts_are_refused_or_small(tmp_path):
    """The fuzzer's --iter values are refused by the parser or small: an accepted count near
    2^31 derives a key for hours, so a run with such a vector would never end."""
    import argparse

    from ciphergrid.cli.parser import _iterations

    fz = Fuzzer(SEED, str(tmp_path))
    for _ in range(2000):
        text = fz.value("encrypt", "iter", argparse.Action(["--iter"], "iter"))
        try:
            n = _iterations(text)
        except argparse.ArgumentTypeError:
            continue
        assert n <= 100_000, text
