"""The weights-only unpickler: a pickle interpreter that can only build data.

Python's unpickler will call any callable a pickle names, which makes ``load`` of an untrusted
file a remote-code-execution hole. This interpreter reads the opcodes itself and knows no way to
reach arbitrary code: a global is looked up in the allow-list (``rebuild.GLOBALS``) and nowhere
else, before anything on the stack is called; REDUCE calls only what that lookup returned; NEWOBJ
makes only ``OrderedDict``/``Counter``; BUILD only sets attributes on those containers (a state
dict's ``_metadata``); APPEND, SETITEM and ADDITEMS only touch real lists, dicts and sets. Opcodes
outside protocols 2-5's data subset (INST, OBJ, EXT1/2/4, PERSID, text-mode opcodes, out-of-band
buffers) are refused. Lengths are checked against the bytes actually present, so a lying length
cannot make it allocate.
"""

from __future__ import annotations

import pickle
import struct
from collections import Counter, OrderedDict
from pickle import UnpicklingError, decode_long

from ember.core.tensor import Tensor

from .rebuild import GLOBALS, NEWOBJ_CLASSES, UNSUPPORTED_DTYPES
from .safe_globals import allowed, allowed_objects, ember_name

# ``torch.Tensor`` resolves (as the type ``_rebuild_from_type_v2`` names) but is not called: Tensor(n)
# would allocate n elements.
_ALLOWED_CALLABLES = {id(v): v for v in GLOBALS.values() if callable(v) and v is not Tensor}
# Python 2 names that protocol 2 pickles use for builtins (what ``fix_imports`` undoes).
_PY2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg", "_abcoll": "collections.abc"}
_BLOCKED_MODULES = ("sys", "os", "posix", "nt", "subprocess", "builtins", "__builtin__", "importlib", "runpy")


def _describe_global(module: str, name: str) -> str:
    return f"{module}.{name}"


def resolve_global(module: str, name: str):
    """The allowed object for ``module.name``, or UnpicklingError naming why not."""
    if not isinstance(module, str) or not isinstance(name, str):
        raise UnpicklingError("a global's module and name must be strings")
    module = _PY2_MODULES.get(module, module)
    full = _describe_global(module, name)
    found = GLOBALS.get(full)
    if found is not None:
        return found
    if full in UNSUPPORTED_DTYPES:
        raise UnpicklingError(f"the checkpoint uses the dtype {full}, which Ember does not have")
    found = allowed(full)
    if found is not None:
        return found
    blocked = module.split(".")[0] in _BLOCKED_MODULES
    if blocked:
        raise UnpicklingError(
            f"Unsupported global: GLOBAL {full} is not allowed by the weights-only unpickler (module {module} is "
            "never allowed). Load with weights_only=False only if you trust the file's source."
        )
    name_here = ember_name(full)
    raise UnpicklingError(
        "This file can still be loaded, to do so you have two options, do those steps only if you trust the "
        "source of the checkpoint. \n\t(1) Re-running `ember.load` with `weights_only` set to `False` will likely "
        "succeed, but it can result in arbitrary code execution. Do it only if you got the file from a trusted "
        "source.\n\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps in the "
        f"following error message.\n\tWeightsUnpickler error: Unsupported global: GLOBAL {full} was not an allowed "
        f"global by default. Please use `ember.serialization.add_safe_globals([{name_here}])` or the "
        f"`ember.serialization.safe_globals([{name_here}])` context manager to allowlist this global if you "
        "trust this class/function."
    )


def _user_allowed(obj) -> bool:
    return any(obj is o for o in allowed_objects())


class WeightsOnlyUnpickler:
    def __init__(self, data: bytes, persistent_load, encoding: str = "utf-8") -> None:
        self._data = memoryview(data)
        self._pos = 0
        self._persistent_load = persistent_load
        self._encoding = encoding
        self.memo: dict[int, object] = {}

    # -- reading ---------------------------------------------------------------------------------

    def _read(self, n: int) -> memoryview:
        end = self._pos + n
        if n < 0 or end > len(self._data):
            raise UnpicklingError("pickle data was truncated")
        out = self._data[self._pos : end]
        self._pos = end
        return out

    def _readline(self) -> bytes:
        end = bytes(self._data[self._pos : self._pos + 1024]).find(b"\n")
        if end < 0:
            raise UnpicklingError("pickle data was truncated (or a global name is too long)")
        line = bytes(self._data[self._pos : self._pos + end])
        self._pos += end + 1
        return line

    def _uint(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self._read(size))[0]

    def _text(self, n: int) -> str:
        return str(self._read(n), "utf-8", "surrogatepass")

    # -- the stack -------------------------------------------------------------------------------

    def _pop(self):
        if not self._stack:
            raise UnpicklingError("unpickling stack underflow")
        return self._stack.pop()

    def _top(self):
        if not self._stack:
            raise UnpicklingError("unpickling stack underflow")
        return self._stack[-1]

    def _pop_mark(self) -> list:
        if not self._metastack:
            raise UnpicklingError("could not find MARK")
        items = self._stack
        self._stack = self._metastack.pop()
        return items

    def _get(self, index: int):
        try:
            return self.memo[index]
        except KeyError:
            raise UnpicklingError(f"memo key {index} was never stored") from None

    # -- the interpreter ---------------------------------------------------------------------------

    def load(self):
        self._stack: list = []
        self._metastack: list = []
        while True:
            code = self._read(1)[0]
            handler = _HANDLERS.get(code)
            if handler is None:
                name = _NAMES.get(code, f"byte {code:#04x}")
                raise UnpicklingError(f"the weights-only unpickler does not accept the opcode {name}")
            if handler is _stop:
                result = self._pop()
                if self._stack or self._metastack:
                    raise UnpicklingError("pickle data left values on the stack at STOP")
                return result
            handler(self)


def _stop(self) -> None:  # handled in load()
    raise AssertionError


def _proto(self):
    proto = self._read(1)[0]
    if not 2 <= proto <= 5:
        raise UnpicklingError(f"unsupported pickle protocol {proto}")


def _frame(self):
    self._uint("<Q")  # frames only group opcodes; the data is read as it comes


def _global(self):
    module = self._readline().decode("utf-8", "strict")
    name = self._readline().decode("utf-8", "strict")
    self._stack.append(resolve_global(module, name))


def _stack_global(self):
    name = self._pop()
    module = self._pop()
    self._stack.append(resolve_global(module, name))


def _reduce(self):
    args = self._pop()
    func = self._pop()
    if (id(func) not in _ALLOWED_CALLABLES or _ALLOWED_CALLABLES[id(func)] is not func) and not _user_allowed(func):
        raise UnpicklingError(f"REDUCE may only call allowed globals, got {type(func).__name__}")
    if not isinstance(args, tuple):
        raise UnpicklingError("REDUCE arguments must be a tuple")
    self._stack.append(func(*args))


def _newobj(self):
    args = self._pop()
    cls = self._pop()
    known = NEWOBJ_CLASSES.get(cls) is cls or _user_allowed(cls)
    if not isinstance(cls, type) or not known or not isinstance(args, tuple):
        raise UnpicklingError(f"NEWOBJ may only create OrderedDict, Counter or an allowed class, got {cls!r}")
    self._stack.append(cls.__new__(cls, *args))


def _build(self):
    state = self._pop()
    inst = self._top()
    if _user_allowed(type(inst)):
        _build_allowed(inst, state)
        return
    if type(inst) not in (OrderedDict, Counter):
        raise UnpicklingError(f"BUILD may only set the state of an OrderedDict or Counter, got {type(inst).__name__}")
    if isinstance(state, tuple) and len(state) == 2 and state[1] is None:
        state = state[0]
    if state is None:
        return
    if type(state) is not dict or not all(type(k) is str and not k.startswith("__") for k in state):
        raise UnpicklingError("BUILD state must be a dict of plain attribute names")
    inst.__dict__.update(state)


def _build_allowed(inst, state) -> None:
    # An instance of a class the user allowed: its own __setstate__, else its attributes.
    setstate = getattr(type(inst), "__setstate__", None)
    if setstate is not None and setstate is not getattr(object, "__setstate__", None):
        inst.__setstate__(state)
        return
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    if state:
        if type(state) is not dict or not all(type(k) is str for k in state):
            raise UnpicklingError("BUILD state must be a dict of attribute names")
        inst.__dict__.update(state)
    if slots:
        if type(slots) is not dict:
            raise UnpicklingError("BUILD slot state must be a dict")
        for key, value in slots.items():
            setattr(inst, key, value)


def _persid(self):
    pid = self._pop()
    if type(pid) is not tuple or not pid or pid[0] not in ("storage", b"storage"):
        raise UnpicklingError(f"only persistent ids of storages are allowed, got {pid!r}")
    self._stack.append(self._persistent_load(pid))


def _append(self):
    item = self._pop()
    target = self._top()
    if type(target) is not list:
        raise UnpicklingError(f"APPEND may only extend a list, got {type(target).__name__}")
    target.append(item)


def _appends(self):
    items = self._pop_mark()
    target = self._top()
    if type(target) is not list:
        raise UnpicklingError(f"APPENDS may only extend a list, got {type(target).__name__}")
    target.extend(items)


def _check_mapping(self, target) -> None:
    if type(target) not in (dict, OrderedDict, Counter):
        raise UnpicklingError(f"SETITEM may only fill a dict, OrderedDict or Counter, got {type(target).__name__}")


def _set_key(target, key, value) -> None:
    try:
        target[key] = value
    except TypeError:
        raise UnpicklingError(f"unhashable dict key of type {type(key).__name__}") from None


def _setitem(self):
    value = self._pop()
    key = self._pop()
    target = self._top()
    _check_mapping(self, target)
    _set_key(target, key, value)


def _setitems(self):
    items = self._pop_mark()
    target = self._top()
    _check_mapping(self, target)
    if len(items) % 2:
        raise UnpicklingError("SETITEMS needs key/value pairs")
    for i in range(0, len(items), 2):
        _set_key(target, items[i], items[i + 1])


def _additems(self):
    items = self._pop_mark()
    target = self._top()
    if type(target) is not set:
        raise UnpicklingError(f"ADDITEMS may only fill a set, got {type(target).__name__}")
    try:
        target.update(items)
    except TypeError:
        raise UnpicklingError("unhashable set item") from None


def _frozenset(self):
    try:
        self._stack.append(frozenset(self._pop_mark()))
    except TypeError:
        raise UnpicklingError("unhashable frozenset item") from None


def _mark(self):
    self._metastack.append(self._stack)
    self._stack = []


def _put(self, index: int):
    self.memo[index] = self._top()


def _tuple_n(n: int):
    def handler(self):
        if len(self._stack) < n:
            raise UnpicklingError("unpickling stack underflow")
        items = tuple(self._stack[len(self._stack) - n :])
        del self._stack[len(self._stack) - n :]
        self._stack.append(items)

    return handler


def _push(value_fn):
    def handler(self):
        value = value_fn(self)  # first: it may pop a MARK and so change which list is the stack
        self._stack.append(value)

    return handler


def _binstring(self, n: int):
    data = bytes(self._read(n))
    self._stack.append(data if self._encoding == "bytes" else data.decode(self._encoding, "strict"))


def _signed_len(self) -> int:
    n = self._uint("<i")
    if n < 0:
        raise UnpicklingError("negative byte count")
    return n


_OP = {name: op[0] for name, op in vars(pickle).items() if name.isupper() and isinstance(op, bytes) and len(op) == 1}
_NAMES = {code: name for name, code in _OP.items()}

_HANDLERS = {
    _OP["PROTO"]: _proto,
    _OP["FRAME"]: _frame,
    _OP["STOP"]: _stop,
    _OP["MARK"]: _mark,
    _OP["POP"]: lambda self: self._pop(),
    _OP["POP_MARK"]: lambda self: self._pop_mark(),
    _OP["DUP"]: _push(lambda self: self._top()),
    _OP["NONE"]: _push(lambda self: None),
    _OP["NEWTRUE"]: _push(lambda self: True),
    _OP["NEWFALSE"]: _push(lambda self: False),
    _OP["BININT"]: _push(lambda self: self._uint("<i")),
    _OP["BININT1"]: _push(lambda self: self._uint("<B")),
    _OP["BININT2"]: _push(lambda self: self._uint("<H")),
    _OP["LONG1"]: _push(lambda self: decode_long(bytes(self._read(self._uint("<B"))))),
    _OP["LONG4"]: _push(lambda self: decode_long(bytes(self._read(self._signed_len())))),
    _OP["BINFLOAT"]: _push(lambda self: self._uint(">d")),
    _OP["SHORT_BINUNICODE"]: _push(lambda self: self._text(self._uint("<B"))),
    _OP["BINUNICODE"]: _push(lambda self: self._text(self._uint("<I"))),
    _OP["BINUNICODE8"]: _push(lambda self: self._text(self._uint("<Q"))),
    _OP["SHORT_BINBYTES"]: _push(lambda self: bytes(self._read(self._uint("<B")))),
    _OP["BINBYTES"]: _push(lambda self: bytes(self._read(self._uint("<I")))),
    _OP["BINBYTES8"]: _push(lambda self: bytes(self._read(self._uint("<Q")))),
    _OP["SHORT_BINSTRING"]: lambda self: _binstring(self, self._uint("<B")),
    _OP["BINSTRING"]: lambda self: _binstring(self, self._signed_len()),
    _OP["EMPTY_TUPLE"]: _push(lambda self: ()),
    _OP["EMPTY_LIST"]: _push(lambda self: []),
    _OP["EMPTY_DICT"]: _push(lambda self: {}),
    _OP["EMPTY_SET"]: _push(lambda self: set()),
    _OP["TUPLE"]: _push(lambda self: tuple(self._pop_mark())),
    _OP["TUPLE1"]: _tuple_n(1),
    _OP["TUPLE2"]: _tuple_n(2),
    _OP["TUPLE3"]: _tuple_n(3),
    _OP["LIST"]: _push(lambda self: self._pop_mark()),
    _OP["APPEND"]: _append,
    _OP["APPENDS"]: _appends,
    _OP["SETITEM"]: _setitem,
    _OP["SETITEMS"]: _setitems,
    _OP["ADDITEMS"]: _additems,
    _OP["FROZENSET"]: _frozenset,
    _OP["BINGET"]: _push(lambda self: self._get(self._uint("<B"))),
    _OP["LONG_BINGET"]: _push(lambda self: self._get(self._uint("<I"))),
    _OP["BINPUT"]: lambda self: _put(self, self._uint("<B")),
    _OP["LONG_BINPUT"]: lambda self: _put(self, self._uint("<I")),
    _OP["MEMOIZE"]: lambda self: _put(self, len(self.memo)),
    _OP["GLOBAL"]: _global,
    _OP["STACK_GLOBAL"]: _stack_global,
    _OP["REDUCE"]: _reduce,
    _OP["NEWOBJ"]: _newobj,
    _OP["BUILD"]: _build,
    _OP["BINPERSID"]: _persid,
}
