"""``ember.load`` refuses malicious and malformed checkpoints, and nothing in them runs.

Each payload is built opcode by opcode (or with ``zipfile`` for the container) so that Python's own
unpickler would carry it out: it would create a marker file, set an environment variable or set an
attribute on a module. Every test asserts the error AND that the side effect did not happen; a few
controls load the same payloads with ``weights_only=False`` to prove they are live.
"""

from __future__ import annotations

import copyreg
import io
import os
import pickle
import struct
import zipfile

import pytest

import ember

try:
    import torch
except ImportError:  # the oracle is installed only in the Python 3.11 test sessions
    torch = None
needs_torch = pytest.mark.skipif(
    torch is None, reason="PyTorch is the oracle; it is installed only in the Python 3.11 test sessions"
)

ENV = "EMBER_TEST_PWNED"


# -- pickle building blocks ------------------------------------------------------------------------


def g(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def s(text: str) -> bytes:
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def i(value: int) -> bytes:
    return b"J" + struct.pack("<i", value)


def call(func: bytes, *args: bytes) -> bytes:
    return func + b"(" + b"".join(args) + b"tR"


def in_dict(payload: bytes, proto: int = 2) -> bytes:
    """``{'x': <payload>}``, as a checkpoint's data.pkl."""
    return b"\x80" + bytes([proto]) + b"}" + s("x") + payload + b"s."


def archive(pkl: bytes | None, records: dict | None = None, version: bytes | None = b"3\n", byteorder=b"little"):
    folder = "archive"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        if pkl is not None:
            z.writestr(f"{folder}/data.pkl", pkl)
        z.writestr(f"{folder}/byteorder", byteorder)
        for name, data in (records or {}).items():
            z.writestr(name if "/" in name and not name.startswith("data/") else f"{folder}/{name}", data)
        if version is not None:
            z.writestr(f"{folder}/version", version)
    return out.getvalue()


def storage_pid(kind: str = "FloatStorage", key: str = "0", numel: int = 4, location: str = "cpu") -> bytes:
    return b"(" + s("storage") + g("torch", kind) + s(key) + s(location) + i(numel) + b"tQ"


def rebuild(
    pid: bytes,
    offset: bytes,
    size: bytes,
    stride: bytes,
    extra: bytes = b"\x89" + call(g("collections", "OrderedDict")),
) -> bytes:
    return call(g("torch._utils", "_rebuild_tensor_v2"), pid, offset, size, stride, extra)


def tup(*items: bytes) -> bytes:
    return b"(" + b"".join(items) + b"t"


FLOATS4 = struct.pack("<4f", 1, 2, 3, 4)


@pytest.fixture
def sentinel(tmp_path):
    """The marker file, env var and module attribute a payload would create; all checked absent after."""
    marker = tmp_path / "pwned"
    os.environ.pop(ENV, None)
    if hasattr(ember, "PWNED"):
        delattr(ember, "PWNED")
    yield marker
    assert not marker.exists(), "a payload ran: the marker file exists"
    assert ENV not in os.environ, "a payload ran: the environment variable is set"
    assert not hasattr(ember, "PWNED"), "a payload ran: ember.PWNED is set"


def payloads(marker) -> dict[str, bytes]:
    touch = f"touch {marker}"
    set_env = f"import os; os.environ[{ENV!r}] = '1'"
    return {
        "os.system": call(g("os", "system"), s(touch)),
        "posix.system": call(g("posix", "system"), s(touch)),
        "nt.system": call(g("nt", "system"), s(touch)),
        "builtins.eval": call(g("builtins", "eval"), s(f"__import__('os').system({touch!r})")),
        "builtins.exec": call(g("builtins", "exec"), s(set_env)),
        "__builtin__.eval": call(g("__builtin__", "eval"), s(f"__import__('os').system({touch!r})")),
        "builtins.__import__": call(
            call(g("builtins", "getattr"), call(g("builtins", "__import__"), s("os")), s("system")), s(touch)
        ),
        "builtins.getattr": call(call(g("builtins", "getattr"), g("os", "path"), s("join")), s("a")),
        "builtins.setattr": call(
            g("builtins", "setattr"), call(g("importlib", "import_module"), s("ember")), s("PWNED"), b"\x88"
        ),
        "subprocess.Popen": call(g("subprocess", "Popen"), b"](" + s("touch") + s(str(marker)) + b"e"),
        "subprocess.check_output": call(g("subprocess", "check_output"), b"](" + s("touch") + s(str(marker)) + b"e"),
        "functools.partial": call(call(g("functools", "partial"), g("os", "system"), s(touch))),
        "os.putenv": call(g("os", "putenv"), s(ENV), s("1")),
        "os._environ.__setitem__": call(g("os", "environ.__setitem__"), s(ENV), s("1")),
        "runpy._run_code": call(g("runpy", "_run_code"), s(set_env), b"}"),
        "torch.load nested": call(g("torch", "load"), s(str(marker))),
        "pickle.loads nested": call(g("pickle", "loads"), b"C" + bytes([2]) + b"N."),
        "numpy core multiarray": call(
            g("numpy.core.multiarray", "_reconstruct"), g("numpy", "ndarray"), tup(i(0)), b"C\x01b"
        ),
        "ember internals": call(g("ember.core.serialization.checkpoint", "save"), b"N", s(str(marker))),
        "copyreg._reconstructor": call(
            g("copyreg", "_reconstructor"), g("os", "system"), g("builtins", "object"), b"N"
        ),
    }


def _load(data: bytes, **kw):
    return ember.load(io.BytesIO(data), **kw)


# -- forbidden globals -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(payloads("m")))
def test_forbidden_global_is_refused_before_anything_runs(name, sentinel):
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        _load(archive(in_dict(payloads(sentinel)[name])))


def test_the_payloads_are_live_under_the_full_unpickler(sentinel):
    # The control: Python's unpickler runs them (so the refusals above are real).
    _load(archive(in_dict(payloads(sentinel)["os.system"])), weights_only=False)
    assert sentinel.exists()
    sentinel.unlink()
    _load(archive(in_dict(payloads(sentinel)["builtins.exec"])), weights_only=False)
    assert os.environ.pop(ENV) == "1"


@needs_torch
def test_classic_reduce_payload_next_to_real_weights(sentinel):
    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {sentinel}",))

    buffer = io.BytesIO()
    torch.save({"weight": torch.ones(2), "evil": Evil()}, buffer)
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL (posix|os)\.system"):
        ember.load(io.BytesIO(buffer.getvalue()))


def test_stack_global_is_checked_like_global(sentinel):
    pkl = b"\x80\x04}" + s("x") + s("os") + s("system") + b"\x93" + b"(" + s(f"touch {sentinel}") + b"tRs."
    with pytest.raises(pickle.UnpicklingError, match=r"os\.system"):
        _load(archive(pkl))
    # STACK_GLOBAL with non-string operands
    with pytest.raises(pickle.UnpicklingError):
        _load(archive(b"\x80\x04" + i(1) + i(2) + b"\x93."))


# -- opcodes that call or build objects ---------------------------------------------------------------


def test_inst_and_obj_opcodes_are_refused(sentinel):
    inst = b"\x80\x02(" + s(f"touch {sentinel}") + b"ios\nsystem\n."
    obj = b"\x80\x02(" + g("os", "system") + s(f"touch {sentinel}") + b"o."
    obj_allowed_class = b"\x80\x02(" + g("collections", "OrderedDict") + b"o."
    for pkl in (inst, obj, obj_allowed_class):
        with pytest.raises(pickle.UnpicklingError, match=r"opcode (INST|OBJ)|GLOBAL os\.system"):
            _load(archive(pkl))


@pytest.mark.parametrize("opcode", [b"\x82", b"\x83", b"\x84"])
def test_extension_registry_opcodes_are_refused(opcode, sentinel):
    code = 0x7FFF_F0 if opcode == b"\x84" else (0xF0 if opcode == b"\x82" else 0xFFF0)
    copyreg.add_extension("os", "system", code)
    try:
        width = {b"\x82": "<B", b"\x83": "<H", b"\x84": "<i"}[opcode]
        pkl = b"\x80\x02" + opcode + struct.pack(width, code) + b"(" + s(f"touch {sentinel}") + b"tR."
        with pytest.raises(pickle.UnpicklingError, match="EXT"):
            _load(archive(pkl))
    finally:
        copyreg.remove_extension("os", "system", code)


def test_newobj_only_for_containers(sentinel):
    # torch.Tensor is an allowed name (for _rebuild_from_type_v2), but not a class to instantiate.
    for cls in (g("torch", "Tensor"), g("torch", "Size"), g("torch", "device")):
        with pytest.raises(pickle.UnpicklingError, match="NEWOBJ"):
            _load(archive(b"\x80\x02" + cls + b")\x81."))
    pkl = b"\x80\x02" + g("collections", "OrderedDict") + b")\x81."
    assert _load(archive(pkl)) == {}


def test_newobj_ex_and_out_of_band_buffers_are_refused():
    for pkl in (
        b"\x80\x04" + g("collections", "OrderedDict") + b")}\x92.",
        b"\x80\x05\x97.",
        b"\x80\x05\x98.",
        b"\x80\x05" + b"\x96" + struct.pack("<Q", 3) + b"abc.",
    ):
        with pytest.raises(pickle.UnpicklingError, match="opcode"):
            _load(archive(pkl))


def test_reduce_needs_an_allowed_callable():
    # A dtype, a storage type and a string are on the stack legitimately but are not callables to REDUCE.
    for func in (g("torch", "float32"), g("torch", "FloatStorage"), s("os.system")):
        with pytest.raises(pickle.UnpicklingError, match="REDUCE"):
            _load(archive(b"\x80\x02" + func + b")R."))
    # torch.Tensor is a name a pickle may use, but Tensor(n) would allocate n elements: not callable.
    with pytest.raises(pickle.UnpicklingError, match="REDUCE"):
        _load(archive(b"\x80\x02" + call(g("torch", "Tensor"), b"\x8a\x05" + (10**12).to_bytes(5, "little")) + b"."))
    # A result of an allowed call cannot be called either (an OrderedDict instance).
    with pytest.raises(pickle.UnpicklingError, match="REDUCE"):
        _load(archive(b"\x80\x02" + call(g("collections", "OrderedDict")) + b")R."))


def test_build_only_on_state_dict_containers(sentinel):
    tensor = rebuild(storage_pid(), i(0), tup(i(4)), tup(i(1)))
    cases = {
        "tensor": tensor + b"}" + s("requires_grad") + b"\x88sb.",
        "list": b"]}" + s("append") + b"Nsb.",
        "dict": b"}}" + s("x") + b"Nsb.",
        "dunder": call(g("collections", "OrderedDict")) + b"}" + s("__class__") + g("collections", "Counter") + b"sb.",
        "setstate": call(g("collections", "OrderedDict")) + s("not a dict") + b"b.",
    }
    for name, body in cases.items():
        with pytest.raises(pickle.UnpicklingError, match="BUILD"):
            _load(archive(b"\x80\x02" + body, {"data/0": FLOATS4}))
        assert name


def test_container_opcodes_check_their_target():
    cases = [
        b"\x80\x02" + s("str") + i(1) + b"a.",  # APPEND to a str
        b"\x80\x02" + g("torch", "Size") + b"(" + i(1) + b"e.",  # APPENDS to a function
        b"\x80\x02" + tup() + i(1) + i(2) + b"s.",  # SETITEM on a tuple
        b"\x80\x02" + call(g("builtins", "set"), b"]") + b"(" + i(1) + i(2) + b"u.",  # SETITEMS on a set
        b"\x80\x04]" + b"(" + i(1) + b"\x90.",  # ADDITEMS on a list
        b"\x80\x02}" + b"]" + i(1) + b"s.",  # an unhashable key
    ]
    for pkl in cases:
        with pytest.raises(pickle.UnpicklingError):
            _load(archive(pkl))


def test_text_protocol_and_persid_opcodes_are_refused():
    for pkl in (
        b"(S'x'\nt.",
        b"\x80\x02I1\n.",
        b"\x80\x02F1.0\n.",
        b"\x80\x02P0\n.",
        b"\x80\x02(lp0\n.",
        b"\x80\x02V\\u0041\n.",
        b"\x80\x02L12L\n.",
        b"\x80\x02g0\n.",
    ):
        with pytest.raises(pickle.UnpicklingError):
            _load(archive(pkl))


# -- allowed names used maliciously ---------------------------------------------------------------


def test_codecs_and_bytearray_cannot_be_abused():
    with pytest.raises(pickle.UnpicklingError, match="latin1"):
        _load(archive(b"\x80\x02" + call(g("_codecs", "encode"), s("x" * 10), s("zlib_codec")) + b"."))
    # bytearray(n) would allocate n bytes.
    with pytest.raises(pickle.UnpicklingError, match="bytearray"):
        _load(
            archive(b"\x80\x02" + call(g("builtins", "bytearray"), b"\x8a\x05" + (10**12).to_bytes(5, "little")) + b".")
        )
    assert _load(archive(b"\x80\x02" + call(g("_codecs", "encode"), s("\xe9"), s("latin1")) + b".")) == b"\xe9"


def test_unknown_dtypes_and_storage_types():
    for name in ("uint16", "float8_e4m3fn", "complex32"):  # dtypes of limited support load as dtypes
        assert _load(archive(b"\x80\x02" + g("torch", name) + b".")) is getattr(ember, name)
    for name in ("float8_e9m9", "uint128"):
        with pytest.raises(pickle.UnpicklingError, match=f"torch.{name}"):
            _load(archive(b"\x80\x02" + g("torch", name) + b"."))
    for kind in ("QInt8Storage", "FloatStorageX", "Storage"):
        with pytest.raises(pickle.UnpicklingError):
            _load(
                archive(
                    b"\x80\x02" + rebuild(storage_pid(kind), i(0), tup(i(4)), tup(i(1))) + b".", {"data/0": FLOATS4}
                )
            )


def test_unsupported_tensor_kinds_are_refused():
    for fn in (
        "_rebuild_qtensor",
        "_rebuild_wrapper_subclass",
        "_rebuild_device_tensor_from_numpy",
    ):
        with pytest.raises(pickle.UnpicklingError, match="not supported"):
            _load(archive(b"\x80\x02" + call(g("torch._utils", fn), b"N") + b"."))


def test_sparse_tensors_with_bad_pieces_are_refused():
    fn = g("torch._utils", "_rebuild_sparse_tensor")
    coo = call(g("torch.serialization", "_get_layout"), s("torch.sparse_coo"))
    with pytest.raises(pickle.UnpicklingError, match="layout"):
        _load(archive(b"\x80\x02" + call(fn, b"N", b"N") + b"."))
    with pytest.raises(pickle.UnpicklingError, match="indices, values, size"):
        _load(archive(b"\x80\x02" + call(fn, coo, b"N") + b"."))
    with pytest.raises(pickle.UnpicklingError, match=r"the layout torch\.sparse_csr"):
        _load(archive(b"\x80\x02" + call(g("torch.serialization", "_get_layout"), s("torch.sparse_csr")) + b"."))


def test_from_type_v2_cannot_set_arbitrary_attributes_or_types():
    tensor_args = tup(storage_pid(), i(0), tup(i(4)), tup(i(1)), b"\x89", call(g("collections", "OrderedDict")))
    good = call(
        g("torch._tensor", "_rebuild_from_type_v2"),
        g("torch._utils", "_rebuild_tensor_v2"),
        g("torch", "Tensor"),
        tensor_args,
        b"}" + s("note") + s("hi") + b"s",
    )
    loaded = _load(archive(b"\x80\x02" + good + b".", {"data/0": FLOATS4}))
    assert loaded.tolist() == [1, 2, 3, 4] and loaded.note == "hi"
    shadow = call(
        g("torch._tensor", "_rebuild_from_type_v2"),
        g("torch._utils", "_rebuild_tensor_v2"),
        g("torch", "Tensor"),
        tensor_args,
        b"}" + s("numpy") + b"Ns",
    )
    with pytest.raises(pickle.UnpicklingError, match="numpy"):
        _load(archive(b"\x80\x02" + shadow + b".", {"data/0": FLOATS4}))
    other_func = call(
        g("torch._tensor", "_rebuild_from_type_v2"), g("collections", "OrderedDict"), g("torch", "Tensor"), b")", b"N"
    )
    with pytest.raises(pickle.UnpicklingError, match="not supported"):
        _load(archive(b"\x80\x02" + other_func + b"."))


# -- persistent ids -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pid",
    [
        s("storage") + b"Q",  # not a tuple
        tup(s("module"), g("torch", "FloatStorage"), s("0"), s("cpu"), i(4)) + b"Q",  # not a storage
        tup(s("storage"), g("torch", "FloatStorage"), s("0"), s("cpu")) + b"Q",  # too short
        tup(s("storage"), g("collections", "OrderedDict"), s("0"), s("cpu"), i(4)) + b"Q",  # not a storage type
        tup(s("storage"), g("torch", "FloatStorage"), s("../../etc/passwd"), s("cpu"), i(4)) + b"Q",
        tup(s("storage"), g("torch", "FloatStorage"), i(0), s("cpu"), i(4)) + b"Q",  # key not a str
        tup(s("storage"), g("torch", "FloatStorage"), s("0"), s("cpu"), i(-4)) + b"Q",
        tup(s("storage"), g("torch", "FloatStorage"), s("0"), s("cpu"), b"\x88") + b"Q",  # bool count
    ],
)
def test_bad_persistent_ids(pid):
    with pytest.raises(pickle.UnpicklingError):
        _load(archive(b"\x80\x02" + rebuild(pid, i(0), tup(i(4)), tup(i(1))) + b".", {"data/0": FLOATS4}))


def test_bad_location_and_missing_or_wrong_sized_storage():
    with pytest.raises(RuntimeError, match="location"):
        _load(
            archive(
                b"\x80\x02" + rebuild(storage_pid(location="nowhere"), i(0), tup(i(4)), tup(i(1))) + b".",
                {"data/0": FLOATS4},
            )
        )
    with pytest.raises(RuntimeError, match="data/0"):
        _load(archive(b"\x80\x02" + rebuild(storage_pid(), i(0), tup(i(4)), tup(i(1))) + b"."))
    with pytest.raises(RuntimeError, match="holds 16 bytes"):
        _load(
            archive(b"\x80\x02" + rebuild(storage_pid(numel=5), i(0), tup(i(5)), tup(i(1))) + b".", {"data/0": FLOATS4})
        )
    # An absurd element count is compared with the record, never allocated.
    with pytest.raises(RuntimeError, match="holds 16 bytes"):
        _load(
            archive(
                b"\x80\x02" + rebuild(storage_pid(numel=2**31 - 1), i(0), tup(i(4)), tup(i(1))) + b".",
                {"data/0": FLOATS4},
            )
        )
    # The same key described with two types.
    two = (
        b"\x80\x02"
        + tup(
            rebuild(storage_pid(), i(0), tup(i(4)), tup(i(1))),
            rebuild(storage_pid("IntStorage"), i(0), tup(i(4)), tup(i(1))),
        )
        + b"."
    )
    with pytest.raises(RuntimeError, match="different types"):
        _load(archive(two, {"data/0": FLOATS4}))


# -- tensor geometry ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("offset", "size", "stride", "match"),
    [
        (i(0), tup(i(5)), tup(i(1)), "out of bounds"),
        (i(1), tup(i(4)), tup(i(1)), "out of bounds"),
        (i(0), tup(i(2), i(2)), tup(i(3), i(1)), "out of bounds"),
        (i(0), tup(i(10**9), i(10**9)), tup(i(1), i(1)), "out of bounds"),
        (i(0), tup(i(-4)), tup(i(1)), "negative"),
        (i(0), tup(i(2)), tup(i(-1)), "negative"),
        (i(-1), tup(i(2)), tup(i(1)), "offset"),
        (i(0), tup(i(2), i(2)), tup(i(1)), "different lengths"),
        (i(0), tup(s("4")), tup(i(1)), "ints"),
        (s("0"), tup(i(4)), tup(i(1)), "offset"),
        (i(0), tup(b"G" + struct.pack(">d", 4.0)), tup(i(1)), "ints"),
    ],
)
def test_bad_sizes_strides_and_offsets(offset, size, stride, match):
    with pytest.raises(RuntimeError, match=match):
        _load(archive(b"\x80\x02" + rebuild(storage_pid(), offset, size, stride) + b".", {"data/0": FLOATS4}))


def test_rebuild_arguments_are_checked():
    pid = storage_pid()
    with pytest.raises(pickle.UnpicklingError):  # a list instead of a storage
        _load(archive(b"\x80\x02" + rebuild(b"]", i(0), tup(i(4)), tup(i(1))) + b"."))
    with pytest.raises(RuntimeError, match="requires_grad"):
        _load(archive(b"\x80\x02" + rebuild(pid, i(0), tup(i(4)), tup(i(1)), i(1) + b"}") + b".", {"data/0": FLOATS4}))
    with pytest.raises(RuntimeError, match="hooks"):
        _load(
            archive(
                b"\x80\x02" + rebuild(pid, i(0), tup(i(4)), tup(i(1)), b"\x89}" + i(1) + i(2) + b"s") + b".",
                {"data/0": FLOATS4},
            )
        )
    with pytest.raises(pickle.UnpicklingError, match="malformed"):  # wrong argument count
        _load(archive(b"\x80\x02" + call(g("torch._utils", "_rebuild_tensor_v2"), pid) + b".", {"data/0": FLOATS4}))
    ok = _load(archive(b"\x80\x02" + rebuild(pid, i(1), tup(i(3)), tup(i(1))) + b".", {"data/0": FLOATS4}))
    assert ok.tolist() == [2.0, 3.0, 4.0]


# -- malformed pickle streams ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pkl",
    [
        b"",
        b"\x80\x02",  # no STOP
        b"\x80\x02.",  # STOP on an empty stack
        b"\x80\x02h\x05.",  # memo key never stored
        b"\x80\x02X\xff\xff\xff\xffabc.",  # a length far past the data: no allocation
        b"\x80\x02\x8d" + struct.pack("<Q", 2**62) + b"abc.",  # BINUNICODE8
        b"\x80\x02\x8b" + struct.pack("<i", 2**31 - 1) + b".",  # LONG4
        b"\x80\x02t.",  # TUPLE without MARK
        b"\x80\x02N\x86.",  # TUPLE2 with one item
        b"\x80\x02NN.",  # values left on the stack
        b"\x80\x09N.",  # unknown protocol
        b"\x80\x02\xff.",  # not an opcode
        b"\x80\x02" + g("collections", "OrderedDict").replace(b"\n", b"", 1) + b".",
        b"\x80\x02X\x02\x00\x00\x00\xff\xfe.",  # invalid UTF-8
    ],
)
def test_malformed_pickles(pkl):
    with pytest.raises(pickle.UnpicklingError):
        _load(archive(pkl))


# -- malformed archives ------------------------------------------------------------------------------


def _good() -> bytes:
    buffer = io.BytesIO()
    ember.save({"w": ember.arange(4.0)}, buffer)
    return buffer.getvalue()


def test_truncated_archives():
    data = _good()
    for cut in (len(data) // 2, len(data) - 10, 100, 5):
        with pytest.raises(RuntimeError):
            _load(data[:cut])


@needs_torch
def test_not_a_checkpoint():
    with pytest.raises(RuntimeError, match="empty"):
        _load(b"")
    with pytest.raises(RuntimeError, match="magic"):
        _load(b"hello world, not a zip")
    legacy = io.BytesIO()
    torch.save({"w": torch.ones(2)}, legacy, _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="legacy"):
        _load(legacy.getvalue())
    with pytest.raises(RuntimeError, match="legacy"):
        _load(pickle.dumps({"a": 1}, protocol=2))


def test_missing_records():
    pkl = b"\x80\x02N."
    with pytest.raises(RuntimeError, match=r"data\.pkl"):
        _load(archive(None))
    with pytest.raises(RuntimeError, match="version"):
        _load(archive(pkl, version=None))
    with pytest.raises(RuntimeError, match="version"):
        _load(archive(pkl, version=b"banana"))
    with pytest.raises(ValueError, match="endianness"):
        _load(archive(pkl, byteorder=b"middle"))
    empty = io.BytesIO()
    zipfile.ZipFile(empty, "w").close()
    with pytest.raises(RuntimeError):
        _load(empty.getvalue())
    with pytest.raises(RuntimeError, match="subdirectory"):
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            z.writestr("data.pkl", pkl)
        _load(out.getvalue())
    assert _load(archive(pkl)) is None


@pytest.mark.parametrize(
    "name",
    ["archive/../evil", "archive/data/../../evil", "/archive/x", "other/data.pkl", "archive//x", "archive/a\\..\\b"],
)
def test_entries_escaping_the_folder(name, tmp_path):
    with pytest.raises(RuntimeError, match="not a record inside"):
        _load(archive(b"\x80\x02N.", {name: b"x"}))
    assert not (tmp_path.parent / "evil").exists()


def test_duplicate_and_oversized_entries():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z, pytest.warns(UserWarning, match="Duplicate"):
        z.writestr("archive/data.pkl", b"\x80\x02N.")
        z.writestr("archive/version", b"3\n")
        z.writestr("archive/data.pkl", b"\x80\x02" + call(g("os", "system"), s("true")) + b".")
    with pytest.raises(RuntimeError, match="twice"):
        _load(out.getvalue())
    # A central directory claiming a record far larger than the file.
    data = bytearray(archive(b"\x80\x02N.", {"data/0": FLOATS4}))
    start = data.find(b"archive/data/0", data.find(b"PK\x01\x02")) - 46
    data[start + 20 : start + 28] = struct.pack("<II", 2**31, 2**31)
    with pytest.raises(RuntimeError):
        _load(bytes(data))


def test_compressed_bomb_is_refused():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data.pkl", b"\x80\x02N.")
        z.writestr("archive/version", b"3\n")
    data = bytearray(out.getvalue())
    central = data.find(b"PK\x01\x02")
    data[central + 24 : central + 28] = struct.pack("<I", 2**31)  # uncompressed size
    with pytest.raises(RuntimeError, match="impossible size"):
        _load(bytes(data))


def test_torchscript_archives_are_refused():
    with pytest.raises(RuntimeError, match="TorchScript"):
        _load(archive(b"\x80\x02N.", {"constants.pkl": b"\x80\x02N."}))


def test_error_messages_name_the_global():
    with pytest.raises(pickle.UnpicklingError) as info:
        _load(archive(b"\x80\x02" + g("builtins", "eval") + b"."))
    assert "builtins.eval" in str(info.value) and "weights_only=False" in str(info.value)
    assert "never allowed" in str(info.value)


def test_random_corruption_gives_only_clear_errors():
    """Bytes of a real checkpoint (its pickle, then the whole archive) flipped, dropped and inserted at random."""
    import random
    from collections import OrderedDict

    buffer = io.BytesIO()
    x = ember.arange(12.0).reshape(3, 4)
    state = OrderedDict(a=x, b=x.t(), c=[1, "s", None, 2.5, (1, 2)], d=ember.ones(2, dtype=ember.bfloat16))
    ember.save(state, buffer, pickle_protocol=4)
    good = buffer.getvalue()
    source = zipfile.ZipFile(io.BytesIO(good))
    records = {info.filename: source.read(info) for info in source.infolist()}
    rng = random.Random(0)
    for trial in range(300):
        pkl = bytearray(records["archive/data.pkl"])
        for _ in range(rng.randint(1, 4)):
            where, what = rng.randrange(len(pkl)), rng.random()
            if what < 0.6:
                pkl[where] = rng.randrange(256)
            elif what < 0.8:
                del pkl[where]
            else:
                pkl.insert(where, rng.randrange(256))
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            for name, data in records.items():
                z.writestr(name, bytes(pkl) if name.endswith("data.pkl") else data)
        whole = bytearray(good)
        whole[rng.randrange(len(whole))] = rng.randrange(256)
        for data in (out.getvalue(), bytes(whole)):
            try:
                _load(data)
            except (RuntimeError, pickle.UnpicklingError):
                pass
            except Exception as error:  # pragma: no cover  (the failure message names the case)
                raise AssertionError(f"trial {trial}: {type(error).__name__}: {error}") from error
