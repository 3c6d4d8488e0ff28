"""`ciphergrid selftest`: every known-answer vector of every registered cipher on every device."""

from __future__ import annotations

from . import api, registry
from .devices import devices, resolve


def run(device: str | None = None, quiet: bool = False) -> int:
    from . import vectors
    from .request import weak_use_allowed

    devs = [resolve(device)] if device else devices()
    rows = []
    failed = 0
    for d in devs:
        engine = "openssl" if d.runtime == "native" else "device"
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
                    try:  # known answers: the policy's refusals (2-key TDEA) do not apply
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
    if not quiet:
        w = max(len(r[0]) for r in rows) if rows else 6
        print(f"{'device'.ljust(w)}  {'cipher':<14} {'passed':>7} {'failed':>7}")
        for spec, name, ok, bad in rows:
            if ok is None:
                print(f"{spec.ljust(w)}  {name:<14} {'-':>7} {'-':>7}  n/a ({spec} lacks it)")
                continue
            flag = "" if bad == 0 and ok else ("  FAIL" if bad else "  NO VECTORS")
            print(f"{spec.ljust(w)}  {name:<14} {ok:>7} {bad:>7}{flag}")
        total = sum(r[2] for r in rows if r[2] is not None)
        print(f"{total} passed, {failed} failed")
    missing = [r for r in rows if r[2] == 0 and r[3] == 0]  # (None: not run)
    return 1 if failed or missing else 0
