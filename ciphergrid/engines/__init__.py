"""Engines under one protocol (base.py): ``device`` (our kernels on OpenCL / CUDA devices) and
``openssl`` (OpenSSL on the host's cores).  ``route`` picks one per request."""

from .base import Engine, Session

__all__ = ["Engine", "Session"]
