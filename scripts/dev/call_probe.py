"""4 KiB per call on a GPU, GPU-resident (issue 50, goal 3): the one-shot API with a fresh key
each call and a reused context's ``update_into``, for the rows the goal missed (every CBC
decryption, every XTS) and a CTR row beside them.  For each row and kind:

* the bytes first: one one-shot call against the oracle; a context fed four pieces (XTS: four
  4 KiB sectors) against the oracle's one message (a row that differs is reported, not timed);
* the device operations of one call in the steady state (the backend's launches L, uploads U,
  downloads D, allocations A, zeroings Z, events E, host waits W, counted by wrapping its
  methods);
* XTS rows also time the one-shot with its first launch's tweaks computed on the device (a
  tweak launch) rather than on the host (``XTSMode.first_launch``), in the same process;
* per call: ``wall`` (``calls`` calls back to back, then a synchronize, as ``bench api``),
  ``host`` (the same loop until its last call returned), ``gpu`` (CUDA events on the stream
  around the loop), the median of ``--repeats`` loops, in us.

    python scripts/dev/call_probe.py [--device cuda:0] [--cipher a,b] [--calls 200]
        [--repeats 3] [--budget 40] [--json OUT]

Rows stop once ``--budget`` seconds have passed (kernels compile at a row's first call).  On
an OpenCL device (no CuPy) the data are host arrays (the pipeline's path) and ``gpu`` is
absent: a check of the script, not of the goal.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from collections import Counter

import numpy as np

ROWS = ["aes-128-ctr", "aes-128-cbc", "aes-256-cbc", "des-ede3-cbc", "camellia-128-cbc",
        "clefia-256-cbc", "aes-128-xts", "aes-256-xts", "camellia-128-xts", "camellia-256-xts",
        "clefia-128-xts", "clefia-256-xts", "seed-xts"]
SIZE = 4096
GOALS_US = {"one-shot": 150.0, "context": 50.0}
OPS = (("launch", "L"), ("upload", "U"), ("download", "D"), ("alloc", "A"), ("zero", "Z"),
       ("event", "E"), ("wait", "W"))


class Counting:
    """The backend's operations counted (its instance's methods wrapped; ``undo`` restores)."""

    def __init__(self, b):
        self.b = b
        self.count: Counter = Counter()
        self.saved = {}
        for name in ("launch", "upload", "download", "alloc", "zero", "marker", "wait", "finish"):
            fn = getattr(b, name)
            self.saved[name] = b.__dict__.get(name)

            def wrapped(*a, _fn=fn, _name=name, **k):
                key = {"marker": "event", "finish": "wait"}.get(_name, _name)
                self.count[key] += 1
                if _name in ("launch", "upload", "download") and k.get("record", True):
                    self.count["event"] += 1
                if _name == "zero" and k.get("wait", True):
                    self.count["wait"] += 1
                return _fn(*a, **k)

            setattr(b, name, wrapped)

    def undo(self):
        for name, v in self.saved.items():
            if v is None:
                self.b.__dict__.pop(name, None)
            else:
                setattr(self.b, name, v)

    def per_call(self, calls: int) -> str:
        return " ".join(f"{self.count[k] / calls:g}{c}" for k, c in OPS if self.count[k]) or "-"


def _row(ciphergrid, oracle, registry, dev, cupy, name, args, rng, counting):
    spec = registry.lookup(name)
    encrypt = spec.mode.parallel(True)     # (as bench api: CBC decrypting)
    call = ciphergrid.encrypt if encrypt else ciphergrid.decrypt
    xp = cupy if cupy is not None else np
    host = (lambda a: cupy.asnumpy(a).tobytes()) if cupy is not None else (lambda a: bytes(a))
    data = rng.bytes(4 * SIZE)
    xs = [xp.asarray(np.frombuffer(data[i * SIZE:(i + 1) * SIZE], dtype=np.uint8)) for i in range(4)]
    x = xs[0]
    yy = xp.empty(2 * SIZE + 16, dtype=np.uint8)    # (update_into's buffer rule: + n - 1)
    y = yy[:SIZE]
    inputs = [oracle.random_inputs(name, rng.bytes, SIZE) for _ in range(64)]
    sync = cupy.cuda.get_current_stream().synchronize if cupy is not None else (lambda: None)
    out = {"cipher": name, "direction": "encrypt" if encrypt else "decrypt"}

    # the bytes
    key, iv, opts = inputs[0]
    call(x, name, key=key, iv=iv, device=dev, out=y, **opts)
    sync()
    if host(y) != oracle.crypt(name, key, iv, host(x), encrypt, **opts):
        return {**out, "error": "one-shot output differs from the oracle"}
    c = ciphergrid.Cipher(name, key, iv, device=dev, **opts)
    cc = c.encryptor() if encrypt else c.decryptor()
    got = b""
    for piece in xs:
        n = cc.update_into(piece, yy)
        got += host(yy[:n])
    got += cc.finalize()
    if got != oracle.crypt(name, key, iv, data, encrypt, **opts):
        c.close()
        return {**out, "error": "context output differs from the oracle's one message"}

    i = [0]

    def one_shot():
        key, iv, opts = inputs[i[0] % 64]
        i[0] += 1
        call(x, name, key=key, iv=iv, device=dev, out=y, **opts)

    cc = c.encryptor() if encrypt else c.decryptor()

    def context():
        cc.update_into(x, yy)

    kinds = [("one-shot", one_shot), ("context", context)]
    if spec.mode.name == "xts":     # (A/B: the first launch's tweaks from the device instead)
        kinds.append(("one-shot/device-tweaks", one_shot))
    for kind, fn in kinds:
        if kind == "one-shot/device-tweaks":
            spec.mode.first_launch = lambda req, n: None   # (shadows the method: undone below)
        try:
            out[kind] = _time(fn, args, cupy, sync, counting)
        finally:
            spec.mode.__dict__.pop("first_launch", None)
        out[kind]["goal_us"] = goal = GOALS_US[kind.split("/")[0]]
        out[kind]["met"] = out[kind]["wall_us"] <= goal
    c.close()
    return out


def _time(fn, args, cupy, sync, counting) -> dict:
    for _ in range(8):     # warm: compiled, windows made, pools filled
        fn()
    sync()
    counting.count.clear()
    for _ in range(16):
        fn()
    sync()
    ops = counting.per_call(16)
    counting.count.clear()
    walls, hosts, gpus = [], [], []
    for _ in range(args.repeats):
        if cupy is not None:
            e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
            e0.record()
        t0 = time.perf_counter()
        for _ in range(args.calls):
            fn()
        t1 = time.perf_counter()
        if cupy is not None:
            e1.record()
        sync()
        t2 = time.perf_counter()
        walls.append((t2 - t0) / args.calls * 1e6)
        hosts.append((t1 - t0) / args.calls * 1e6)
        if cupy is not None:
            gpus.append(cupy.cuda.get_elapsed_time(e0, e1) * 1e3 / args.calls)
    return {"wall_us": round(statistics.median(walls), 1),
            "host_us": round(statistics.median(hosts), 1),
            "gpu_us": round(statistics.median(gpus), 1) if gpus else None, "ops": ops}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--cipher", default=",".join(ROWS))
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", type=float, default=40.0, help="seconds; later rows are skipped")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    t_start = time.perf_counter()

    import ciphergrid
    from ciphergrid import registry
    from ciphergrid.route import engine
    from ciphergrid.testing import oracle

    eng = engine(args.device)
    cupy = None
    if eng.info.runtime == "cuda":
        import cupy

        cupy.cuda.Device(int(eng.info.spec.split(":")[1])).use()
    counting = Counting(eng.backend)
    rng = np.random.default_rng(1)
    rows, skipped = [], []
    print(f"{eng.info.spec} {eng.info.name}: 4 KiB a call, us (wall / host / gpu), ops a call")
    print(f"{'cipher':18s} {'dir':4s} | {'one-shot':>22s} {'ops':16s} | {'context':>22s} {'ops'}")
    for name in args.cipher.split(","):
        if time.perf_counter() - t_start > args.budget:
            skipped.append(name)
            continue
        try:
            r = _row(ciphergrid, oracle, registry, args.device, cupy, name, args, rng, counting)
        except Exception as e:   # a row that fails is reported, the others still run
            r = {"cipher": name, "error": f"{type(e).__name__}: {e}"}
        rows.append(r)
        if "error" in r:
            print(f"{name:18s} ERROR {r['error']}", flush=True)
            continue

        def cell(k):
            v = r[k]
            g = f"{v['gpu_us']:.1f}" if v["gpu_us"] is not None else "-"
            mark = "" if v["met"] else "*"
            return f"{v['wall_us']:7.1f}{mark:1s}/{v['host_us']:6.1f}/{g:>6s}", v["ops"]

        (a, ao), (b, bo) = cell("one-shot"), cell("context")
        print(f"{name:18s} {r['direction'][:3]:4s} | {a:>22s} {ao:16s} | {b:>22s} {bo}", flush=True)
        if "one-shot/device-tweaks" in r:
            d, do = cell("one-shot/device-tweaks")
            print(f"{'  (device tweaks)':18s} {'':4s} | {d:>22s} {do}", flush=True)
    counting.undo()
    took = time.perf_counter() - t_start
    print(f"(* over the goal: one-shot {GOALS_US['one-shot']:g} us, context "
          f"{GOALS_US['context']:g} us; {took:.1f} s" + (f"; skipped {','.join(skipped)}" if skipped
                                                        else "") + ")")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": eng.info.spec, "device_name": eng.info.name, "size": SIZE,
                       "calls": args.calls, "repeats": args.repeats, "rows": rows,
                       "skipped": skipped, "seconds": round(took, 1)}, f, indent=1)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
