"""``ciphergrid list``, ``devices``, ``selftest``."""

from __future__ import annotations

from .common import EXIT_OK


# ------------------------------------------------------------------------------------ other commands
def _engines_text(caps: dict) -> str:
    # parallel engines first; of the serial ones OpenSSL first (one core beats one work-item)
    order = sorted((e for e, how in caps.items() if how),
                   key=lambda e: (caps[e] == "serial", caps[e] == "serial" and e != "openssl"))
    return ", ".join(e + (" (serial)" if caps[e] == "serial" else "") for e in order) or "-"


def _key_bits(lens) -> str:
    """"128 bits", or "40-128 bits" for a name that takes many key sizes (CAST-128)."""
    lo, hi = 8 * min(lens), 8 * max(lens)
    return f"{hi} bits" if lo == hi else f"{lo}-{hi} bits"


def _sizes(lens) -> dict:
    """A tuple of sizes as {"any_of": [...]}, a range as {"from": first, "to": last}."""
    if isinstance(lens, range):
        return {"from": lens.start, "to": lens.stop - 1}
    return {"any_of": list(lens)}


def _bytes_text(sizes: dict, default: int) -> str:
    if "from" in sizes:
        return f"{default} B ({sizes['from']}-{sizes['to']})"
    return " or ".join(str(n) for n in sizes["any_of"]) + " B"


def cmd_list(args) -> int:
    """Every cipher name with its key and IV sizes and the engines that run it, per direction
    (``--json``: one object per name)."""
    from ..registry import aliases, specs

    short = aliases()
    rows = []
    for s in specs():
        rows.append({"name": s.name, "aliases": short.get(s.name, []),
                     "algorithm": s.algorithm.name, "mode": s.mode.name,
                     "key_bytes": s.key_len, "key_bytes_accepted": list(s.key_lens),
                     "iv_bytes": s.iv_len, "block_bytes": s.block_size,
                     "engines": s.capabilities(),
                     "openssl_provider": s.algorithm.openssl_provider})
    from .. import aeads

    arows = []
    for a in aeads.specs():
        d = a.aead
        arows.append({"name": a.name, "aead": d.family, "key_bytes": a.key_len,
                      "nonce_bytes": _sizes(d.nonce_lengths), "default_nonce_bytes": d.default_nonce_length,
                      "tag_bytes": _sizes(d.tag_lengths), "default_tag_bytes": d.default_tag_length,
                      "max_message_bytes": d.max_message, "parallel_within_message": d.parallel_message,
                      "engines": a.capabilities(),
                      "constant_time": [n for n, k in d.implementations.items() if k.constant_time]})
    if args.json:
        import json

        print(json.dumps(rows + arows, indent=1))
        return EXIT_OK
    head = ("name", "key", "iv", "block", "encrypt on", "decrypt on")
    table = [(r["name"], _key_bits(r["key_bytes_accepted"]), f"{r['iv_bytes']} B" if r["iv_bytes"] else "-",
              f"{r['block_bytes']} B", _engines_text(r["engines"]["encrypt"]),
              _engines_text(r["engines"]["decrypt"])) for r in rows]
    widths = [max(len(t[i]) for t in table + [head]) for i in range(len(head))]
    for t in [head] + table:
        print("  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip())
    if arows:
        head = ("AEAD", "key", "nonce", "tag", "encrypt on", "decrypt on")
        table = [(r["name"], f"{8 * r['key_bytes']} bits", _bytes_text(r["nonce_bytes"], r["default_nonce_bytes"]),
                  _bytes_text(r["tag_bytes"], r["default_tag_bytes"]),
                  _engines_text(r["engines"]["encrypt"]), _engines_text(r["engines"]["decrypt"]))
                 for r in arows]
        widths = [max(len(t[i]) for t in table + [head]) for i in range(len(head))]
        print()
        for t in [head] + table:
            print("  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip())
    if short:
        print("OpenSSL's short names (as openssl enc takes them): "
              + ", ".join(f"{a} = {n}" for n, al in sorted(short.items()) for a in al))
    from ..registry import table_kinds

    print("".join(f"{k.name}: {k.label}; " for k in table_kinds())
          + "serial: one block after the other" + ("; for an AEAD, one message on one work-item "
                                                   "(batches of them run in parallel)" if arows else ""))
    return EXIT_OK



def cmd_devices(args) -> int:
    from ..devices import devices

    rows = [(d.spec, d.runtime, d.kind, d.name, str(d.compute_units), f"{d.memory / 2**30:.1f} GiB")
            for d in devices()]
    head = ("device", "runtime", "kind", "name", "units", "memory")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return EXIT_OK


def cmd_selftest(args) -> int:
    from ..selftest import run

    return run(device=args.device, quiet=args.quiet)
