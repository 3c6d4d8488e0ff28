"""What one call costs the device: launches, copies and allocations per piece of a message run
through one keyed program (a context's pieces), and the bytes they give, on the OpenCL CPU
device (PoCL) through the same KeyedProgram calls the GPU-resident paths make.

A context's later pieces each take ONE launch, no copy, no allocation and no wait: CBC's
chaining value stays on the device (program.DeviceChain), XTS's segment tweaks come from the
program's tweak window (modes/xts.py)."""

from __future__ import annotations

import numpy as np
import pytest

from ciphergrid import registry
from ciphergrid.modes import xts as xts_mode
from ciphergrid.program import DeviceChain, KeyedProgram
from ciphergrid.request import make_request
from ciphergrid.testing import oracle
from conftest import wrap_methods


@pytest.fixture(scope="module")
def backend(cpu_backend):
    return cpu_backend


class Ops:
    """Counts the backend's device operations (the instance's methods wrapped)."""

    NAMES = ("launch", "upload", "download", "alloc", "zero", "marker", "wait", "finish")

    def __init__(self, b, monkeypatch):
        self.calls: list = []

        def on_call(name, a, k, call):
            self.calls.append((name, a[1] if name == "launch" else None))
            return call()

        wrap_methods(b, self.NAMES, monkeypatch, on_call)

    def take(self) -> list:
        out, self.calls = self.calls, []
        return out


def _device(b, data: bytes):
    buf = b.alloc(len(data))
    b.wait(b.upload(buf, np.frombuffer(data, dtype=np.uint8)))
    return buf


def _host(b, buf, n: int) -> bytes:
    out = np.empty(n, dtype=np.uint8)
    b.wait(b.download(out, buf))
    return out.tobytes()


@pytest.mark.parametrize("name", ["aes-128-cbc", "des-ede3-cbc"])
@pytest.mark.parametrize("encrypt", [False, True])
def test_cbc_pieces_keep_the_chain_on_the_device(backend, monkeypatch, rng, name, encrypt):
    """Pieces of one CBC message through a DeviceChain give the one-shot bytes; from the second
    piece on each is one launch and nothing else (decryption: also the first, whose IV goes as
    arguments); the chain reads back as the last ciphertext block."""
    spec = registry.lookup(name)
    bs = spec.block_size
    key, iv = rng.key(name), rng.iv(name)
    sizes = [3 * bs, bs, 7 * bs, 2 * bs]
    data = rng.data(sum(sizes))
    want = oracle.crypt(name, key, iv, data, encrypt)
    req = make_request(spec, key, iv, encrypt)
    b = backend
    with KeyedProgram(b, req) as kp:
        chain = DeviceChain(b, bs, iv)
        ins = [_device(b, data[a: a + n]) for a, n in _spans(sizes)]
        outs = [b.alloc(n) for n in sizes]
        ops = Ops(b, monkeypatch)
        for i, ((a, n), src, dst) in enumerate(zip(_spans(sizes), ins, outs)):
            kp.enqueue(src, dst, n // bs, 0, chain=chain, record=False)
            seen = ops.take()
            want_ops = [("launch", "cg_cbc_enc" if encrypt else "cg_cbc_dec")]
            if encrypt and i == 0:
                want_ops = [("upload", None)] + want_ops   # (the IV into the chain's buffer)
            assert seen == want_ops, (i, seen)
        monkeypatch.undo()
        got = b"".join(_host(b, dst, n) for dst, n in zip(outs, sizes))
        assert got == want
        last = (want if encrypt else data)[-bs:]
        assert chain.value() == last


@pytest.mark.parametrize("encrypt", [False, True])
def test_cbc_chain_moving_to_another_queue_waits_for_its_writer(backend, monkeypatch, rng,
                                                                encrypt):
    """A DeviceChain's pieces alternating between two queues (a context's GPU pieces on the
    caller's stream of the moment): a launch on another queue than the chain's last writer
    waits on the device for a marker of that queue (else it reads the chain before the other
    queue's kernel has written it); on one queue nothing is added; the one-shot bytes."""
    name = "aes-128-cbc"
    spec = registry.lookup(name)
    bs = spec.block_size
    key, iv = rng.key(name), rng.iv(name)
    sizes = [4 * bs, 2 * bs, 5 * bs, bs]
    data = rng.data(sum(sizes))
    want = oracle.crypt(name, key, iv, data, encrypt)
    req = make_request(spec, key, iv, encrypt)
    b = backend
    queues = [b.default_queue, b.default_queue, b.queue(), b.default_queue]
    with KeyedProgram(b, req) as kp:
        chain = DeviceChain(b, bs, iv)
        ins = [_device(b, data[a: a + n]) for a, n in _spans(sizes)]
        outs = [b.alloc(n) for n in sizes]
        ops = Ops(b, monkeypatch)
        for i, ((a, n), src, dst) in enumerate(zip(_spans(sizes), ins, outs)):
            kp.enqueue(src, dst, n // bs, 0, queues[i], chain=chain, record=False)
            seen = [op for op, _ in ops.take()]
            moved = i > 0 and queues[i] is not queues[i - 1]
            assert ("marker" in seen) == moved, (i, seen)
            if moved:
                assert seen.index("marker") < seen.index("launch"), (i, seen)
        monkeypatch.undo()
        for q in set(queues):
            b.finish(q)
        got = b"".join(_host(b, dst, n) for dst, n in zip(outs, sizes))
        assert got == want
        assert chain.value() == (want if encrypt else data)[-bs:]


def test_cbc_calls_of_their_own_reuse_the_programs_scratch(backend, monkeypatch, rng):
    """CBC encryption without a chain buffer (a call of its own) takes the program's scratch:
    a program launched many times allocates once at most (none where the key ring holds a
    buffer), not once a launch."""
    name = "aes-128-cbc"
    spec = registry.lookup(name)
    key, iv = rng.key(name), rng.iv(name)
    data = rng.data(64)
    b = backend
    with KeyedProgram(b, make_request(spec, key, iv, True)) as kp:
        src, dst = _device(b, data), b.alloc(64)
        ops = Ops(b, monkeypatch)
        for _ in range(4):
            kp.enqueue(src, dst, 4, 0, chain=iv)
        allocs = [c for c in ops.take() if c[0] == "alloc"]
        monkeypatch.undo()
        assert len(allocs) <= 1, allocs
        assert _host(b, dst, 64) == oracle.crypt(name, key, iv, data, True)


def _spans(sizes):
    a = 0
    for n in sizes:
        yield a, n
        a += n


@pytest.mark.parametrize("encrypt", [True, False])
def test_xts_pieces_read_the_tweak_window(backend, monkeypatch, rng, encrypt):
    """A context's XTS pieces (one program, the request from each piece's sector on): the first
    piece computes its own segment tweaks, the next a window ahead, the later ones within it
    launch the data kernel alone; past the window's end, or back before it, a new window.  Every
    piece gives the one-shot bytes."""
    name = "aes-128-xts"
    spec = registry.lookup(name)
    sector = 4096
    key, _, opts = oracle.random_inputs(name, rng.data, sector)
    monkeypatch.setattr(xts_mode, "WINDOW_SEGMENTS", 8)   # 4 sectors of 2 segments
    nsec = 7
    data = rng.data(nsec * sector)
    want = oracle.crypt(name, key, None, data, encrypt, sector_size=sector, start_sector=5)
    req = make_request(spec, key, None, encrypt, None, sector, 5)
    b = backend
    order = [0, 1, 2, 3, 4, 5, 6, 1, 2]    # sectors, one piece each (the last two: back again)
    expect = [2, 2, 1, 1, 1, 2, 1, 2, 1]   # launches: own, window 1-4, hits, window 5-8 ...
    with KeyedProgram(b, req) as kp:
        ops = Ops(b, monkeypatch)
        for u, nl in zip(order, expect):
            piece = req.at(u * sector // 16)
            lay = piece.mode.layout(piece, sector)
            src = _device(b, data[u * sector: (u + 1) * sector])
            dst = b.alloc(sector)
            ops.take()
            kp.enqueue(src, dst, lay.kernel_blocks, 0, layout=lay, req=piece, record=False)
            seen = ops.take()
            launches = [k for op, k in seen if op == "launch"]
            assert len(launches) == nl and launches[-1] == ("cg_xts_enc" if encrypt else
                                                            "cg_xts_dec"), (u, seen)
            assert [op for op, _ in seen if op != "launch"] in ([], ["alloc"]), (u, seen)
            got = _host(b, dst, sector)
            assert got == want[u * sector: (u + 1) * sector], u


def test_xts_window_spans_units_of_several_segments(backend, monkeypatch, rng):
    """Sectors of three segments (384 blocks): pieces of two sectors each, starting anywhere in
    the window, give the one-shot bytes."""
    name = "aes-128-xts"
    spec = registry.lookup(name)
    sector = 16 * 384
    key, _, _ = oracle.random_inputs(name, rng.data, sector)
    monkeypatch.setattr(xts_mode, "WINDOW_SEGMENTS", 12)
    data = rng.data(8 * sector)
    start = (1 << 64) - 3     # (the tweak input carries into its high half)
    want = oracle.crypt(name, key, None, data, True, sector_size=sector, start_sector=start)
    req = make_request(spec, key, None, True, None, sector, start)
    b = backend
    with KeyedProgram(b, req) as kp:
        for u in (0, 2, 3, 1, 5, 6, 4):
            piece = req.at(u * sector // 16)
            n = min(2, 8 - u) * sector
            lay = piece.mode.layout(piece, n)
            src, dst = _device(b, data[u * sector: u * sector + n]), b.alloc(n)
            kp.enqueue(src, dst, lay.kernel_blocks, 0, layout=lay, req=piece)
            assert _host(b, dst, n) == want[u * sector: u * sector + n], u


def test_xts_pieces_on_two_queues(backend, monkeypatch, rng):
    """Pieces alternating between two queues each compute their own tweaks (a window is one
    queue's: the other queue's launches are not ordered after its tweak launch) and give the
    one-shot bytes."""
    name = "aes-128-xts"
    spec = registry.lookup(name)
    sector = 4096
    key, _, _ = oracle.random_inputs(name, rng.data, sector)
    data = rng.data(4 * sector)
    want = oracle.crypt(name, key, None, data, False, sector_size=sector, start_sector=0)
    req = make_request(spec, key, None, False, None, sector, 0)
    b = backend
    queues = [b.default_queue, b.queue()]
    with KeyedProgram(b, req) as kp:
        ops = Ops(b, monkeypatch)
        outs = []
        for u in range(4):
            piece = req.at(u * sector // 16)
            lay = piece.mode.layout(piece, sector)
            src, dst = _device(b, data[u * sector: (u + 1) * sector]), b.alloc(sector)
            ops.take()
            kp.enqueue(src, dst, lay.kernel_blocks, 0, queues[u % 2], layout=lay, req=piece)
            assert [k for op, k in ops.take() if op == "launch"] == ["cg_xts_seg", "cg_xts_dec"]
            outs.append(dst)
        monkeypatch.undo()
        for q in queues:
            b.finish(q)
        got = b"".join(_host(b, d, sector) for d in outs)
        assert got == want


@pytest.mark.parametrize("name,sector,n", [("aes-128-xts", 4096, 4096), ("aes-256-xts", 512, 4096),
                                           ("aes-128-xts", None, 4096 + 5),
                                           ("camellia-128-xts", 16 * 384, 2 * 16 * 384),
                                           ("clefia-256-xts", 4096, 4096)])
@pytest.mark.parametrize("encrypt", [True, False])
def test_xts_one_shot_tweaks_from_the_host(backend, monkeypatch, rng, name, sector, n, encrypt):
    """A one-shot program told its launch's size (as DeviceEngine.crypt_resident's) gets that
    launch's segment tweaks from the host with its keys, where the cipher's block function on
    the host is OpenSSL's or its own ``host_encrypt`` (CLEFIA's): one launch, no tweak key on the device; a later launch elsewhere in
    the message uploads the tweak key then and computes its own.  Both give the oracle's bytes."""
    spec = registry.lookup(name)
    key, iv, opts = oracle.random_inputs(name, rng.data, sector)
    start = 7 if sector else None
    data = rng.data(2 * n)
    want = oracle.crypt(name, key, iv, data[:n], encrypt, **opts,
                        **({"start_sector": start} if sector else {}))
    req = make_request(spec, key, iv, encrypt, None, sector, start)
    b = backend
    lay = req.mode.layout(req, n)
    with KeyedProgram(b, req, first_bytes=n) as kp:
        assert kp.rk[1] is None
        ops = Ops(b, monkeypatch)
        src, dst = _device(b, data[:n]), b.alloc(n)
        ops.take()
        kp.enqueue(src, dst, lay.kernel_blocks, 0, layout=lay)
        launches = [k for op, k in ops.take() if op == "launch"]
        assert launches == ["cg_xts_enc" if encrypt else "cg_xts_dec"]
        monkeypatch.undo()
        got = _host(b, dst, n)
        assert got[: 16 * lay.kernel_blocks] == want[: 16 * lay.kernel_blocks]
        if sector:     # the next sectors through the same program: the tweak key goes up now
            later = req.at(n // 16)
            want2 = oracle.crypt(name, key, None, data[n:], encrypt, sector_size=sector,
                                 start_sector=start + n // sector)
            src2, dst2 = _device(b, data[n:]), b.alloc(n)
            kp.enqueue(src2, dst2, lay.kernel_blocks, 0, layout=lay, req=later)
            assert kp.rk[1] is not None
            assert _host(b, dst2, n) == want2


def test_xts_one_shot_without_a_host_block_computes_its_tweaks(backend, monkeypatch, rng):
    """A cipher OpenSSL lacks and without ``host_encrypt`` (CLEFIA's taken away here) keeps the
    tweak launch, and launches it first: only the tweak key goes up with the program, the data
    key is expanded and uploaded after the tweak launch, on the same queue, without a wait."""
    name = "clefia-128-xts"
    spec = registry.lookup(name)
    key, _, opts = oracle.random_inputs(name, rng.data, 4096)
    data = rng.data(4096)
    monkeypatch.setattr(type(spec.algorithm), "host_encrypt", lambda self, key, blocks: None)
    req = make_request(spec, key, None, True, None, 4096, 0)
    lay = req.mode.layout(req, 4096)
    b = backend
    with KeyedProgram(b, req, first_bytes=4096) as kp:
        assert kp.rk[0] is None and kp.rk[1] is not None
        ops = Ops(b, monkeypatch)
        src, dst = _device(b, data), b.alloc(4096)
        ops.take()
        kp.enqueue(src, dst, lay.kernel_blocks, 0, layout=lay)
        done = [op if k is None else k for op, k in ops.take() if op != "alloc"]
        assert done == ["cg_xts_seg", "upload", "cg_xts_enc"]
        assert kp.rk[0] is not None
        monkeypatch.undo()
        assert _host(b, dst, 4096) == oracle.crypt(name, key, None, data, True, **opts)


@pytest.mark.parametrize("name,size", [("aes", 16), ("aes", 24), ("aes", 32), ("camellia", 16),
                                       ("camellia", 32), ("seed", 16)])
def test_host_blocks_agree_with_the_reference(rng, name, size):
    """libcrypto's low-level block calls (the tweaks of an XTS one-shot) give the cipher's
    reference bytes, or are not used (None) where this libcrypto lacks them."""
    alg = registry.lookup("seed-ecb" if name == "seed" else f"{name}-128-ecb").algorithm
    key, blocks = rng.data(size), rng.data(48)
    got = xts_mode._HOST_BLOCKS[name](alg, key, blocks)
    assert got is None or got == alg.reference_ecb(key, blocks, True)


def test_a_contexts_pieces_of_one_size_route_once(monkeypatch, rng):
    """A context's pieces of one size take the plan made for the first (route costs a call
    about as much as the rest of a small piece's host work): one route per size, and the
    bytes of the one-shot call."""
    import ciphergrid
    from ciphergrid import api

    calls = []
    real = api.route

    def counting(req, device="auto", n=None, **kw):
        calls.append(n)
        return real(req, device, n, **kw)

    monkeypatch.setattr(api, "route", counting)
    name = "aes-128-cbc"
    key, iv = rng.key(name), rng.iv(name)
    data = rng.data(6 * 4096 + 512)
    with ciphergrid.Cipher(name, key, iv, device="native") as c:
        ctx = c.decryptor()
        out = b"".join(ctx.update(data[i: i + 4096]) for i in range(0, len(data), 4096))
        out += ctx.finalize()
    assert out == oracle.crypt(name, key, iv, data, False)
    assert sorted(set(calls)) == [512, 4096] and len(calls) == 2, calls
