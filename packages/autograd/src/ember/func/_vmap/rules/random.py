"""Random ops with a batched argument (see ``randomness.py`` for those without one).

``different``: every element of these ops is an independent draw, so running the op on the batched
value (aligned as for pointwise ops) gives every lane its own numbers. ``same``: the op runs lane by
lane from the same generator state, so every lane draws the same numbers, and the generator ends
where one lane's draws leave it. ``error`` never gets here: the vmap mode raises first.
"""

from __future__ import annotations

from ember.core.generator import resolve
from ember.func._vmap.common import aten, check_inplace, lane, stack_lanes
from ember.func._vmap.randomness import RANDOM_ERROR
from ember.func._vmap.rules.pointwise import pointwise
from ember.func._vmap.table import register


def _same(call):
    """Each lane from the same generator state (a loop: the lanes must replay one stream of draws)."""
    check_inplace(call)
    generator = resolve(call.kwargs.get("generator"))
    start = generator.get_state()
    results = []
    for i in range(call.size):
        generator.set_state(start)
        args = tuple(lane(call, a, i) for a in call.args)
        kwargs = {k: lane(call, v, i) for k, v in call.kwargs.items()}
        results.append(call.op(*args, **kwargs))
    if call.op.schema.is_inplace:
        return None
    return stack_lanes(results)


def random_rule(different):
    def rule(call):
        if call.randomness == "error":
            raise RuntimeError(RANDOM_ERROR)
        if call.randomness == "same":
            return _same(call)
        return different(call)

    return rule


def _multinomial(call):
    x = call.args[0]
    if x.ndim == 2:
        return call.op(*call.args, **call.kwargs)
    rows = x.reshape((-1, x.shape[-1]))
    out = call.op(rows, *call.args[1:], **call.kwargs)
    return out.reshape((*tuple(x.shape[:-1]), out.shape[-1]))


register(
    random_rule(pointwise),
    aten.bernoulli.default,
    aten.bernoulli.p,
    aten.bernoulli_.Tensor,
    aten.bernoulli_.float,
    aten.dropout.default,
    aten.dropout_.default,
    aten.native_dropout.default,
    aten.exponential_.default,
    aten.normal.Tensor_Tensor,
    aten.normal.Tensor_float,
    aten.normal.float_Tensor,
    aten.normal_.default,
    aten.uniform_.default,
    aten.random_.default,
    getattr(aten.random_, "from"),
    aten.random_.to,
    aten.rand_like.default,
    aten.rand_like.generator,
    aten.randn_like.default,
    aten.randn_like.generator,
    aten.randint_like.default,
    aten.randint_like.generator,
    aten.randint_like.low_dtype,
    aten.randint_like.low_generator_dtype,
)
register(random_rule(_multinomial), aten.multinomial.default)
