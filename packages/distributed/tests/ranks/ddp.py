"""Run by every rank: DDP training equals one process training on the global batch; no_sync,
find_unused_parameters and the float16 compression hook; with "--oracle", also equal to PyTorch's
DDP over gloo started on the same ranks with the same weights."""

import copy
import os
import sys

import numpy as np

import ember
import ember.distributed as dist
from ember import nn
from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
from ember.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group()
rank, world = dist.get_rank(), dist.get_world_size()
assert DDP is __import__("ember.distributed.ddp").distributed.ddp.DistributedDataParallel

GLOBAL = 4 * world
rng = np.random.default_rng(0)
X = rng.standard_normal((3, GLOBAL, 6)).astype(np.float32)
Y = rng.standard_normal((3, GLOBAL, 3)).astype(np.float32)
mine = slice(rank * 4, rank * 4 + 4)


class Net(nn.Module):
    def __init__(self, unused=False):
        super().__init__()
        self.a = nn.Linear(6, 16)
        self.b = nn.Linear(16, 3)
        self.spare = nn.Linear(3, 3) if unused else None

    def forward(self, x):
        return self.b(ember.tanh(self.a(x)))


def close(x, y, what, tol=1e-5):
    if not np.allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol):
        raise AssertionError(f"rank {rank}: {what}: {np.asarray(x).ravel()[:4]} != {np.asarray(y).ravel()[:4]}")


def train(model, optimizer, x, y):
    optimizer.zero_grad()
    loss = ((model(ember.from_numpy(x)) - ember.from_numpy(y)) ** 2).mean()
    loss.backward()
    optimizer.step()


ember.manual_seed(rank)  # different weights on every rank: DDP must broadcast rank 0's
net = Net()
ddp = DDP(net, bucket_cap_mb=0.0001)  # tiny buckets: several reductions in flight during backward
reference = copy.deepcopy(net)
assert len(ddp._buckets) > 1
ddp_opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
ref_opt = ember.optim.SGD(reference.parameters(), lr=0.1)
for step in range(3):
    train(ddp, ddp_opt, X[step][mine], Y[step][mine])
    train(reference, ref_opt, X[step], Y[step])
for (name, p), q in zip(net.named_parameters(), reference.parameters(), strict=True):
    close(p.detach().numpy(), q.detach().numpy(), f"DDP vs one process, {name}")
weights = [p.detach().numpy().copy() for p in net.parameters()]
gathered = [None] * world
dist.all_gather_object(gathered, weights)
for other in gathered:
    for a, b in zip(weights, other, strict=True):
        close(a, b, "every rank holds the same weights")

# no_sync: two micro-batches accumulate locally, the second backward reduces the sum
ember.manual_seed(0)
net2 = Net()
ddp2 = DDP(net2)
reference2 = copy.deepcopy(net2)
half = [slice(rank * 4, rank * 4 + 2), slice(rank * 4 + 2, rank * 4 + 4)]
with ddp2.no_sync():
    ((ddp2(ember.from_numpy(X[0][half[0]])) - ember.from_numpy(Y[0][half[0]])) ** 2).sum().backward()
local = [p.grad.numpy().copy() for p in net2.parameters()]
((ddp2(ember.from_numpy(X[0][half[1]])) - ember.from_numpy(Y[0][half[1]])) ** 2).sum().backward()
((reference2(ember.from_numpy(X[0])) - ember.from_numpy(Y[0])) ** 2).sum().backward()
for p, q in zip(net2.parameters(), reference2.parameters(), strict=True):
    close(p.grad.numpy() * world, q.grad.numpy(), "no_sync accumulation then sync", 1e-4)
assert not all(np.allclose(a, p.grad.numpy()) for a, p in zip(local, net2.parameters(), strict=True))

# find_unused_parameters: `spare` takes no part; its grad stays None and the rest is reduced
ember.manual_seed(0)
net3 = Net(unused=True)
ddp3 = DDP(net3, find_unused_parameters=True)
for _ in range(2):
    ddp3.zero_grad()
    ((ddp3(ember.from_numpy(X[1][mine])) - ember.from_numpy(Y[1][mine])) ** 2).mean().backward()
assert net3.spare.weight.grad is None and net3.a.weight.grad is not None
ddp4 = DDP(Net(unused=True))
((ddp4(ember.from_numpy(X[1][mine]))) ** 2).mean().backward()
try:
    ddp4(ember.from_numpy(X[1][mine]))
    raise AssertionError("an unused parameter without find_unused_parameters must raise at the next forward")
except RuntimeError as error:
    assert "find_unused_parameters" in str(error) and "spare.weight" in str(error), error

# the float16 compression hook: same as the plain all-reduce within float16's precision
ember.manual_seed(0)
net5 = Net()
ddp5 = DDP(net5)
ddp5.register_comm_hook(None, default_hooks.fp16_compress_hook)
ember.manual_seed(0)
net6 = Net()
ddp6 = DDP(net6)
for model in (ddp5, ddp6):
    ((model(ember.from_numpy(X[2][mine])) - ember.from_numpy(Y[2][mine])) ** 2).mean().backward()
for p, q in zip(net5.parameters(), net6.parameters(), strict=True):
    close(p.grad.numpy(), q.grad.numpy(), "fp16_compress_hook", 2e-3)

if "--oracle" in sys.argv:
    import torch
    import torch.distributed as tdist

    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{int(os.environ['MASTER_PORT']) + 1}",
                             rank=rank, world_size=world)  # fmt: skip
    ember.manual_seed(rank)
    ours = Net()
    tnet = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    with torch.no_grad():  # PyTorch's DDP broadcasts rank 0's weights too: copy each rank's own
        for t, e in zip(tnet.parameters(), ours.parameters(), strict=True):
            t.copy_(torch.from_numpy(e.detach().numpy().copy()))
    ours_ddp, theirs = DDP(ours), torch.nn.parallel.DistributedDataParallel(tnet)
    ours_opt, their_opt = ember.optim.SGD(ours_ddp.parameters(), lr=0.1), torch.optim.SGD(theirs.parameters(), lr=0.1)
    for step in range(3):
        train(ours_ddp, ours_opt, X[step][mine], Y[step][mine])
        their_opt.zero_grad()
        ((theirs(torch.from_numpy(X[step][mine])) - torch.from_numpy(Y[step][mine])) ** 2).mean().backward()
        their_opt.step()
    for e, t in zip(ours.parameters(), tnet.parameters(), strict=True):
        close(e.detach().numpy(), t.detach().numpy(), "against PyTorch's DDP over gloo")
    tdist.destroy_process_group()
    print(f"rank {rank}: matches PyTorch DDP", flush=True)

dist.destroy_process_group()
print(f"rank {rank}: DDP checked", flush=True)
