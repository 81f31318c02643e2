"""The compatibility surface scripts touch before any tensor: ``ember.cuda`` without the ember-cuda
package, ``ember.backends`` flags, and the top-level precision and determinism settings, each
against what PyTorch's CPU build (the oracle) answers."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import pytest

import ember
import ember.backends

try:
    import torch
except ImportError:  # the oracle is installed only in the Python 3.11 test sessions
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="the oracle torch==2.13.0 is not installed")


def _outcome(fn):
    try:
        return ("value", fn())
    except Exception as error:  # the type is what is compared
        return ("error", type(error))


# ---- ember.cuda


@needs_torch
@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("is_available", ()),
        ("device_count", ()),
        ("is_initialized", ()),
        ("is_bf16_supported", ()),
        ("manual_seed", (0,)),
        ("manual_seed_all", (0,)),
        ("empty_cache", ()),
        ("memory_allocated", ()),
        ("max_memory_allocated", ()),
        ("synchronize", ()),
        ("current_device", ()),
        ("get_device_name", ()),
        ("get_device_capability", ()),
        ("get_rng_state", ()),
    ],
)
def test_cuda_fallback_answers_as_a_cpu_build_of_pytorch(name, args):
    assert not torch.cuda.is_available(), "the oracle must be PyTorch's CPU build"
    assert _outcome(lambda: getattr(ember.cuda, name)(*args)) == _outcome(lambda: getattr(torch.cuda, name)(*args))


def test_synchronize_says_what_is_missing():
    with pytest.raises(AssertionError, match="not compiled with CUDA enabled"):
        ember.cuda.synchronize()


def _run(script: str, pythonpath: str | None = None) -> str:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_ember_cuda_works_in_a_fresh_process():
    out = _run(
        """
        import ember.cuda
        import ember
        from ember.cuda import device_count
        print(ember.cuda.is_available(), device_count(), ember.cuda.__name__)
        """
    )
    assert out == "False 0 ember.cuda"


def test_an_installed_cuda_package_wins_over_the_fallback(tmp_path):
    package = tmp_path / "ember" / "cuda"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("def is_available():\n    return 'plugin'\n")
    out = _run("import ember.cuda, ember; print(ember.cuda.is_available())", pythonpath=str(tmp_path))
    assert out == "plugin"


# ---- ember.backends


FLAGS = [
    ("cudnn", "enabled"),
    ("cudnn", "benchmark"),
    ("cudnn", "deterministic"),
    ("cudnn", "allow_tf32"),
    ("mkldnn", "enabled"),
    ("mkldnn", "deterministic"),
]


@needs_torch
@pytest.mark.parametrize(("module", "flag"), FLAGS)
def test_flag_defaults_and_type_errors_match_torch(module, flag):
    mine, theirs = getattr(ember.backends, module), getattr(torch.backends, module)
    assert getattr(mine, flag) is getattr(theirs, flag)
    with pytest.raises(RuntimeError) as my_error:
        setattr(mine, flag, 1)
    with pytest.raises(RuntimeError) as their_error:
        setattr(theirs, flag, 1)
    assert str(my_error.value) == str(their_error.value)
    default = getattr(mine, flag)
    try:
        setattr(mine, flag, not default)
        assert getattr(mine, flag) is (not default)
    finally:
        setattr(mine, flag, default)


@needs_torch
def test_availability_answers_match_a_cpu_build():
    assert ember.backends.cudnn.is_available() is torch.backends.cudnn.is_available() is False
    assert ember.backends.cudnn.version() is torch.backends.cudnn.version() is None
    assert ember.backends.mps.is_available() is torch.backends.mps.is_available()
    assert ember.backends.mps.is_built() is torch.backends.mps.is_built()
    assert ember.backends.cuda.is_built() is torch.backends.cuda.is_built()
    # Ember has no oneDNN, where PyTorch's x86 build has: the one answer that differs, on purpose.
    assert ember.backends.mkldnn.is_available() is False


def test_cudnn_flags_context_restores():
    cudnn = ember.backends.cudnn
    with cudnn.flags(enabled=False, deterministic=True):
        assert cudnn.enabled is False and cudnn.deterministic is True and cudnn.benchmark is False
    assert cudnn.enabled is True and cudnn.deterministic is False


@needs_torch
@pytest.mark.parametrize(
    ("name", "value"),
    [("allow_tf32", 1), ("allow_fp16_reduced_precision_reduction", 1), ("no_such_flag", True)],
)
def test_matmul_flag_errors_match_torch(name, value):
    def error(lib):
        try:
            setattr(lib.backends.cuda.matmul, name, value)
        except Exception as caught:  # type and message are compared
            return type(caught), str(caught)

    assert error(ember) == error(torch)
    with pytest.raises(AttributeError, match="Unknown attribute no_such_flag"):
        ember.backends.cuda.matmul.no_such_flag  # noqa: B018


def _use_deterministic(lib):
    """``lib.use_deterministic_algorithms``; for torch, the call under it, as the public wrapper
    first imports Inductor's configuration (seconds) to set a flag of its own."""
    return lib._C._set_deterministic_algorithms if lib is torch else lib.use_deterministic_algorithms


@pytest.fixture
def restore_settings():
    saved = ember.get_float32_matmul_precision(), ember.are_deterministic_algorithms_enabled()
    saved_warn = ember.is_deterministic_algorithms_warn_only_enabled()
    torch_saved = None
    if torch is not None:
        torch_saved = torch.get_float32_matmul_precision(), torch.are_deterministic_algorithms_enabled()
        torch_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    yield
    ember.set_float32_matmul_precision(saved[0])
    ember.use_deterministic_algorithms(saved[1], warn_only=saved_warn)
    if torch_saved is not None:
        torch.set_float32_matmul_precision(torch_saved[0])
        _use_deterministic(torch)(torch_saved[1], warn_only=torch_warn)


@needs_torch
def test_matmul_precision_and_allow_tf32_are_one_setting_as_in_torch(restore_settings):
    def trace(lib):
        seen = [lib.get_float32_matmul_precision(), lib.backends.cuda.matmul.allow_tf32]
        for precision in ("high", "highest", "medium", "highest"):
            lib.set_float32_matmul_precision(precision)
            seen += [lib.get_float32_matmul_precision(), lib.backends.cuda.matmul.allow_tf32]
        for allow in (True, False):
            lib.backends.cuda.matmul.allow_tf32 = allow
            seen += [lib.get_float32_matmul_precision(), lib.backends.cuda.matmul.allow_tf32]
        return seen

    assert trace(ember) == trace(torch)


@needs_torch
def test_matmul_precision_errors_match_torch(restore_settings):
    for lib in (ember, torch):
        with pytest.warns(UserWarning, match="fast is not one of 'highest', 'high', or 'medium'"):
            lib.set_float32_matmul_precision("fast")
        assert lib.get_float32_matmul_precision() == "highest"
    with pytest.raises(RuntimeError) as mine:
        ember.set_float32_matmul_precision(1)
    with pytest.raises(RuntimeError) as theirs:
        torch.set_float32_matmul_precision(1)
    assert str(mine.value) == str(theirs.value)


@needs_torch
def test_deterministic_algorithms_match_torch(restore_settings):
    def trace(lib):
        seen = [lib.are_deterministic_algorithms_enabled(), lib.is_deterministic_algorithms_warn_only_enabled()]
        use = _use_deterministic(lib)
        use(True, warn_only=True)
        seen += [lib.are_deterministic_algorithms_enabled(), lib.is_deterministic_algorithms_warn_only_enabled()]
        use(False)
        seen += [lib.are_deterministic_algorithms_enabled(), lib.is_deterministic_algorithms_warn_only_enabled()]
        for args, kwargs in ((("yes",), {}), ((True,), {"warn_only": "no"})):
            try:
                use(*args, **kwargs)
            except TypeError as error:
                seen.append(str(error))
        return seen

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert trace(ember) == trace(torch)
