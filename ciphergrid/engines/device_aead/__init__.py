"""The AEADs on a device: the device engine's drivers of the declarations of ``aeads/``.

* ``job.py``: ``Job``, a batch on one device (uploads, kernels in slices, downloads, the key
  wipe, the waits), its slices' edges (``Cut``) and the texts sent ahead of it (``Head``);
* ``driver.py``: ``DeviceAEAD``, the kernels of one AEAD name on one device (how a large batch is
  cut for it, the message layouts it remembers);
* one module per AEAD (``gcm.py``, ``chacha20_poly1305.py``, ``ascon.py``, ``aegis.py``): its
  driver and job classes over its kernel file.

A declaration names its driver (``aeads.base.Kernel.driver``: "gcm.GCMDriver"); ``build`` finds
the class and makes the driver.
"""

from __future__ import annotations

import importlib


def driver_class(kernel) -> type:
    """The DeviceAEAD subclass an implementation (``aeads.base.Kernel``) names: "MODULE.Class"
    for a module of this package, "package.module.Class" for one anywhere."""
    path, _, cls = kernel.driver.rpartition(".")
    module = (importlib.import_module(f"{__name__}.{path}") if "." not in path
              else importlib.import_module(path))
    return getattr(module, cls)


def build(backend, aead, name: str, impl: str | None = None, **options):
    """The driver of AEAD name ``name`` (of declaration ``aead``) on ``backend`` in its
    implementation ``impl`` (None: "fast"), its kernels built; ``options``: knobs that replace
    the implementation's own (development scripts)."""
    k = aead.implementation(impl)
    return driver_class(k)(backend, aead, name, **{**k.options, **options})
