"""Formats built on the AEADs' message batches: the sealed message of C2SP chunked encryption
(``cobblestone``) and its passphrase wrapper (``passphrase``), whose magic is told here: a
sealed file under a key is told from one under a passphrase without the wrapper's module."""

#: the passphrase wrapper's magic, the first bytes of a file sealed under a passphrase
PASS_MAGIC = b"CG-PASS\n"


def is_wrapped(prefix) -> bool:
    """Whether sealed bytes starting with ``prefix`` carry a passphrase wrapper (its magic)."""
    return bytes(prefix[:len(PASS_MAGIC)]) == PASS_MAGIC
