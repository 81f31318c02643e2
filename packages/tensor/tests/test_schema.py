"""Op schemas: every registered op's schema prints and parses back to itself, its kernels' Python
signatures take the schema's arguments, and malformed schema strings are refused."""

from __future__ import annotations

import inspect

import pytest

import ember  # noqa: F401  (registers every op)
from ember.core import dispatch
from ember.core.schema import parse_schema

OPS = sorted(dispatch.all_ops(), key=str)
IDS = [str(op) for op in OPS]


@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_schema_round_trips(op):
    text = str(op.schema)
    assert parse_schema(text) == op.schema, text
    assert str(parse_schema(text)) == text


def _kernels(op):
    found = [(name, fn) for name, fn in op._kernels.items()]
    if op.decomposition is not None:
        found.append(("decomposition", op.decomposition))
    return found


def signature_problems(schema, fn) -> list[str]:
    """How ``fn``'s Python signature disagrees with ``schema`` (names, kwarg-only, defaults)."""
    params = inspect.signature(fn).parameters
    kinds = {p.kind for p in params.values()}
    if inspect.Parameter.VAR_POSITIONAL in kinds and inspect.Parameter.VAR_KEYWORD in kinds:
        return []  # a generic forwarding kernel (``*args, **kwargs``) takes anything
    problems = []
    for arg in schema.arguments:
        p = params.get(arg.name)
        if p is None:
            problems.append(f"{arg.name!r} is missing")
            continue
        if arg.kwarg_only and p.kind not in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
            problems.append(f"{arg.name!r} must be accepted by keyword")
        if not arg.kwarg_only and p.kind is not p.POSITIONAL_OR_KEYWORD:
            problems.append(f"{arg.name!r} must be positional")
        if arg.has_default:
            expected = arg.default
            if isinstance(expected, list) and isinstance(p.default, tuple):
                expected = tuple(expected)
            if p.default is p.empty:
                problems.append(f"{arg.name!r} has no default")
            elif not isinstance(expected, str) and p.default != expected:
                # (enum-like defaults such as contiguous_format have Python spellings of their own)
                problems.append(f"{arg.name!r} default {p.default!r} != schema's {arg.default!r}")
        elif p.default is not p.empty and not (arg.type.optional and p.default is None):
            # A kernel may let an optional argument (``int[1]? dim``) be left out, meaning None.
            problems.append(f"{arg.name!r} has a default the schema lacks")
    schema_positional = [a.name for a in schema.arguments if not a.kwarg_only]
    positional = [n for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    if positional[: len(schema_positional)] != schema_positional[: len(positional)]:
        problems.append(f"positional order {positional} vs the schema's {schema_positional}")
    names = {a.name for a in schema.arguments}
    for n, p in params.items():
        if n not in names and p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            problems.append(f"required parameter {n!r} is not in the schema")
    return problems


@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_kernel_signatures_take_the_schema_arguments(op):
    for where, fn in _kernels(op):
        assert signature_problems(op.schema, fn) == [], f"{op} {where} kernel {fn.__qualname__}"


def test_signature_check_catches_mismatches():
    schema = parse_schema("f(Tensor self, int dim=0, *, bool keepdim=False) -> Tensor")

    def good(self, dim=0, *, keepdim=False):
        pass

    def renamed(self, axis=0, *, keepdim=False):
        pass

    def wrong_default(self, dim=1, *, keepdim=False):
        pass

    def keyword_only_dim(self, *, dim=0, keepdim=False):
        pass

    def extra_required(self, dim=0, *, keepdim=False, scale):
        pass

    assert signature_problems(schema, good) == []
    for bad in (renamed, wrong_default, keyword_only_dim, extra_required):
        assert signature_problems(schema, bad), bad.__name__


SCHEMAS = [
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
    "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
    'foo(Tensor self, float eps=1e-05, str reduction="mean", int[] dims=[0,1], bool? b=None) -> ()',
    "bar(Tensor self, *, MemoryFormat? memory_format=contiguous_format) -> (Tensor, Tensor)",
    "baz(Tensor[] tensors, Scalar? s=None) -> Tensor",
    "qux.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    'quux(Tensor self, str s="a1", str t="two words", str u="") -> Tensor',
]


@pytest.mark.parametrize("text", SCHEMAS)
def test_known_schemas_round_trip(text):
    schema = parse_schema(text)
    assert parse_schema(str(schema)) == schema


def test_parsed_fields():
    schema = parse_schema("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")
    assert (schema.name, schema.overload, schema.qualified) == ("add_", "Tensor", "add_.Tensor")
    self_arg, other, alpha = schema.arguments
    assert self_arg.alias.set == "a" and self_arg.alias.is_write and self_arg.is_write
    assert not other.is_write and not other.kwarg_only and not other.has_default
    assert alpha.kwarg_only and alpha.default == 1 and alpha.type.base == "Scalar"
    assert schema.is_inplace and schema.is_mutable and not schema.is_out
    out = parse_schema("qux.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)")
    assert out.is_out and not out.is_inplace
    listed = parse_schema("f(int[2] size, Tensor?[] xs, int[1]? dim) -> Tensor")
    size, xs, dim = (a.type for a in listed.arguments)
    assert size.is_list and size.list_size == 2 and not size.optional
    assert xs.is_list and xs.elem_optional and not xs.optional
    assert dim.is_list and dim.optional and dim.list_size == 1
    wild = parse_schema("unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]")
    assert wild.arguments[0].alias.to_wildcard and wild.returns[0].type.is_list
    assert parse_schema('g(Tensor self, str s="a1") -> Tensor').arguments[1].default == "a1"
    assert parse_schema("h(Tensor self) -> ()").returns == ()


BAD = [
    "add(Tensor self, Tensor other -> Tensor",
    "add(Tensor self) Tensor",
    "add(Tensor self)",
    "add Tensor self -> Tensor",
    "(Tensor self) -> Tensor",
    "Add(Tensor self) -> Tensor",
    "add(Tensr self) -> Tensor",
    "add(Tensor self, Tensor self) -> Tensor",
    "add(Tensor) -> Tensor",
    "add(Tensor self=) -> Tensor",
    "add(Tensor self, int x=[1,) -> Tensor",
    "add(Tensor self) -> Tensr",
    "add(Tensor self) -> ",
    "add(Tensor self, int 1x) -> Tensor",
    "add(Tensor self, *, *, int x) -> Tensor",
    "add(Tensor self, int x=1, int y) -> Tensor",
    "add(Tensor self) -> Tensor extra junk",
    "add.(Tensor self) -> Tensor",
    "",
]


@pytest.mark.parametrize("text", BAD)
def test_malformed_schemas_raise_value_error(text):
    with pytest.raises(ValueError, match="cannot parse schema"):
        parse_schema(text)
