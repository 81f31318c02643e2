"""Run by every rank (through `ember run`): each collective against the same math done in one
process with NumPy. Every rank can make every rank's input (it depends only on the rank), so each
checks its own result; a failed check raises, which fails the launcher's exit code."""

import sys

import ml_dtypes
import numpy as np

import ember
import ember.distributed as dist
from ember.distributed import ReduceOp

dist.init_process_group(backend=sys.argv[1] if len(sys.argv) > 1 else None)
rank, world = dist.get_rank(), dist.get_world_size()
assert dist.is_initialized() and dist.get_backend() == "mpi"

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int8", "int32", "int64", "uint8"]
NP = {"bfloat16": ml_dtypes.bfloat16}


def values(r, shape, dtype, seed=0):
    rng = np.random.default_rng(1000 * seed + r)
    if dtype in FLOATS:
        return rng.uniform(-4, 4, size=shape).astype(NP.get(dtype, dtype))
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    low = 0 if dtype == "uint8" else -5
    return rng.integers(low, 6, size=shape).astype(dtype)


def tensor(array):
    return (
        ember.from_numpy(np.ascontiguousarray(array).copy())
        if array.dtype != NP["bfloat16"]
        else ember.tensor(array.astype(np.float32), dtype=ember.bfloat16)
    )


def host(t):
    return t.float().numpy() if t.dtype in (ember.bfloat16,) else t.numpy()


def reduce_all(arrays, op, dtype):
    wide = [a.astype(np.float32) if dtype in ("float16", "bfloat16") else a for a in arrays]
    fold = {
        ReduceOp.SUM: np.add,
        ReduceOp.AVG: np.add,
        ReduceOp.PRODUCT: np.multiply,
        ReduceOp.MIN: np.minimum,
        ReduceOp.MAX: np.maximum,
        ReduceOp.BAND: np.bitwise_and,
        ReduceOp.BOR: np.bitwise_or,
        ReduceOp.BXOR: np.bitwise_xor,
    }[op]
    out = wide[0]
    for a in wide[1:]:
        out = fold(out, a)
    if op == ReduceOp.AVG:
        out = np.trunc(out / world).astype(out.dtype) if out.dtype.kind in "iu" else out / world
    if dtype in ("float16", "bfloat16"):
        out = out.astype(NP.get(dtype, dtype)).astype(np.float32)
    return out


def close(got, want, dtype, what):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    tol = {"float16": 1e-3, "bfloat16": 1e-2, "float32": 1e-5}.get(dtype, 1e-12)
    if not np.allclose(got, want, rtol=tol, atol=tol):
        raise AssertionError(f"rank {rank}: {what} ({dtype}): got {got.ravel()[:6]}, want {want.ravel()[:6]}")


shape = (3, 5)
# all_reduce: every op on every dtype it is defined for; then reduce to each root.
for dtype in FLOATS + INTS:
    ops = [ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX]
    if dtype in INTS:
        ops += [ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR]
    for op in ops:
        t = tensor(values(rank, shape, dtype))
        dist.all_reduce(t, op=op)
        close(
            host(t), reduce_all([values(r, shape, dtype) for r in range(world)], op, dtype), dtype, f"all_reduce {op}"
        )
    root = world - 1
    t = tensor(values(rank, shape, dtype, seed=1))
    dist.reduce(t, dst=root, op=ReduceOp.MAX)
    if rank == root:
        close(
            host(t),
            reduce_all([values(r, shape, dtype, 1) for r in range(world)], ReduceOp.MAX, dtype),
            dtype,
            "reduce",
        )

t = ember.tensor([rank % 2 == 0, True, False])
dist.all_reduce(t)  # bool: SUM is "or"
assert t.tolist() == [True, True, False], t.tolist()
t = ember.full((4,), float(rank + 1))
dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
close(t.numpy(), np.full(4, 2.0 * sum(range(1, world + 1))), "float32", "premul_sum")
c = ember.tensor([complex(rank, 1)], dtype=ember.complex64)
dist.all_reduce(c)
assert c.tolist() == [complex(sum(range(world)), world)], c.tolist()
try:
    dist.all_reduce(ember.tensor([1j]), op=ReduceOp.MAX)
    raise AssertionError("MAX on complex must raise")
except ValueError:
    pass

# non-contiguous tensors are written back in place
base = ember.zeros(4, 6)
view = base[:, ::2]
view.add_(rank + 1)
dist.all_reduce(view)
close(base.numpy()[:, ::2], np.full((4, 3), sum(range(1, world + 1))), "float32", "strided all_reduce")
assert base.numpy()[:, 1::2].sum() == 0

# broadcast, all_gather, gather, scatter: bit for bit, every dtype
for dtype in FLOATS + INTS + ["bool"]:
    mine = values(rank, shape, dtype, seed=2)
    for src in range(world):
        t = tensor(mine)
        dist.broadcast(t, src=src)
        close(host(t), values(src, shape, dtype, 2).astype(np.float64), dtype, f"broadcast from {src}")
    outs = [tensor(np.zeros(shape, dtype=mine.dtype)) for _ in range(world)]
    dist.all_gather(outs, tensor(mine))
    for r, o in enumerate(outs):
        close(host(o), values(r, shape, dtype, 2), dtype, "all_gather")
    out = tensor(np.zeros((world * 3, 5), dtype=mine.dtype))
    dist.all_gather_into_tensor(out, tensor(mine))
    close(
        host(out), np.concatenate([values(r, shape, dtype, 2) for r in range(world)]), dtype, "all_gather_into_tensor"
    )
    gl = [tensor(np.zeros(shape, dtype=mine.dtype)) for _ in range(world)] if rank == 0 else None
    dist.gather(tensor(mine), gl, dst=0)
    if rank == 0:
        for r, o in enumerate(gl):
            close(host(o), values(r, shape, dtype, 2), dtype, "gather")
    sl = [tensor(values(r, shape, dtype, 3)) for r in range(world)] if rank == 1 else None
    out = tensor(np.zeros(shape, dtype=mine.dtype))
    dist.scatter(out, sl, src=1)
    close(host(out), values(rank, shape, dtype, 3), dtype, "scatter")

# reduce_scatter and reduce_scatter_tensor
for dtype in ["float32", "bfloat16", "int64"]:
    inputs = [values(rank * world + j, (2, 3), dtype, 4) for j in range(world)]
    out = tensor(np.zeros((2, 3), dtype=inputs[0].dtype))
    dist.reduce_scatter(out, [tensor(a) for a in inputs])
    want = reduce_all([values(r * world + rank, (2, 3), dtype, 4) for r in range(world)], ReduceOp.SUM, dtype)
    close(host(out), want, dtype, "reduce_scatter")
    whole = values(rank, (world * 2, 3), dtype, 5)
    out = tensor(np.zeros((2, 3), dtype=whole.dtype))
    dist.reduce_scatter_tensor(out, tensor(whole), op=ReduceOp.AVG)
    chunks = [values(r, (world * 2, 3), dtype, 5)[2 * rank : 2 * rank + 2] for r in range(world)]
    close(host(out), reduce_all(chunks, ReduceOp.AVG, dtype), dtype, "reduce_scatter_tensor")

# all_to_all_single, even and uneven; all_to_all with lists
inp = ember.arange(world * 2, dtype=ember.float32) + 100 * rank
out = ember.zeros(world * 2)
dist.all_to_all_single(out, inp)
want = np.concatenate([np.arange(2 * rank, 2 * rank + 2) + 100 * r for r in range(world)])
close(out.numpy(), want, "float32", "all_to_all_single")
# rank r sends (r + j + 1) rows of 2 to rank j
splits_in = [rank + j + 1 for j in range(world)]
splits_out = [r + rank + 1 for r in range(world)]
rows = ember.from_numpy(np.full((sum(splits_in), 2), float(rank), dtype=np.float32))
out = ember.zeros(sum(splits_out), 2)
dist.all_to_all_single(out, rows, output_split_sizes=splits_out, input_split_sizes=splits_in)
want = np.concatenate([np.full((n, 2), float(r)) for r, n in enumerate(splits_out)])
close(out.numpy(), want, "float32", "uneven all_to_all_single")
ins = [ember.full((j + 1,), float(rank * 10 + j)) for j in range(world)]
outs = [ember.zeros(rank + 1) for _ in range(world)]
dist.all_to_all(outs, ins)
for r, o in enumerate(outs):
    close(o.numpy(), np.full(rank + 1, float(r * 10 + rank)), "float32", "all_to_all")

# point to point: a ring, blocking and batched
nxt, prv = (rank + 1) % world, (rank - 1) % world
t = ember.zeros(3)
if rank % 2 == 0:
    dist.send(ember.full((3,), float(rank)), dst=nxt)
    src = dist.recv(t, src=prv)
else:
    src = dist.recv(t)  # from any source
    dist.send(ember.full((3,), float(rank)), dst=nxt)
assert src == prv and t.tolist() == [float(prv)] * 3, (src, t.tolist())
recv_t = ember.zeros(2)
ops = [dist.P2POp(dist.isend, ember.full((2,), float(rank)), nxt), dist.P2POp(dist.irecv, recv_t, prv)]
for work in dist.batch_isend_irecv(ops):
    work.wait()
assert recv_t.tolist() == [float(prv)] * 2

# async_op: several in flight at once, waited out of order; futures
a, b = ember.ones(1000) * rank, ember.ones(7)
w1 = dist.all_reduce(a, async_op=True)
w2 = dist.all_reduce(b, op=ReduceOp.MAX, async_op=True)
fut = w2.get_future()
assert w1.wait() is True and w1.is_completed() and w1.is_success()
assert fut.wait()[0] is b and b.tolist() == [1.0] * 7
close(a.numpy(), np.full(1000, sum(range(world))), "float32", "async all_reduce")
dist.barrier()
dist.monitored_barrier()

# object collectives
objs = [None] * world
dist.all_gather_object(objs, {"rank": rank, "name": f"r{rank}"})
assert objs == [{"rank": r, "name": f"r{r}"} for r in range(world)], objs
lst = [1, "two", (3,)] if rank == 0 else [None, None, None]
dist.broadcast_object_list(lst, src=0)
assert lst == [1, "two", (3,)], lst
got = [None] * world if rank == 0 else None
dist.gather_object(["x"] * rank, got, dst=0)
if rank == 0:
    assert got == [["x"] * r for r in range(world)], got
out = [None]
dist.scatter_object_list(out, [{"for": r} for r in range(world)] if rank == 0 else None, src=0)
assert out == [{"for": rank}], out

# groups: a subgroup of the even ranks, and subgroups of 2
evens = dist.new_group([r for r in range(world) if r % 2 == 0])
if rank % 2 == 0:
    t = ember.ones(1) * rank
    dist.all_reduce(t, group=evens)
    assert t.item() == sum(r for r in range(world) if r % 2 == 0)
    assert dist.get_rank(evens) == rank // 2
    assert dist.get_process_group_ranks(evens) == [r for r in range(world) if r % 2 == 0]
else:
    assert evens is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(evens) == -1
    assert dist.all_reduce(ember.ones(1), group=evens) is None
mine, subgroups = dist.new_subgroups(group_size=2)
assert len(subgroups) == world // 2
t = ember.ones(1) * rank
dist.broadcast(t, group_src=1, group=mine)  # the subgroup's second rank, in group numbering
assert t.item() == (rank // 2) * 2 + 1, t.item()
dist.destroy_process_group(mine)

# functional collectives: out of place
import ember.distributed._functional_collectives as funcol  # noqa: E402

x = ember.ones(2, 3) * (rank + 1)
y = funcol.all_reduce(x, "sum", dist.group.WORLD)
assert x.tolist() == [[rank + 1.0] * 3] * 2 and y.tolist() == [[float(sum(range(1, world + 1)))] * 3] * 2
g = funcol.all_gather_tensor(x, 1, dist.group.WORLD)
assert tuple(g.shape) == (2, 3 * world)
rs = funcol.reduce_scatter_tensor(ember.ones(world * 2, 2), "avg", 0, dist.group.WORLD)
assert rs.tolist() == [[1.0, 1.0]] * 2
funcol.wait_tensor(y)

dist.destroy_process_group()
assert not dist.is_initialized()
print(f"rank {rank}: all collectives checked", flush=True)
