"""Streaming base64 in the framing of ``openssl enc -a`` (``-base64``) and ``openssl base64``.

Writing: 64 characters a line (48 input bytes), every line, the last one included, ended by
``"\\n"``; no output at all for no input.  :class:`Base64Writer` gives byte-identical output for
any split of the input into ``write()`` calls.

Reading: :class:`Base64Reader` decodes what the writer makes and what OpenSSL makes, and more:
lines of any length (OpenSSL 3.0 mangles lines longer than about 1024 characters), whitespace
anywhere (spaces, tabs, ``"\\r\\n"``).  It is strict where OpenSSL is silent: a character outside
the alphabet, data after the ``=`` padding, or a last group of fewer than 4 characters (OpenSSL
quietly outputs nothing, or stops, for all of these) raise
:class:`~ciphergrid.errors.InvalidArgument`.  Like OpenSSL it does not check that the unused
low bits of the last character are zero.
"""

from __future__ import annotations

import binascii

import numpy as np

from .errors import InvalidArgument

__all__ = ["Base64Writer", "Base64Reader", "LINE_CHARS", "LINE_BYTES"]

LINE_CHARS = 64  # characters a line, as openssl writes them
LINE_BYTES = 48  # input bytes a full line holds
_EMIT_BYTES = LINE_BYTES * 65536  # encode at most 3 MiB of input per write() passed on

_WS = b" \t\n\r\v\f"
_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_VALID = _ALPHABET + b"=" + _WS


class Base64Writer:
    """Wraps ``write(bytes) -> None``: :meth:`write` passes on whole 64-character lines, each
    followed by ``"\\n"``; :meth:`close` passes on the last, partial line (nothing when no byte
    was written or the length is a multiple of 48).  It does not close what it wraps."""

    def __init__(self, write):
        self._write = write
        self._pending = bytearray()  # < 48 bytes not yet encoded
        self._closed = False

    def write(self, data) -> None:
        if self._closed:
            raise ValueError("write to a closed Base64Writer")
        with memoryview(data) as view:
            mv = view.cast("B") if view.format != "B" or view.ndim != 1 else view
            if self._pending:
                need = LINE_BYTES - len(self._pending)
                self._pending += mv[:need]
                mv = mv[need:]
                if len(self._pending) < LINE_BYTES:
                    return
                self._emit(self._pending)
                self._pending.clear()
            whole = len(mv) - len(mv) % LINE_BYTES
            for i in range(0, whole, _EMIT_BYTES):
                self._emit(mv[i:min(i + _EMIT_BYTES, whole)])
            self._pending += mv[whole:]

    def _emit(self, buf) -> None:
        """Encode ``buf`` (a multiple of 48 bytes) as whole lines."""
        enc = np.frombuffer(binascii.b2a_base64(buf, newline=False), dtype=np.uint8)
        lines = np.empty((len(enc) // LINE_CHARS, LINE_CHARS + 1), dtype=np.uint8)
        lines[:, :LINE_CHARS] = enc.reshape(-1, LINE_CHARS)
        lines[:, LINE_CHARS] = ord("\n")
        self._write(lines.tobytes())

    def close(self) -> None:
        """Write the last partial line; later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        if self._pending:
            self._write(binascii.b2a_base64(self._pending))  # with its "\n"
            self._pending.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Base64Reader:
    """Wraps ``read(n) -> bytes`` (``b""`` at end of input, any size of piece before that):
    :meth:`read` returns up to ``n`` decoded bytes, ``b""`` only at the end of the input."""

    def __init__(self, read, chunk: int = 1 << 16):
        self._read = read
        self._chunk = chunk
        self._out = bytearray()  # decoded, not yet returned
        self._carry = b""  # < 4 characters of an unfinished group; or, once padded, the last group
        self._padded = False
        self._eof = False

    @staticmethod
    def _bad(why: str) -> InvalidArgument:
        return InvalidArgument(f"--base64: the input is not valid base64 ({why})")

    def read(self, n: int = -1) -> bytes:
        """Up to ``n`` decoded bytes (all the rest when ``n`` is negative or None)."""
        if n is None or n < 0:
            while not self._eof:
                self._fill(self._chunk)
            n = len(self._out)
        while len(self._out) < n and not self._eof:
            self._fill(n - len(self._out))
        if n >= len(self._out):
            data = bytes(self._out)
            self._out.clear()
        else:
            data = bytes(self._out[:n])
            del self._out[:n]
        return data

    def _fill(self, want: int) -> None:
        size = max(self._chunk, (want + 2) // 3 * 4 + want // LINE_BYTES + 2)
        raw = self._read(size)
        if not raw:
            self._finish()
            return
        if not isinstance(raw, (bytes, bytearray)):
            raw = bytes(raw)
        if raw.translate(None, _VALID):
            raise self._bad("a character outside A-Z a-z 0-9 + / =")
        chars = self._carry + raw.translate(None, _WS)
        if self._padded:
            if len(chars) > 4:
                raise self._bad("data after the '=' padding")
            self._carry = chars
            return
        pad = chars.find(b"=")
        if pad >= 0:
            self._padded = True
            cut = pad - pad % 4
            if len(chars) - cut > 4:
                raise self._bad("data after the '=' padding")
        else:
            cut = len(chars) - len(chars) % 4
        if cut:
            self._out += binascii.a2b_base64(chars[:cut] if cut < len(chars) else chars)
        self._carry = chars[cut:]

    def _finish(self) -> None:
        self._eof = True
        last, self._carry = self._carry, b""
        if not last:
            return
        if len(last) != 4:
            raise self._bad("it ends inside a 4-character group")
        if self._padded:
            pad = last.find(b"=")
            if pad < 2 or last[pad:] != b"=" * (4 - pad):
                raise self._bad("misplaced '=' padding")
        self._out += binascii.a2b_base64(last)
