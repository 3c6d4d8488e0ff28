"""One request per call, one registry, one vector loader (issue 47).

* the public functions build their request once; the internals take it (no internal function of
  api.py or aead.py takes a dozen arguments);
* registry.py finds the declarations of both kinds (block ciphers, AEADs) through one loader and
  one name table;
* vectors/ reads the block ciphers' and the AEADs' files through one loader.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import ciphergrid
from ciphergrid import aead, api

ROOT = pathlib.Path(ciphergrid.__file__).parent
PUBLIC = {"encrypt", "decrypt", "encrypt_batch", "decrypt_batch"}


def _arg_count(fn: ast.FunctionDef) -> int:
    a = fn.args
    return len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)


@pytest.mark.parametrize("module", ["api.py", "aead.py"])
def test_internal_functions_take_a_request(module):
    """Only the public pyca-style functions (and the public classes' constructors) take the
    options one by one; everything behind them takes the request."""
    tree = ast.parse((ROOT / module).read_text())
    wide = []
    for cls_or_fn in ast.walk(tree):
        if not isinstance(cls_or_fn, ast.ClassDef | ast.Module):
            continue
        public_class = isinstance(cls_or_fn, ast.ClassDef) and not cls_or_fn.name.startswith("_")
        for fn in cls_or_fn.body:
            if not isinstance(fn, ast.FunctionDef):
                continue
            if fn.name in PUBLIC or (public_class and fn.name == "__init__"):
                continue
            if _arg_count(fn) > 10:
                wide.append(f"{fn.name} ({_arg_count(fn)})")
    assert wide == []


def test_aead_message_request_carries_its_message_unseen():
    key, nonce = bytes(range(16)), bytes(12)
    req = aead.message_request("aes-128-gcm", True, key, nonce, b"hdr")
    assert (req.key, req.nonce, req.aad, req.nonce_len, req.tag_length) == (key, nonce, b"hdr", 12,
                                                                             16)
    assert key.hex() not in repr(req) and repr(key) not in repr(req)
    other = aead.message_request("aes-128-gcm", True, bytes(16), bytes(12))
    assert req.plan_key == other.plan_key   # (route keeps plans by it: no key, nonce, AAD)
    ct = aead.crypt(req, b"attack at dawn", "native")
    assert bytes(ct) == bytes(ciphergrid.encrypt(b"attack at dawn", "aes-128-gcm", key,
                                                 nonce=nonce, aad=b"hdr", device="native"))
    back = aead.crypt(aead.message_request("aes-128-gcm", False, key, nonce, b"hdr"), ct,
                      "native")
    assert bytes(back) == b"attack at dawn"
    with pytest.raises(TypeError, match="message_request"):   # (sizes only: no message to run)
        aead.crypt(aead.batch_request("aes-128-gcm", True), b"x", "native")


def test_one_shot_builds_one_request_of_either_kind():
    key = bytes(range(16))
    opts = api._Options(None, None, None, False, None, False, None, None, None)
    block = api._one_request(True, "aes-128-ctr", key, bytes(16), opts)
    assert block.kind == "blocks" and block.spec.name == "aes-128-ctr"
    sealed = api._one_request(True, "aes-128-gcm", key, None, opts._replace(nonce=bytes(12)))
    assert sealed.kind == "messages" and sealed.nonce == bytes(12)
    with pytest.raises(ciphergrid.InvalidArgument):
        api._one_request(True, "aes-128-gcm", key, None,
                         opts._replace(padding="pkcs7", nonce=bytes(12)))
    with pytest.raises(ciphergrid.InvalidArgument):
        api._one_request(True, "aes-128-ctr", key, bytes(16), opts._replace(nonce=bytes(12)))


def test_batch_request_runs_a_checked_batch():
    key = bytes(16)
    req = aead.batch_request("chacha20-poly1305", True)
    assert req.tag_length == 16 and req.batch is None
    r = ciphergrid.encrypt_batch([b"a", b"bc"], "chacha20-poly1305", key=bytes(32),
                                 nonces=[bytes(12), b"\1" + bytes(11)], device="native")
    back = ciphergrid.decrypt_batch(r.messages, "chacha20-poly1305", key=bytes(32),
                                    nonces=[bytes(12), b"\1" + bytes(11)], device="native")
    assert back.messages == [b"a", b"bc"]
    with pytest.raises(ciphergrid.Error):
        ciphergrid.encrypt_batch([b"a"], "aes-128-gcm", key=key, nonces=[bytes(12)],
                                 tag_length=3, device="native")


# --------------------------------------------------------------------------- one registry

def test_one_name_table_of_both_kinds():
    from ciphergrid import aeads, registry

    gcm = registry.lookup_aead(" AES-128-GCM ")
    assert isinstance(gcm, registry.AEADSpec) and gcm.name == "aes-128-gcm" and gcm.key_len == 16
    assert aeads.spec("aes-128-gcm") == gcm and aeads.lookup("aes-128-gcm") is gcm.aead
    assert aeads.AEADSpec is registry.AEADSpec
    assert registry.is_aead("chacha20-poly1305") and not registry.is_aead("aes-128-ctr")
    assert not registry.is_aead(7)
    # each kind's look-up finds its own kind only, in the one table
    assert not registry.known("aes-128-gcm")
    with pytest.raises(ciphergrid.UnsupportedCipher):
        registry.lookup("aes-128-gcm")
    with pytest.raises(ciphergrid.UnsupportedCipher, match="unknown AEAD"):
        registry.lookup_aead("aes-128-ctr")
    assert not set(registry.names()) & set(registry.aead_names())
    assert ciphergrid.available_ciphers() == registry.names() + registry.aead_names()
    assert [s.name for s in registry.aead_specs()] == registry.aead_names() == aeads.names()
    assert registry.aead_family("aes-gcm") is gcm.aead
    # one loader found both packages' declarations
    assert {"algorithms", "aeads", "aeads.gcm", "algorithms.aes"} <= registry._modules_seen


def test_an_unknown_name_is_suggested_from_both_kinds():
    from ciphergrid import registry

    with pytest.raises(ciphergrid.UnsupportedCipher, match="aes-128-gcm"):
        registry.lookup("aes-128-gcn")
    with pytest.raises(ciphergrid.UnsupportedCipher, match="aes-128-ctr"):
        registry.lookup("aes-128-ctx")


def test_register_takes_a_declaration_of_either_kind():
    from ciphergrid import registry
    from ciphergrid.aeads.gcm import AESGCM

    class Toy(AESGCM):
        names = {"toy-128-gcm": 16}

    added = registry.register(Toy())
    try:
        assert added == ["toy-128-gcm"]
        assert registry.is_aead("toy-128-gcm") and "toy-128-gcm" in registry.aead_names()
        assert "toy-128-gcm" not in registry.names()
        assert registry.lookup_aead("toy-128-gcm").key_len == 16
    finally:
        registry.unregister(added)
    assert not registry.is_aead("toy-128-gcm")


# --------------------------------------------------------------------------- one vector loader

def test_one_loader_reads_both_kinds():
    from ciphergrid import vectors
    from ciphergrid.vectors import aeads as aead_vectors

    assert vectors.data_files() == vectors.data_files(vectors.BLOCKS)
    assert "aes-gcm.json" in vectors.data_files(aead_vectors.AEADS)
    assert vectors.load("aes-128-cbc") == vectors.select(vectors.BLOCKS, "AES-128-CBC")
    written = aead_vectors.load("aes-128-gcm", files=False)
    assert written and written == vectors.select(aead_vectors.AEADS, "aes-128-gcm", False)
    doc = vectors._read(aead_vectors.AEADS, "aes-gcm.json")
    group = doc["groups"][0]
    assert aead_vectors.load(group["vectors"][0]["cipher"], files=False)[0].source == \
        f"{group['source']} {group['vectors'][0]['id']}"
    # the naming field of each kind's files is read and kept checked
    for kind, name in ((vectors.BLOCKS, "aes.json"), (aead_vectors.AEADS, "aes-gcm.json")):
        assert isinstance(vectors._read(kind, name)[kind.naming], str)


def test_each_kind_checks_its_files_format_and_naming():
    """A file of the wrong format, or one that does not name what its vectors are of, is
    refused by the one loader for either kind."""
    import dataclasses

    from ciphergrid.vectors import BLOCKS, VectorFileError, _read
    from ciphergrid.vectors import aeads as aead_vectors

    AEADS = aead_vectors.AEADS
    with pytest.raises(VectorFileError, match=r"^aes.json: \"format\" must be 'ciphergrid-aead"):
        _read(dataclasses.replace(AEADS, folder=""), "aes.json")
    with pytest.raises(VectorFileError, match=r"^aead/aes-gcm.json: \"format\" must be"):
        _read(dataclasses.replace(BLOCKS, folder="aead"), "aes-gcm.json")
    with pytest.raises(VectorFileError, match=r"^aead/aes-gcm.json: \"algorithm\" .* missing"):
        _read(dataclasses.replace(AEADS, naming="algorithm"), "aes-gcm.json")


def test_a_refused_batch_wipes_its_key_table(monkeypatch):
    """A batch refused before it runs (a repeated nonce, a check of its tables) leaves no key
    in its table: the run would have wiped it."""
    from ciphergrid.request import aead_request

    req = aead.batch_request("aes-128-gcm", True)
    given = dict(offsets=None, tags=None, key=b"\x5a" * 16, keys=None,
                 nonces=[bytes(12), bytes(12)], aad=None)
    batch, got = aead.checked_batch(req, [b"a", b"b"], given)
    assert got is None and batch.keys.any()
    with pytest.raises(ciphergrid.InvalidArgument, match="repeat"):
        aead.run_batch(aead_request(req.spec, batch), None, "native")
    assert not batch.keys.any()

    tables = []
    key_table = aead._key_table

    def kept(*args):
        tables.append(key_table(*args))
        return tables[-1]

    monkeypatch.setattr(aead, "_key_table", kept)
    with pytest.raises(ciphergrid.Error):   # (one nonce for two messages)
        aead.checked_batch(req, [b"a", b"b"], {**given, "nonces": [bytes(12)]})
    assert tables and not tables[0][0].any()
