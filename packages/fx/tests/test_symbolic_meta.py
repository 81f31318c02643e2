"""Every op of the core's OpInfo tables, run on meta tensors whose sizes and strides are ``SymInt``s.

For each sample the inputs' sizes, strides and offsets come from a ``ShapeEnv`` (duck-sized, 0 and
1 specialized, as PyTorch makes them); the op runs on those meta tensors, and its output sizes and
strides, evaluated at the real sizes, must equal those of the op run on the CPU. The guards the
meta kernels recorded must hold for the real inputs. Ops whose output shape depends on the data
are listed apart and must raise the error that says so.
"""

from __future__ import annotations

import importlib
import pathlib
import warnings

import numpy as np
import pytest
import sympy
from opinfo import OpInfo, build

import ember
from ember.core.storage import Storage
from ember.core.symbolic import SymBool, SymFloat, SymInt
from ember.core.tensor import Tensor, _new
from ember.fx.experimental.sym_node import SymNode
from ember.fx.experimental.symbolic_shapes import ShapeEnv

TABLES_DIR = pathlib.Path(importlib.import_module("opinfo").__file__).parent
TABLES = sorted(p.stem for p in TABLES_DIR.glob("opinfo_*.py"))
ALL_OPS: list[OpInfo] = [op for table in TABLES for op in importlib.import_module(table).OPS]
# The entries the tables mark ``meta=False`` are factories and out= forms whose samples hold no
# input tensor (nothing symbolic reaches them), and the data-dependent ops below.
OPS = [op for op in ALL_OPS if op.meta]

# Ops whose output shape depends on the input's values: no meta kernel can give it, and each says
# so with the error named here.
DATA_DEPENDENT: dict[str, tuple[type[Exception], str]] = {
    "masked_select": (NotImplementedError, "data-dependent output shape"),
    "nonzero": (NotImplementedError, "data-dependent output shape"),
    "nonzero_as_tuple": (NotImplementedError, "data-dependent output shape"),
    "argwhere": (NotImplementedError, "data-dependent output shape"),
    "where_condition": (NotImplementedError, "data-dependent output shape"),
    "unique": (NotImplementedError, "data-dependent output shape"),
    "unique_consecutive": (NotImplementedError, "data-dependent output shape"),
    "aten.index.Tensor": (NotImplementedError, "data-dependent shape"),
    "F.one_hot inferred": (RuntimeError, "cannot infer it without data"),
}

# Ops whose meta kernel is not yet SymInt-safe, each with why.
NOT_SYMINT_SAFE: dict[str, str] = {
    **dict.fromkeys(
        ["linalg.lu", "linalg.lu_solve", "lu_unpack"], "the permutation is composed one row swap per pivot, in Python"
    ),
    **dict.fromkeys(["linalg.householder_product", "ormqr"], "one reflector applied per entry of tau, in Python"),
}

# Ops that turn a symbolic size into an int (specializing it) by their nature, as PyTorch's do:
# the number of tensors they return is the size.
SPECIALIZE: dict[str, str] = {
    "chunk": "returns one tensor per chunk",
    "split": "returns one tensor per piece",
    "split_function": "returns one tensor per piece",
    "unbind": "returns one tensor per index",
    "split_copy_Tensor": "returns one tensor per piece",
    "unbind_copy_int": "returns one tensor per index",
    **dict.fromkeys(["cummax", "cummin", "Tensor.cummax"], "finds the indices one step per position along dim"),
    "combinations": "the result has one row per combination of the size's positions",
}

META = ember.device("meta")


def _samples(op: OpInfo) -> list:
    """The samples of one dtype: float32's where it has some, else the first dtype's that has some."""
    for dtype in sorted(op.dtypes, key=lambda d: d != "float32"):
        samples = op.samples(dtype, np.random.default_rng(1234))
        if samples:
            return samples
    return []


def _symbolic(value, env: ShapeEnv, names: list, placeholders: list, reals: list):
    """``value`` with every tensor replaced by a meta tensor of symbolic sizes, strides and offset."""
    if isinstance(value, Tensor):
        source = f"L['a{len(names)}']"
        sizes, strides, offset = env.create_symbolic_sizes_strides_storage_offset(value, source)
        storage = Storage(None, value.untyped_storage().nbytes(), META)
        fake = _new(Tensor, storage, sizes, strides, offset, value.dtype, None)
        names.append(f"a{len(names)}")
        placeholders.append(fake)
        reals.append(value)
        return fake
    if isinstance(value, list | tuple):
        return type(value)(_symbolic(v, env, names, placeholders, reals) for v in value)
    if isinstance(value, dict):
        return {k: _symbolic(v, env, names, placeholders, reals) for k, v in value.items()}
    return value


def _at_hints(env: ShapeEnv, value):
    """A size, stride or offset evaluated at the inputs' real sizes."""
    if isinstance(value, SymInt | SymFloat | SymBool):
        expr = value.node.expr.xreplace(env.var_to_val)
        assert not expr.free_symbols, f"{value} mentions symbols without a value"
        return int(expr) if expr.is_Integer else expr
    return value


def _compare(env: ShapeEnv, meta, cpu, sample) -> None:
    if isinstance(cpu, list | tuple):
        assert isinstance(meta, list | tuple) and len(meta) == len(cpu), f"{sample}: {meta!r} vs {cpu!r}"
        for m, c in zip(meta, cpu, strict=True):
            _compare(env, m, c, sample)
        return
    if not isinstance(cpu, Tensor):
        return
    assert meta.device.type == "meta", f"{sample}: result on {meta.device}"
    shape = tuple(_at_hints(env, s) for s in meta.shape)
    stride = tuple(_at_hints(env, s) for s in meta.stride())
    assert (shape, meta.dtype) == (tuple(cpu.shape), cpu.dtype), (
        f"{sample}: symbolic {meta.shape} at the hints is {shape} {meta.dtype}; CPU {tuple(cpu.shape)} {cpu.dtype}"
    )
    assert stride == cpu.stride(), (
        f"{sample}: symbolic strides {meta.stride()} at the hints are {stride}; CPU {cpu.stride()}"
    )


def _run(op: OpInfo, form: str, args, kwargs, device: str = "cpu"):
    """The op in one of its forms: ``functional``, ``inplace`` (on the first argument) or ``out``
    (into an empty tensor of the functional result's dtype)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if form == "inplace":
            return op.inplace(ember, *args, **kwargs)
        if form == "out":
            dtype = op.call(ember, *build_like(args), **build_like(kwargs)).dtype
            return op.call(ember, *args, **kwargs, out=ember.empty(0, dtype=dtype, device=device))
        return op.call(ember, *args, **kwargs)


def build_like(value):
    """Plain meta tensors of the same sizes (ints): to learn an out= form's dtype without guards."""
    if isinstance(value, Tensor):
        return ember.empty_strided(
            tuple(map(_hint, value.shape)), tuple(map(_hint, value.stride())), dtype=value.dtype, device="meta"
        )
    if isinstance(value, list | tuple):
        return type(value)(build_like(v) for v in value)
    if isinstance(value, dict):
        return {k: build_like(v) for k, v in value.items()}
    return value


def _hint(value) -> int:
    return value.node.hint if isinstance(value, SymInt) else value


def _sweep(op: OpInfo, form: str = "functional") -> tuple[int, int]:
    """Run every sample of ``op`` symbolically; returns how many were compared, and how many the CPU
    refused (samples of errors, left out: some errors depend on data a meta tensor lacks)."""
    compared = refused = 0
    for sample in _samples(op):
        args, kwargs = build(sample.args, ember), build(sample.kwargs, ember)
        try:
            cpu = _run(op, form, args, kwargs)
        except Exception:  # a sample of an error: only results are compared here
            refused += 1
            continue
        if form == "out" and not isinstance(cpu, Tensor):
            continue
        env = ShapeEnv()
        names: list = []
        placeholders: list = []
        reals: list = []
        sym_args = _symbolic(args, env, names, placeholders, reals)
        sym_kwargs = _symbolic(kwargs, env, names, placeholders, reals)
        meta = _run(op, form, sym_args, sym_kwargs, "meta")
        _compare(env, meta, cpu, sample)
        # The guards the meta kernels took hold for the inputs the samples were made from.
        code = env.produce_guards(placeholders, [f"L['{n}']" for n in names])
        scope = {"L": dict(zip(names, reals, strict=True))}
        # One eval for all of them (compiling is most of its cost); each alone only to name a failure.
        if code and not eval(" and ".join(f"({line})" for line in code), {}, scope):
            failing = [line for line in code if not eval(line, {}, scope)]
            raise AssertionError(f"{sample}: the guards {failing} fail on the real inputs")
        compared += 1
    return compared, refused


@pytest.mark.parametrize(
    "op, form",
    [pytest.param(op, "inplace", id=f"{op.name}-inplace") for op in OPS if op.inplace is not None]
    + [pytest.param(op, "out", id=f"{op.name}-out") for op in OPS if op.out],
)
def test_symbolic_meta_of_inplace_and_out_forms(op: OpInfo, form: str):
    if sum(_sweep(op, form)) == 0:
        pytest.skip("the entry holds error samples only")


def _param(op: OpInfo):
    marks = ()
    if op.name in NOT_SYMINT_SAFE:
        marks = (pytest.mark.xfail(reason=NOT_SYMINT_SAFE[op.name], strict=True),)
    return pytest.param(op, id=op.name, marks=marks)


@pytest.mark.parametrize("op", [_param(op) for op in OPS if op.name not in DATA_DEPENDENT])
def test_symbolic_meta_matches_cpu(op: OpInfo, monkeypatch):
    # int() or float() of a symbolic size specializes it: meta kernels must not, except where listed.
    specialized = []

    def watch(method):
        def watched(node):
            if not node.expr.is_Number:
                specialized.append(str(node.expr))
            return method(node)

        return watched

    monkeypatch.setattr(SymNode, "int_", watch(SymNode.int_))
    monkeypatch.setattr(SymNode, "float_", watch(SymNode.float_))
    if sum(_sweep(op)) == 0:
        pytest.skip("the entry holds error samples only")
    assert not specialized or op.name in SPECIALIZE, f"{op.name} took int() of the symbolic sizes {specialized}"


@pytest.mark.parametrize("op", [pytest.param(op, id=op.name) for op in ALL_OPS if op.name in DATA_DEPENDENT])
def test_data_dependent_ops_refuse_symbolic_meta(op: OpInfo):
    error, match = DATA_DEPENDENT[op.name]
    with pytest.raises(error, match=match):
        _sweep(op)


def test_the_lists_name_only_ops_of_the_tables():
    names = {op.name for op in ALL_OPS}
    assert set(DATA_DEPENDENT) <= names and set(NOT_SYMINT_SAFE) <= names and set(SPECIALIZE) <= names
    assert not set(DATA_DEPENDENT) & set(NOT_SYMINT_SAFE)


def test_symbolic_sizes_reach_the_meta_kernel():
    env = ShapeEnv()
    x = ember.empty(5, 3)
    sizes, strides, offset = env.create_symbolic_sizes_strides_storage_offset(x, "L['x']")
    meta = _new(Tensor, Storage(None, x.untyped_storage().nbytes(), META), sizes, strides, offset, x.dtype, None)
    out = (meta + meta).sum(1)
    assert isinstance(out.shape[0], SymInt)
    assert out.shape[0].node.expr == sympy.Symbol("s0", positive=True, integer=True)


# Factories and views given symbolic sizes (the tables' factory entries have no tensor to make
# symbolic): the result at the hints is the CPU's, and no size was specialized to its value.
FACTORIES = {
    "empty": lambda n, m, dev: ember.empty(n, m, device=dev),
    "zeros": lambda n, m, dev: ember.zeros((n, m), device=dev),
    "ones": lambda n, m, dev: ember.ones([n, 2], device=dev),
    "full": lambda n, m, dev: ember.full((n, m), 1.5, device=dev),
    "empty_strided": lambda n, m, dev: ember.empty_strided((n, m), (1, n), device=dev),
    "rand": lambda n, m, dev: ember.rand(n, m, device=dev),
    "randn": lambda n, m, dev: ember.randn(n, device=dev),
    "randint": lambda n, m, dev: ember.randint(0, 5, (n, m), device=dev),
    "randperm": lambda n, m, dev: ember.randperm(n, device=dev),
    "arange": lambda n, m, dev: ember.arange(n, device=dev),
    "arange with a step": lambda n, m, dev: ember.arange(1, n, 2, device=dev),
    "eye": lambda n, m, dev: ember.eye(n, m, device=dev),
    "linspace": lambda n, m, dev: ember.linspace(0, 1, n, device=dev),
    "new_zeros": lambda n, m, dev: ember.empty(2, device=dev).new_zeros((n, m)),
    "expand": lambda n, m, dev: ember.empty(1, 3, device=dev).expand(n, 3),
    "narrow": lambda n, m, dev: ember.empty(20, device=dev).narrow(0, 1, m),
    "view with -1": lambda n, m, dev: ember.empty(n * m, device=dev).view(n, -1),
}


@pytest.mark.parametrize("name", list(FACTORIES))
def test_factories_and_views_take_symbolic_sizes(name):
    env = ShapeEnv()
    n = env.create_symintnode(env.create_symbol(5, "L['n']"), hint=5)
    m = env.create_symintnode(env.create_symbol(3, "L['m']"), hint=3)
    meta, cpu = FACTORIES[name](n, m, "meta"), FACTORIES[name](5, 3, "cpu")
    _compare(env, meta, cpu, name)
    assert not any(v.is_Integer for v in env.replacements.values()), f"{name} specialized: {env.format_guards()}"


# A size computed from data (an unbacked symbol, as nonzero's under fake tensors): the layout
# helpers decide size-obliviously (it is taken to be neither 0 nor 1), so common ops go through
# without a value to guard on, and record no guard.
UNBACKED_OPS = {
    "add a scalar": lambda t, dev: t + 1,
    "mul": lambda t, dev: t * t,
    "add a bias (broadcast)": lambda t, dev: t + ember.empty(3, device=dev),
    "sum(0)": lambda t, dev: t.sum(0),
    "sum(1)": lambda t, dev: t.sum(1),
    "view(-1)": lambda t, dev: t.view(-1),
    "t().contiguous()": lambda t, dev: t.t().contiguous(),
    "clone": lambda t, dev: t.clone(),
    "cat": lambda t, dev: ember.cat([t, t]),
    "select": lambda t, dev: t[:, 1],
    "matmul": lambda t, dev: t @ ember.empty(3, 4, device=dev),
    "unsqueeze": lambda t, dev: t.unsqueeze(1),
    "softmax": lambda t, dev: t.softmax(-1),
}


@pytest.mark.parametrize("name", list(UNBACKED_OPS))
def test_ops_on_a_size_computed_from_data(name):
    from ember.core.tensor import empty

    env = ShapeEnv()
    u = env.create_unbacked_symint()
    ember._check_is_size(u)
    t = empty((u, 3), ember.float32, META)
    out = UNBACKED_OPS[name](t, "meta")
    expected = UNBACKED_OPS[name](ember.empty(5, 3), "cpu")
    at_five = {u.node.expr: 5}
    shape = tuple(int(sympy.sympify(s).xreplace(at_five)) for s in out.shape)
    stride = tuple(int(sympy.sympify(s).xreplace(at_five)) for s in out.stride())
    assert (shape, stride) == (tuple(expected.shape), expected.stride())
    assert not env.guards
