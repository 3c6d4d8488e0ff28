"""`ciphergrid selftest`: every known-answer vector of every registered cipher on every device."""

from __future__ import annotations

import numpy as np

from . import aeads, api, registry
from .devices import devices, resolve


def run(device: str | None = None, quiet: bool = False) -> int:
    from . import vectors
    from .request import weak_use_allowed

    devs = [resolve(device)] if device else devices()
    rows = []
    failed = 0
    for d in devs:
        engine = registry.kind_of_runtime(d.runtime).name   # (its column of the table)
        for name in registry.names():
            spec = registry.lookup(name)
            if all(spec.capability(engine, e) is None for e in (True, False)):
                rows.append((d.spec, name, None, None))  # this engine lacks the cipher·mode
                continue
            vecs = vectors.load(name)
            ok = bad = 0
            for v in vecs:
                kw = {}
                if v.sector_size:
                    kw = {"sector_size": v.sector_size, "start_sector": v.start_sector}
                for enc, src, exp, allowed in ((True, v.plaintext, v.ciphertext, v.encrypt_ok),
                                              (False, v.ciphertext, v.plaintext, v.decrypt_ok)):
                    if not allowed or spec.capability(engine, enc) is None:
                        continue
                    f = api.encrypt if enc else api.decrypt
                    try:  # known answers: the policy's refusals (DES, TDEA) do not apply
                        with weak_use_allowed():
                            got = f(src, name, v.key, v.iv, device=d.spec, **kw)
                    except Exception:
                        got = None
                    if got == exp:
                        ok += 1
                    else:
                        bad += 1
            failed += bad
            rows.append((d.spec, name, ok, bad))
        for row in _aead_rows(d, engine):
            failed += row[3] or 0
            rows.append(row)
    if not quiet:
        print_table(rows, failed)
    missing = [r for r in rows if r[2] == 0 and r[3] == 0]  # (None: not run)
    return 1 if failed or missing else 0


def print_table(rows, failed: int) -> None:
    """One line per (device, cipher) under a header, every column as wide as its longest entry
    (names up to chacha20-poly1305 and camellia-128-ecb line up), then the totals."""
    head = ("device", "cipher", "passed", "failed")
    w0 = max(len(r[0]) for r in rows + [head])
    w1 = max(len(r[1]) for r in rows + [head])
    w2 = max([len(head[2])] + [len(str(r[2])) for r in rows if r[2] is not None])
    w3 = max([len(head[3])] + [len(str(r[3])) for r in rows if r[3] is not None])

    def line(dev, name, ok, bad, note="") -> str:
        return f"{dev:<{w0}}  {name:<{w1}}  {ok:>{w2}}  {bad:>{w3}}{note}"

    print(line(*head))
    for dev, name, ok, bad in rows:
        if ok is None:
            print(line(dev, name, "-", "-", f"  n/a ({dev} lacks it)"))
            continue
        print(line(dev, name, ok, bad, "" if bad == 0 and ok else ("  FAIL" if bad else "  NO VECTORS")))
    total = sum(r[2] for r in rows if r[2] is not None)
    print(f"{total} passed, {failed} failed")


def _aead_rows(d, engine: str):
    """The AEADs' vectors written in the data files (vectors/aead/), as one batch per cipher name,
    nonce length and tag length and direction; invalid vectors must fail to decrypt."""
    from .aead import decrypt_batch, encrypt_batch
    from .request import weak_use_allowed
    from .vectors import aeads as aead_vectors

    for spec in aeads.specs():
        if spec.capability(engine) is None:
            yield (d.spec, spec.name, None, None)
            continue
        groups: dict = {}
        for v in aead_vectors.load(spec.name, files=False):
            groups.setdefault((len(v.nonce), len(v.tag)), []).append(v)
        ok = bad = 0
        for (nl, tl), vs in groups.items():
            if (tl not in spec.aead.tag_lengths or nl not in spec.aead.nonce_lengths
                    or spec.capability(engine, nonce_len=nl, tag_length=tl) is None):
                continue
            kw = dict(keys=[v.key for v in vs], aad=[v.aad for v in vs], tag_length=tl, device=d.spec)
            good = [v for v in vs if v.valid]
            try:
                if good:
                    with weak_use_allowed():  # known answers repeat (key, nonce) pairs
                        enc = encrypt_batch([v.plaintext for v in good], spec.name, keys=[v.key for v in good],
                                            nonces=[v.nonce for v in good],
                                            aad=[v.aad for v in good], tag_length=tl, device=d.spec)
                    for v, got in zip(good, enc.messages):
                        ok, bad = (ok + 1, bad) if got == v.ciphertext + v.tag else (ok, bad + 1)
                dec = decrypt_batch([v.ciphertext + v.tag for v in vs], spec.name,
                                    nonces=np.array([list(v.nonce) for v in vs], dtype=np.uint8), **kw)
                for v, got in zip(vs, dec.messages):
                    right = got == v.plaintext if v.valid else got is None
                    ok, bad = (ok + 1, bad) if right else (ok, bad + 1)
            except Exception:
                bad += len(vs)
        yield (d.spec, spec.name, ok, bad)
