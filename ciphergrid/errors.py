"""One exception hierarchy, rooted at :class:`Error`.

Every error that ciphergrid raises on purpose is a subclass of ``Error``; the ones that are
about the caller's arguments are also ``ValueError`` so that code written against
pyca/cryptography (which raises ``ValueError`` for bad key sizes) keeps working.
The CLI turns any ``Error`` into a one-line message and exit code 2.
``InvalidTag`` is also pyca/cryptography's ``InvalidTag``, so code that swaps pyca's AEAD classes
for ours catches a failed tag unchanged.  It and its subclasses (:data:`TAG_ERRORS`) are made at
their first use (PEP 562 ``__getattr__``), with pyca's exceptions module: a sealed file that
opens imports neither.
"""

from __future__ import annotations


class Error(Exception):
    """Root of every ciphergrid error."""


class UnsupportedCipher(Error, ValueError):
    """The cipher or mode name is not registered."""


class InvalidKeySize(Error, ValueError):
    """The key has the wrong length for the cipher."""


class InvalidKey(Error, ValueError):
    """The key has the right length but is not acceptable (e.g. XTS with equal halves)."""


class InvalidIVSize(Error, ValueError):
    """The IV, nonce or tweak has the wrong length (or was given where none is taken)."""


class InvalidLength(Error, ValueError):
    """The data length does not suit the mode (e.g. ECB/CBC without padding, XTS < 16 bytes)."""


class InvalidPadding(Error, ValueError):
    """PKCS#7 padding did not check on decryption."""


class InvalidArgument(Error, ValueError):
    """Any other bad argument (bad hex, unknown option value...)."""


class AlreadyFinalized(Error):
    """update()/finalize() called on a context that was already finalized."""


class DeviceError(Error):
    """A device or runtime failed (compile error, out of memory, driver error)."""


class DeviceNotFound(DeviceError):
    """The requested device specification matches no device present."""


class ServiceError(DeviceError):
    """The encryption service failed or went away (``ciphergrid serve``): like a device's
    failure, exit code 5 on the command line."""


class WeakCipherWarning(UserWarning):
    """Encryption that the cipher's rules warn about: DES or TDEA allowed by allow_weak, a
    64-bit block cipher (the birthday bound: rekey well before 2^32 blocks), a weak DES key, or
    more blocks under one key than the limit, allowed by allow_weak."""


class EngineFailureWarning(UserWarning):
    """An engine of a scheduled run (``device="all"`` or a list) failed or hung: its ranges were
    run again by the others and the output is whole; the message says which and why."""


#: the failed-tag classes, made together at the first use of any (:func:`tag_error`)
TAG_ERRORS = ("InvalidTag", "CommitmentMismatch", "ChunkFailed", "Truncated")


def _tag_errors() -> tuple:
    from cryptography.exceptions import InvalidTag as _PycaInvalidTag

    class InvalidTag(Error, _PycaInvalidTag):
        """An authentication tag did not verify (AEAD modes; nothing is released).  Also a
        ``cryptography.exceptions.InvalidTag``: ``except cryptography.exceptions.InvalidTag``
        catches it."""

    class CommitmentMismatch(InvalidTag):
        """A sealed message's key commitment does not match its key: a wrong key, passphrase
        or context, or a damaged header (the commitment cannot tell them apart); nothing is
        released.  An ``InvalidTag`` (exit code 8 on the command line)."""

    class ChunkFailed(InvalidTag):
        """A chunk of a sealed message does not verify: altered, reordered, from another
        message, or the final chunk cut short.  ``chunk``: its number.  An ``InvalidTag`` (exit
        code 9 on the command line)."""

        def __init__(self, message: str = "", chunk: int | None = None):
            super().__init__(message)
            self.chunk = chunk

    class Truncated(InvalidTag):
        """A sealed message ends where no sealed message can: at a chunk boundary (its final
        chunk is gone), inside its header, or too short for a final chunk's tag.  An
        ``InvalidTag`` (exit code 10 on the command line)."""

    made = (InvalidTag, CommitmentMismatch, ChunkFailed, Truncated)
    for cls in made:
        cls.__qualname__ = cls.__name__   # (pickled by name, as a module-level class)
    return made


def tag_error(name: str, module: str = __name__):
    """The failed-tag class ``name`` (TAG_ERRORS), the four made together at the first use of
    any, the same for every thread; AttributeError (naming ``module``) for any other name."""
    if name not in TAG_ERRORS:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    made = globals().get("_TAGS_MADE") or globals().setdefault("_TAGS_MADE", _tag_errors())
    globals().update(zip(TAG_ERRORS, made))
    return made[TAG_ERRORS.index(name)]


__getattr__ = tag_error
