"""``ember.library`` against ``torch.library``: schemas inferred from the same hints, custom ops on
cpu and meta, through ``ember.ops`` and dispatch modes, mutation annotations, the low-level
``Library`` API, and the errors PyTorch raises."""

from __future__ import annotations

import collections.abc
import itertools
import typing

import numpy as np
import pytest

import ember
import ember.library
from ember import Tensor

torch = pytest.importorskip(
    "torch", reason="PyTorch is the oracle; it is installed only in the Python 3.11 test sessions"
)

_counter = itertools.count()


def fresh(prefix: str = "op") -> str:
    """A namespace-qualified name no other test uses."""
    return f"emtest::{prefix}{next(_counter)}"


# -- schema inference, with torch as the oracle --------------------------------------------------------

SIGNATURES = [
    "(x: Tensor) -> Tensor",
    "(x: Tensor, y: Tensor | None, zs: list[Tensor], n: int, a: float, b: bool, s: str, sh: Sequence[int]) -> Tensor",
    "(x: Tensor, n: int = 3, a: float = 1.5, b: bool = True, s: str = 'hi', y: Optional[Tensor] = None, *, k: int = 2) -> tuple[Tensor, Tensor]",
    "(x: Tensor) -> list[Tensor]",
    "(x: Tensor, ts: List[Tensor], seq: abc.Sequence[Tensor], opt: list[Optional[Tensor]]) -> Tensor",
    "(x: Tensor, l: list[int], lf: list[float], lb: list[bool], o: Optional[int] = None, of: float | None = None) -> Tensor",
    "(x: Tensor, ob: bool | None = None, os: Optional[str] = None, ol: Optional[list[int]] = None, osf: Sequence[float] | None = None) -> Tensor",
    "(x: Tensor, sc: Union[int, float, bool], osc: Union[int, float, bool, None] = None, lsc: list[Union[int, float, bool]] = None) -> Tensor",
    "(x: Tensor, d: dtype, dev: device, od: Optional[dtype] = None, odev: Optional[device] = None) -> Tensor",
    "(x: Tensor) -> int",
    "(x: Tensor) -> float",
    "(x: Tensor) -> bool",
    "(x: Tensor) -> Union[int, float, bool]",
    "(x: Tensor) -> tuple[Tensor, int, float]",
    "(x: Tensor, out: Tensor) -> None",
    "(*, x: Tensor, n: int = -4) -> Tensor",
    "(n: int, a: float = 0.25) -> Tensor",
]
BAD_SIGNATURES = [
    "(x) -> Tensor",
    "(x: dict) -> Tensor",
    "(x: Tensor) -> dict",
    "(*args: Tensor) -> Tensor",
    "(**kw: Tensor) -> Tensor",
    "(x: Tensor)",
    "(x: tuple[int, int]) -> Tensor",
    "(x: Tensor, y: list[str]) -> Tensor",
    "(x: Tensor, y: Optional[list[Tensor]] = None) -> Tensor",
    "(x: Tensor, /) -> Tensor",
    "(x: Tensor) -> Optional[Tensor]",
    "(x: Tensor) -> Sequence[Tensor]",
]


def _namespace(lib) -> dict:
    names = {"Optional": typing.Optional, "Union": typing.Union, "List": typing.List, "Sequence": typing.Sequence}  # noqa: UP006
    names["abc"] = collections.abc
    if lib is torch:
        names.update(Tensor=torch.Tensor, dtype=torch.dtype, device=torch.device)
    else:
        names.update(Tensor=ember.Tensor, dtype=ember.dtype, device=ember.device)
    return names


def _function(signature: str, lib):
    names = _namespace(lib)
    # Compiled apart from this module's ``from __future__ import annotations``: hints are real objects.
    exec(compile(f"def f{signature}:\n    pass\n", "<signature>", "exec", dont_inherit=True), names)
    return names["f"]


@pytest.mark.parametrize("signature", SIGNATURES)
def test_infer_schema_matches_torch(signature):
    expected = torch.library.infer_schema(_function(signature, torch), mutates_args=())
    assert ember.library.infer_schema(_function(signature, ember), mutates_args=()) == expected
    named = torch.library.infer_schema(_function(signature, torch), mutates_args=(), op_name="foo")
    assert ember.library.infer_schema(_function(signature, ember), mutates_args=(), op_name="foo") == named


@pytest.mark.parametrize("signature", BAD_SIGNATURES)
def test_unsupported_hints_are_refused_as_torch_refuses_them(signature):
    with pytest.raises(ValueError, match=r"infer_schema\(func\)") as theirs:
        torch.library.infer_schema(_function(signature, torch), mutates_args=())
    with pytest.raises(ValueError, match=r"infer_schema\(func\)") as ours:
        ember.library.infer_schema(_function(signature, ember), mutates_args=())
    # The same complaint (the first sentence, before the list of valid types).
    assert _first_sentence(ours.value) == _first_sentence(theirs.value)


def _first_sentence(error) -> str:
    text = str(error).replace("ember.core.tensor.", "").replace("torch.", "")
    return text.split(". ")[0]


@pytest.mark.parametrize(
    ("signature", "mutates"),
    [
        ("(x: Tensor, out: Tensor) -> None", {"out"}),
        ("(x: Tensor, out: Tensor) -> None", "unknown"),
        ("(a: Tensor, n: int, bs: list[Tensor], o: Optional[Tensor] = None) -> Tensor", {"bs", "o"}),
        ("(a: Tensor, n: int, bs: list[Tensor], o: Optional[Tensor] = None) -> Tensor", "unknown"),
        ("(x: Tensor, *, out: Tensor) -> Tensor", ["out", "x"]),
    ],
)
def test_mutated_arguments_get_alias_annotations(signature, mutates):
    expected = torch.library.infer_schema(_function(signature, torch), mutates_args=mutates)
    assert ember.library.infer_schema(_function(signature, ember), mutates_args=mutates) == expected
    assert "!" in expected


def test_mutates_args_errors_match_torch():
    for signature, mutates in (("(x: Tensor) -> Tensor", {"y"}), ("(x: Tensor, n: int) -> Tensor", {"n"})):
        with pytest.raises(ValueError) as theirs:
            torch.library.infer_schema(_function(signature, torch), mutates_args=mutates)
        with pytest.raises(ValueError) as ours:
            ember.library.infer_schema(_function(signature, ember), mutates_args=mutates)
        assert _first_sentence(ours.value) == _first_sentence(theirs.value)


def test_every_inferred_schema_defines_an_op():
    for signature in SIGNATURES:
        fn = _function(signature, ember)
        op = ember.library.custom_op(fresh("p"), fn, mutates_args="unknown")
        schema = op._opoverload.schema
        assert [a.name for a in schema.arguments] == list(fn.__code__.co_varnames[: len(schema.arguments)])
        writes = [a.name for a in schema.arguments if a.is_write]
        assert writes == [a.name for a in schema.arguments if a.type.base == "Tensor"]


# -- custom ops ------------------------------------------------------------------------------------


def _numpy_sin(x: Tensor) -> Tensor:
    return ember.from_numpy(np.sin(x.numpy()))


def test_custom_op_runs_on_cpu_and_through_ember_ops():
    name = fresh("sin")
    op = ember.library.custom_op(name, mutates_args=())(_numpy_sin)
    values = np.linspace(-2, 2, 7, dtype=np.float32)
    x = ember.from_numpy(values)
    expected = torch.sin(torch.from_numpy(values)).numpy()
    np.testing.assert_allclose(op(x).numpy(), expected, rtol=1e-6)
    ns, short = name.split("::")
    packet = getattr(getattr(ember.ops, ns), short)
    np.testing.assert_allclose(packet(x).numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(packet.default(x).numpy(), expected, rtol=1e-6)
    assert packet.default is op._opoverload
    assert repr(op) == f"<CustomOpDef({name})>"
    assert str(op._opoverload.schema) == f"{short}(Tensor x) -> Tensor"


def test_fake_kernel_is_the_meta_kernel():
    name = fresh("pair")

    @ember.library.custom_op(name, mutates_args=())
    def pair(x: Tensor, scale: float = 2.0) -> tuple[Tensor, Tensor]:
        return x * scale, x.t().contiguous()

    with pytest.raises(RuntimeError, match=r"no fake impl registered.*pair\.register_fake"):
        pair(ember.ones(2, 3, device="meta"))

    @pair.register_fake
    def _(x, scale=2.0):
        return ember.empty_like(x), x.new_empty((x.shape[1], x.shape[0]))

    cpu = pair(ember.arange(6.0).reshape(2, 3))
    meta = pair(ember.empty(2, 3, device="meta"))
    for c, m in zip(cpu, meta, strict=True):
        assert m.device.type == "meta"
        assert (m.shape, m.stride(), m.dtype) == (c.shape, c.stride(), c.dtype)
    assert cpu[0].tolist() == [[0, 2, 4], [6, 8, 10]]


def test_torch_custom_op_gives_the_same_results_and_metadata():
    name = fresh("cube")

    def cube_ember(x: Tensor) -> Tensor:
        return x * x * x

    def cube_torch(x: torch.Tensor) -> torch.Tensor:
        return x * x * x

    ours = ember.library.custom_op(name, cube_ember, mutates_args=())
    theirs = torch.library.custom_op(name, cube_torch, mutates_args=())
    ours.register_fake(lambda x: ember.empty_like(x))
    theirs.register_fake(lambda x: torch.empty_like(x))
    assert str(ours._opoverload.schema) == str(theirs._opoverload._schema).split("::", 1)[1]
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(ours(ember.from_numpy(x).t()).numpy(), theirs(torch.from_numpy(x).t()).numpy())
    m_ours, m_theirs = ours(ember.empty(3, 4, device="meta")), theirs(torch.empty(3, 4, device="meta"))
    assert tuple(m_ours.shape) == tuple(m_theirs.shape) and m_ours.stride() == m_theirs.stride()


def test_dispatch_modes_see_custom_ops():
    name = fresh("twice")
    op = ember.library.custom_op(name, lambda_twice, mutates_args=())
    seen = []

    class Recorder(ember.DispatchMode):
        def __ember_dispatch__(self, func, types, args, kwargs):
            seen.append(str(func))
            return func(*args, **kwargs)

    x = ember.ones(3)
    with Recorder():
        y = op(x)
        z = getattr(ember.ops.emtest, name.split("::")[1])(x)
    ns_name = name.replace("::", ".")
    # The mode sees the custom op; its kernel runs below the mode (as under TorchDispatchMode).
    assert seen == [f"{ns_name}.default", f"{ns_name}.default"]
    assert y.tolist() == z.tolist() == [2.0, 2.0, 2.0]


def lambda_twice(x: Tensor) -> Tensor:
    return x * 2


def test_mutating_custom_op():
    name = fresh("fill")

    @ember.library.custom_op(name, mutates_args={"out"})
    def fill(x: Tensor, out: Tensor) -> None:
        out.copy_(x + 1)

    schema = fill._opoverload.schema
    assert str(schema).endswith("(Tensor x, Tensor(a1!) out) -> ()")
    assert schema.is_mutable and schema.arguments[1].is_write and not schema.arguments[0].is_write
    out = ember.zeros(3)
    assert fill(ember.arange(3.0), out) is None
    assert out.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="non-functional"):
        fill.register_autograd(lambda ctx, grad: grad)


def test_kernels_per_device_type():
    name = fresh("dev")

    @ember.library.custom_op(name, mutates_args=(), device_types="cpu")
    def dev(x: Tensor) -> Tensor:
        return x + 1

    assert dev(ember.zeros(2)).tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="no fake impl"):
        dev(ember.zeros(2, device="meta"))
    dev.register_kernel("cpu", lambda x: x + 10)
    assert dev(ember.zeros(2)).tolist() == [10.0, 10.0]

    @dev.register_kernel(("cpu",))
    def _(x):
        return x + 100

    assert dev(ember.zeros(2)).tolist() == [100.0, 100.0]
    with pytest.raises(RuntimeError, match="device type"):
        dev.register_kernel("tpu", lambda x: x)
    with pytest.raises(RuntimeError, match="device type"):
        ember.library.custom_op(fresh(), lambda_twice, mutates_args=(), device_types="nope")


def test_register_autograd_is_stored_where_autograd_looks():
    name = fresh("sq")

    @ember.library.custom_op(name, mutates_args=())
    def sq(x: Tensor) -> Tensor:
        return x * x

    def setup_context(ctx, inputs, output):
        ctx.x = inputs[0]

    def backward(ctx, grad):
        return grad * 2 * ctx.x

    assert sq._opoverload.autograd is None
    sq.register_autograd(backward, setup_context=setup_context)
    assert sq._opoverload.autograd == (backward, setup_context)
    assert (sq._backward_fn, sq._setup_context_fn) == (backward, setup_context)


def test_custom_op_argument_errors():
    with pytest.raises(TypeError, match="mutates_args"):
        ember.library.custom_op(fresh())(lambda_twice)
    with pytest.raises(TypeError, match="mutates_args"):
        torch.library.custom_op(fresh())(lambda_twice)
    with pytest.raises(ValueError, match="namespace::name"):
        ember.library.custom_op("noname", lambda_twice, mutates_args=())
    with pytest.raises(RuntimeError, match="ident"):
        ember.library.custom_op("emtest::1a", lambda_twice, mutates_args=())
    with pytest.raises(ValueError, match="reserved"):
        ember.library.custom_op("aten::mine", lambda_twice, mutates_args=())
    with pytest.raises(ValueError, match="type annotation"):
        ember.library.custom_op(fresh(), lambda x: x, mutates_args=())


def test_custom_op_given_a_schema():
    name = fresh("given")
    op = ember.library.custom_op(name, lambda_twice, mutates_args=(), schema="(Tensor x) -> Tensor")
    assert op(ember.ones(1)).tolist() == [2.0]


def test_redefining_a_custom_op_replaces_it_but_other_ops_are_taken():
    name = fresh("again")
    first = ember.library.custom_op(name, lambda_twice, mutates_args=())
    assert first(ember.ones(1)).tolist() == [2.0]

    def again(x: Tensor) -> Tensor:
        return x * 3

    second = ember.library.custom_op(name, again, mutates_args=())
    assert second(ember.ones(1)).tolist() == [3.0]
    ns, short = name.split("::")
    assert getattr(getattr(ember.ops, ns), short).default is second._opoverload
    lib = ember.library.Library("emtest_taken", "FRAGMENT")
    lib.define("taken(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="multiple times"):
        ember.library.custom_op("emtest_taken::taken", lambda_twice, mutates_args=())
    lib._destroy()


# -- the Library API --------------------------------------------------------------------------------


def test_library_define_impl_and_destroy():
    lib = ember.library.Library("emtest_lib", "DEF")
    assert lib.define("foo(Tensor x, float alpha=1.0) -> Tensor") == "foo"
    lib.impl("foo", lambda x, alpha=1.0: x * alpha + 1, "CPU")
    foo = ember.ops.emtest_lib.foo
    assert foo(ember.ones(2), 3.0).tolist() == [4.0, 4.0]
    assert str(foo.default.schema) == "foo(Tensor x, float alpha=1.0) -> Tensor"
    with pytest.raises(NotImplementedError, match=r"emtest_lib::foo.*meta"):
        foo(ember.ones(2, device="meta"))
    lib.impl("foo", lambda x, alpha=1.0: ember.empty_like(x), "Meta")
    assert foo(ember.ones(2, device="meta")).shape == (2,)
    with pytest.raises(RuntimeError, match="multiple times"):
        lib.define("foo(Tensor x, float alpha=1.0) -> Tensor")
    with pytest.raises(RuntimeError, match="single TORCH_LIBRARY"):
        ember.library.Library("emtest_lib", "DEF")
    lib._destroy()
    with pytest.raises(AttributeError):
        ember.ops.emtest_lib.foo  # noqa: B018
    again = ember.library.Library("emtest_lib", "DEF")  # the namespace is free again
    again._destroy()


def test_library_kinds_and_keys():
    with pytest.raises(ValueError, match="Unsupported kind"):
        ember.library.Library("emtest_kind", "FOO")
    with pytest.raises(RuntimeError, match="single TORCH_LIBRARY"):
        ember.library.Library("aten", "DEF")
    impl_only = ember.library.Library("emtest_kind", "IMPL")
    with pytest.raises(RuntimeError, match="IMPL"):
        impl_only.define("x(Tensor a) -> Tensor")
    lib = ember.library.Library("emtest_kind", "FRAGMENT")
    lib.define("comp(Tensor a) -> Tensor")
    lib.define("expl(Tensor a) -> Tensor")
    # CompositeImplicitAutograd (the default key) is a decomposition: it runs on every device.
    lib.impl("comp", lambda a: a + a)
    assert ember.ops.emtest_kind.comp(ember.ones(2)).tolist() == [2.0, 2.0]
    assert ember.ops.emtest_kind.comp(ember.ones(2, device="meta")).is_meta
    lib.impl("expl", lambda a: a * 5, "CompositeExplicitAutograd")
    assert ember.ops.emtest_kind.expl(ember.ones(1)).tolist() == [5.0]
    with pytest.raises(NotImplementedError, match="register_autograd"):
        lib.impl("expl", lambda a: a, "Autograd")
    with pytest.raises(RuntimeError, match="does not exist"):
        lib.impl("missing", lambda a: a, "CPU")
    lib._destroy()


def test_impl_library_overrides_a_kernel_until_destroyed():
    lib = ember.library.Library("emtest_over", "FRAGMENT")
    lib.define("base(Tensor a) -> Tensor")
    lib.impl("base", lambda a: a + 1, "CPU")
    override = ember.library.Library("emtest_over", "IMPL")
    override.impl("base", lambda a: a - 1, "CPU")
    assert ember.ops.emtest_over.base(ember.zeros(1)).tolist() == [-1.0]
    override._destroy()
    assert ember.ops.emtest_over.base(ember.zeros(1)).tolist() == [1.0]
    lib._destroy()


def test_module_level_functions():
    name = fresh("fn")
    ember.library.define(name, "(Tensor x, SymInt n) -> Tensor")
    ember.library.impl(name, "cpu", lambda x, n: x + n)

    @ember.library.register_fake(name)
    def _(x, n):
        return ember.empty_like(x)

    ns, short = name.split("::")
    packet = getattr(getattr(ember.ops, ns), short)
    assert packet(ember.zeros(2), 4).tolist() == [4.0, 4.0]
    assert packet(ember.zeros(2, device="meta"), 4).is_meta
    ember.library.register_kernel(name, "cpu", lambda x, n: x - n)
    assert packet(ember.zeros(1), 4).tolist() == [-4.0]
    ember.library.register_autograd(name, lambda ctx, g: g)
    assert packet.default.autograd[0] is not None
    with pytest.raises(RuntimeError, match="already has a Meta"):
        ember.library.register_fake("aten::add.Tensor", lambda a, b, alpha=1: a)


def test_module_level_functions_route_custom_ops_to_their_definition():
    name = fresh("route")
    op = ember.library.custom_op(name, lambda_twice, mutates_args=())
    ember.library.register_fake(name, lambda x: ember.empty_like(x))
    assert op._abstract_fn is not None
    ember.library.register_kernel(op, "cpu", lambda x: x * 7)
    assert op(ember.ones(1)).tolist() == [7.0]
    ember.library.impl(name, "cpu", lambda x: x * 9)
    assert op(ember.ones(1)).tolist() == [9.0]
    ember.library.register_autograd(op._opoverload, lambda ctx, g: g)
    assert op._backward_fn is not None


def test_ember_library_is_reachable_from_the_top_level():
    import ember as top

    assert top.library.custom_op is ember.library.custom_op
