"""The process-group API in one process: value types, argument errors, a one-rank group, the
PMI-1 server's protocol, and the Flight Recorder's dump and analysis (no second rank needed)."""

import json
import socket
import threading
from datetime import timedelta

import pytest

import ember
import ember.distributed as dist
from ember.distributed import Backend, HashStore, ReduceOp
from ember.distributed._pmi import PMIServer, process_mapping
from ember.distributed._work import Future

pytest.importorskip("mpi4py", reason="the MPI backend needs mpi4py")


def test_reduce_op_and_backend_values():
    assert ReduceOp(ReduceOp.SUM) == ReduceOp.SUM and ReduceOp.AVG != ReduceOp.SUM
    premul = dist._make_nccl_premul_sum(0.5)
    assert premul == ReduceOp.PREMUL_SUM and premul.factor == 0.5
    with pytest.raises(ValueError, match="premul"):
        ReduceOp(ReduceOp.PREMUL_SUM)
    assert Backend("MPI") == "mpi" == Backend.MPI and Backend("nccl") == "nccl"
    assert Backend.default_device_backend_map["cpu"] == "mpi"


def test_register_backend_rejects_known_names():
    with pytest.raises(ValueError, match="already exist"):
        Backend.register_backend("mpi", lambda *a: None)


def test_future_then_and_errors():
    f = Future(lambda: [1])
    g = f.then(lambda fut: fut.value()[0] + 1)
    assert not g.done() and g.wait() == 2 and f.done()
    bad = Future(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        bad.wait()
    with pytest.raises(RuntimeError, match="before the future completed"):
        Future(lambda: 1).value()


def test_calls_before_init_say_so():
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="init_process_group"):
        dist.get_rank()
    with pytest.raises(ValueError, match="init_process_group"):
        dist.all_reduce(ember.ones(1))


def test_nccl_without_cuda_is_a_clear_error():
    for backend in ("nccl", "cuda:nccl", "cpu:mpi,cuda:nccl"):
        with pytest.raises(RuntimeError, match="nccl backend needs CUDA"):
            dist.init_process_group(backend, store=HashStore(), rank=0, world_size=1)
        assert not dist.is_initialized()


def test_bad_init_arguments():
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.init_process_group("carrier-pigeon", store=HashStore(), rank=0, world_size=1)
    with pytest.raises(ValueError, match="not supported"):
        dist.init_process_group(init_method="file:///tmp/x", rank=0, world_size=1)
    with pytest.raises(ValueError, match="world_size and rank"):
        dist.init_process_group(store=HashStore())
    with pytest.raises(ValueError, match="outside the world"):
        dist.init_process_group(store=HashStore(), rank=3, world_size=2)


@pytest.fixture
def one_rank(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_FR_DUMP_DIR", str(tmp_path))
    dist.init_process_group(store=HashStore(), rank=0, world_size=1, timeout=timedelta(seconds=20))
    yield tmp_path
    dist.destroy_process_group()


def test_one_rank_group(one_rank):
    assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
    assert dist.get_backend() == "mpi" and dist.group.WORLD is dist.GroupMember.WORLD
    with pytest.raises(ValueError, match="twice"):
        dist.init_process_group(store=HashStore(), rank=0, world_size=1)
    t = ember.tensor([1.0, 2.0])
    work = dist.all_reduce(t, op=ReduceOp.AVG, async_op=True)
    assert work.wait() and work.is_completed() and t.tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match=r"torch\.Tensor"):
        dist.all_reduce([1.0])
    with pytest.raises(ValueError, match="same as the rank"):
        dist.send(t, dst=0)
    with pytest.raises(ValueError, match="Global rank 5 is not part of group"):
        dist.broadcast(t, src=5)
    sub = dist.new_group([0])
    assert dist.get_process_group_ranks(sub) == [0] and dist.get_global_rank(sub, 0) == 0
    dist.destroy_process_group(sub)


def test_a_registered_backend_runs_the_collectives(monkeypatch):
    calls = []

    class Recording:
        def __init__(self, store, rank, size, timeout):
            self.size = size

        def all_reduce(self, tensor, op):
            calls.append(("all_reduce", tuple(tensor.shape), op))
            return dist.Work([], lambda: [tensor], timedelta(seconds=5))

    monkeypatch.setattr(Backend, "backend_list", list(Backend.backend_list))
    monkeypatch.setattr(Backend, "backend_capability", dict(Backend.backend_capability))
    monkeypatch.setattr(Backend, "_plugins", dict(Backend._plugins))
    Backend.register_backend("recording", Recording, devices=["cpu"])
    try:
        dist.init_process_group("recording", store=HashStore(), rank=0, world_size=1)
        assert dist.get_backend() == "recording"
        dist.all_reduce(ember.ones(2, 3), op=ReduceOp.MAX)
        assert calls == [("all_reduce", (2, 3), ReduceOp.MAX)]
        dist.destroy_process_group()
    finally:
        delattr(Backend, "RECORDING")


def test_flight_recorder_dump(one_rank):
    t = ember.ones(3, dtype=ember.float16)
    dist.all_reduce(t)
    dist.broadcast(t, src=0)
    path = dist.flight_recorder.dump()
    assert path == one_rank / "rank_0.json"
    data = json.loads(path.read_text())
    ops = [(e["op"], e["seq"], e["state"], e["input_sizes"], e["input_dtypes"]) for e in data["entries"]]
    assert ops[-2:] == [
        ("all_reduce", 1, "completed", [[3]], ["float16"]),
        ("broadcast", 2, "completed", [[3]], ["float16"]),
    ]
    assert data["entries"][-1]["frames"][0]["file"] == __file__


def test_flight_recorder_dumps_on_sigusr1(one_rank):
    import os
    import signal
    import time

    dist.barrier()
    os.kill(os.getpid(), signal.SIGUSR1)
    deadline = time.monotonic() + 10
    while not (one_rank / "rank_0.json").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    data = json.loads((one_rank / "rank_0.json").read_text())
    assert data["reason"] == "signal SIGUSR1" and data["entries"][-1]["op"] == "barrier"
    assert any(frame["name"] == "test_flight_recorder_dumps_on_sigusr1" for frame in data["stack"])


def _dump(directory, rank, entries, stack_line=7):
    record = {
        "rank": rank, "world_size": 2, "groups": {"0": {"desc": "default_pg", "ranks": [0, 1]}},
        "stack": [{"file": "/job/train.py", "line": stack_line, "name": "<module>"}],
        "entries": [{"pg_name": "0", "seq": seq, "op": op, "input_sizes": [[4]], "input_dtypes": ["float32"],
                     "output_sizes": [[4]], "state": "completed",
                     "frames": [{"file": "/job/train.py", "line": 10 + seq, "name": "<module>"}]}
                    for seq, op in entries],
    }  # fmt: skip
    (directory / f"rank_{rank}.json").write_text(json.dumps(record))


def test_analysis_names_a_missing_rank(tmp_path):
    from ember.distributed._fr_analyze import analyze

    _dump(tmp_path, 0, [(1, "all_reduce"), (2, "all_reduce")])
    _dump(tmp_path, 1, [(1, "all_reduce")], stack_line=42)
    report, found = analyze(tmp_path)
    assert found and "CULPRIT: rank(s) [1] never entered all_reduce #2 of group 0" in report
    assert "rank 1 was at /job/train.py:42" in report


def test_analysis_names_disagreeing_ranks_and_finds_nothing_in_good_runs(tmp_path):
    from ember.distributed._fr_analyze import analyze

    _dump(tmp_path, 0, [(1, "all_reduce"), (2, "broadcast")])
    _dump(tmp_path, 1, [(1, "all_reduce"), (2, "broadcast")])
    assert analyze(tmp_path)[1] is False
    _dump(tmp_path, 1, [(1, "all_reduce"), (2, "barrier")])
    report, found = analyze(tmp_path)
    assert found and "disagree on collective #2" in report and "barrier" in report


def test_pmi_server_protocol():
    server = PMIServer(HashStore(), 2, 2, PMIServer.new_kvsname(HashStore()))
    ranks = [socket.socketpair() for _ in range(2)]
    for ours, _ in ranks:
        server.add(ours)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    files = [theirs.makefile("rw") for _, theirs in ranks]

    def ask(i, line):
        files[i].write(line + "\n")
        files[i].flush()
        return files[i].readline().strip()

    assert (
        ask(0, "cmd=init pmi_version=1 pmi_subversion=1") == "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0"
    )
    assert ask(0, "cmd=get_my_kvsname").startswith("cmd=my_kvsname rc=0 kvsname=kvs_")
    assert ask(0, "cmd=get kvsname=k key=PMI_process_mapping") == f"cmd=get_result rc=0 value={process_mapping(2, 2)}"
    assert ask(0, "cmd=put kvsname=k key=card0 value=abc") == "cmd=put_result rc=0"
    assert ask(1, "cmd=get kvsname=k key=nobody").startswith("cmd=get_result rc=-1")
    files[0].write("cmd=barrier_in\n")
    files[0].flush()
    assert ask(1, "cmd=barrier_in") == "cmd=barrier_out rc=0"
    assert files[0].readline().strip() == "cmd=barrier_out rc=0"
    assert ask(1, "cmd=get kvsname=k key=card0") == "cmd=get_result rc=0 value=abc"
    assert process_mapping(8, 4) == "(vector,(0,2,4))"
    for f in files:
        f.close()
    for _, theirs in ranks:
        theirs.close()
    thread.join(timeout=5)
    assert not thread.is_alive()
