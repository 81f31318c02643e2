"""``ember.profiler`` / ``ember.autograd.profiler``: the ops that ran through the dispatcher, with
real host times, grouped and printed as PyTorch prints them."""

import json

import pytest

import ember
from ember.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule


def _work():
    a = ember.ones(16, 16)
    b = a @ a
    return (b + 1).relu().sum()


def test_table_lists_the_ops_with_times():
    with profile(activities=[ProfilerActivity.CPU]) as prof, record_function("model_inference"):
        _work()
    averages = prof.key_averages()
    by_name = {e.key: e for e in averages}
    for name in ("model_inference", "aten::ones", "aten::mm", "aten::add", "aten::relu", "aten::sum"):
        assert name in by_name, name
    for name in ("aten::mm", "aten::add", "aten::relu"):
        assert by_name[name].count == 1
        assert by_name[name].cpu_time_total > 0
        assert by_name[name].self_cpu_time_total == by_name[name].cpu_time_total
    inference = by_name["model_inference"]
    children = sum(e.cpu_time_total for e in averages if e.key.startswith("aten::"))
    assert inference.cpu_time_total >= children
    assert inference.self_cpu_time_total == pytest.approx(inference.cpu_time_total - children, abs=1e-6)
    table = averages.table(sort_by="cpu_time_total", row_limit=4)
    lines = table.splitlines()
    assert "Name" in lines[1] and "Self CPU %" in lines[1] and "# of Calls" in lines[1]
    assert lines[3].split()[0] == "model_inference"  # the busiest first
    assert len([ln for ln in lines if "aten::" in ln or "model_inference" in ln]) == 4
    assert lines[-1].startswith("Self CPU time total: ")


def test_counts_accumulate_and_backward_ops_are_recorded():
    x = ember.ones(4, requires_grad=True)
    with ember.autograd.profiler.profile() as prof:
        for _ in range(3):
            (x * 2).sum().backward()
    by_name = {e.key: e for e in prof.key_averages()}
    assert by_name["aten::mul"].count >= 3
    assert by_name["aten::sum"].count == 3
    assert x.grad.tolist() == [6.0] * 4


def test_group_by_input_shape():
    with profile(record_shapes=True) as prof:
        ember.ones(2, 3) + ember.ones(2, 3)
        ember.ones(4) + ember.ones(4)
    rows = [e for e in prof.key_averages(group_by_input_shape=True) if e.key == "aten::add"]
    assert sorted(str(e.input_shapes) for e in rows) == ["[[2, 3], [2, 3]]", "[[4], [4]]"]
    assert "Input Shapes" in prof.key_averages(group_by_input_shape=True).table()
    with profile() as plain:
        ember.ones(1)
    with pytest.raises(AssertionError):
        plain.key_averages(group_by_input_shape=True)


def test_record_function_outside_a_profile_and_as_decorator():
    with record_function("nothing"):
        ember.ones(1)

    @record_function("decorated")
    def step():
        return ember.ones(3).sum()

    with profile() as prof:
        step()
    decorated = [e for e in prof.events() if e.name == "decorated"]
    assert len(decorated) == 1
    assert [c.name for c in decorated[0].cpu_children] == ["aten::ones", "aten::sum"]


def test_schedule_records_only_active_steps():
    ready = []
    sched = schedule(wait=1, warmup=1, active=2, repeat=1)
    with profile(schedule=sched, on_trace_ready=lambda p: ready.append(len(p.events()))) as prof:
        for _ in range(6):
            ember.ones(2).exp()
            prof.step()
    assert ready == [4]  # two active steps, two ops each
    assert [sched(i) for i in range(5)] == [
        ProfilerAction.NONE,
        ProfilerAction.WARMUP,
        ProfilerAction.RECORD,
        ProfilerAction.RECORD_AND_SAVE,
        ProfilerAction.NONE,
    ]


def test_chrome_trace(tmp_path):
    with profile() as prof:
        ember.ones(2).neg()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert {e["name"] for e in events} >= {"aten::ones", "aten::neg"}
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)


def test_profiles_do_not_nest_and_results_need_a_finished_profile():
    outer = ember.autograd.profiler.profile()
    with outer, pytest.raises(RuntimeError, match="already enabled"), ember.autograd.profiler.profile():
        pass
    with pytest.raises(RuntimeError, match="didn't finish"):
        ember.autograd.profiler.profile().key_averages()


def test_names_in_autograd():
    assert ember.autograd.ProfilerActivity is ProfilerActivity
    assert ember.autograd.kineto_available() is False
    assert ember.autograd.profiler_legacy.profile is ember.autograd.profiler.profile
