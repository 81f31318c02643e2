"""What the C++ compiler is and accepts is asked once per toolchain and kept in the cache folder: a new
process (here: the in-memory caches dropped) asks nothing, and stale answers are asked afresh."""

from __future__ import annotations

import glob
import os

import pytest

from ember.inductor import config, cpp_builder


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    cpp_builder.forget_toolchain()
    yield tmp_path
    cpp_builder.forget_toolchain()


def _counting_probe(monkeypatch):
    calls = []
    real = cpp_builder._probe

    def probe(cxx, flags):
        calls.append(flags)
        return real(cxx, flags)

    monkeypatch.setattr(cpp_builder, "_probe", probe)
    return calls


def test_a_second_process_asks_the_compiler_nothing(fresh_cache, monkeypatch):
    calls = _counting_probe(monkeypatch)
    first = (cpp_builder.find_compiler(), cpp_builder.compiler_flags(), cpp_builder.compiler_identity())
    assert calls, "the first process probes the compiler"
    files = glob.glob(os.path.join(config.cache_dir(), "toolchain", "*.json"))
    assert len(files) == 1
    # a new process: nothing in memory, the answers on disk
    cpp_builder._answers.clear()
    for cached in (cpp_builder.find_compiler, cpp_builder.compiler_flags, cpp_builder.compiler_identity):
        cached.cache_clear()
    calls.clear()
    again = (cpp_builder.find_compiler(), cpp_builder.compiler_flags(), cpp_builder.compiler_identity())
    assert again == first and calls == []


def test_a_build_failing_with_remembered_answers_asks_afresh(fresh_cache, monkeypatch):
    cpp_builder.compiler_flags()
    cpp_builder._answers.clear()
    for cached in (cpp_builder.find_compiler, cpp_builder.compiler_flags, cpp_builder.compiler_identity):
        cached.cache_clear()
    cpp_builder.compiler_flags()  # now answered from disk
    assert cpp_builder._from_disk[0]
    real_run = cpp_builder.subprocess.run
    builds = []

    def run(cmd, *args, **kwargs):
        if any(str(c).endswith("kernel.cpp") for c in cmd):
            builds.append(cpp_builder._from_disk[0])
            if cpp_builder._from_disk[0]:  # as if a remembered flag no longer held
                return real_run(["false"], *args, **kwargs)
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(cpp_builder.subprocess, "run", run)
    library = cpp_builder.build('extern "C" int answer_stale() { return 42; }\n')
    assert os.path.exists(library)
    assert builds == [True, False]  # failed with the remembered answers, built with fresh ones


def test_a_build_failing_with_fresh_answers_raises(fresh_cache, monkeypatch):
    real_run = cpp_builder.subprocess.run

    def run(cmd, *args, **kwargs):
        if any(str(c).endswith("kernel.cpp") for c in cmd):
            return real_run(["false"], *args, **kwargs)
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(cpp_builder.subprocess, "run", run)
    with pytest.raises(cpp_builder.CppCompileError, match="C\\+\\+ compile failed"):
        cpp_builder.build('extern "C" int answer_fresh() { return 42; }\n')
