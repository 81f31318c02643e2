"""The direct float32 convolution kernels (``ember.core._conv``, behind ``conv_direct``) against float64
references, across thread counts, and rebuilt for other vector widths (AVX2, scalar): the same bits.

The float64 references are the definition, written here with NumPy: each output is the sum over
input channels and taps of the padded input's window times the weight.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.core.aten.nn import conv_direct

native = conv_direct._native
pytestmark = pytest.mark.skipif(native is None, reason="ember.core._conv is not built (no C++ compiler at install)")

SOURCE = Path(__file__).resolve().parents[1] / "csrc" / "conv" / "module.cpp"

# (N, C, O, H, W, kernel, padding, dilation, groups): column counts on both sides of the vector
# widths (1, 5, 16, 17, 33 outputs), 1x1 to 5x5 kernels, padding past the kernel's reach, dilation,
# groups whose channels do not fill an output block.
CASES = [
    (2, 3, 8, 6, 7, (3, 3), (1, 1), (1, 1), 1),
    (1, 4, 5, 9, 16, (3, 3), (0, 1), (1, 1), 1),
    (3, 6, 10, 5, 17, (3, 3), (1, 1), (2, 1), 2),
    (2, 8, 12, 4, 33, (1, 1), (0, 0), (1, 1), 4),
    (2, 2, 3, 11, 13, (5, 5), (2, 2), (1, 1), 1),
    (1, 3, 4, 3, 1, (3, 1), (1, 0), (1, 1), 1),
    (2, 4, 6, 5, 6, (2, 3), (3, 4), (1, 2), 2),
    (1, 9, 17, 6, 20, (3, 3), (1, 1), (1, 1), 1),
]


def _windows(x: np.ndarray, kernel, padding, dilation) -> np.ndarray:
    """(N, C, kh, kw, Ho, Wo): the zero-padded input under each tap of each output, in float64."""
    n, c, h, w = x.shape
    (kh, kw), (ph, pw), (dh, dw) = kernel, padding, dilation
    padded = np.zeros((n, c, h + 2 * ph, w + 2 * pw))
    padded[:, :, ph : ph + h, pw : pw + w] = x
    ho, wo = h + 2 * ph - dh * (kh - 1), w + 2 * pw - dw * (kw - 1)
    out = np.empty((n, c, kh, kw, ho, wo))
    for i in range(kh):
        for j in range(kw):
            out[:, :, i, j] = padded[:, :, i * dh : i * dh + ho, j * dw : j * dw + wo]
    return out


def _reference(x, w, bias, padding, dilation, groups) -> np.ndarray:
    o, cg = w.shape[:2]
    cols = _windows(x, w.shape[2:], padding, dilation)
    og = o // groups
    parts = []
    for g in range(groups):
        part = np.einsum(
            "nckjyx,ockj->noyx", cols[:, g * cg : (g + 1) * cg], w[g * og : (g + 1) * og].astype(np.float64)
        )
        parts.append(part)
    out = np.concatenate(parts, axis=1)
    return out if bias is None else out + bias.astype(np.float64)[None, :, None, None]


def _weight_grad_reference(x, g, w_shape, padding, dilation, groups) -> np.ndarray:
    o, cg = w_shape[:2]
    og = o // groups
    cols = _windows(x, w_shape[2:], padding, dilation)
    parts = [
        np.einsum("nckjyx,noyx->ockj", cols[:, i * cg : (i + 1) * cg], g[:, i * og : (i + 1) * og].astype(np.float64))
        for i in range(groups)
    ]
    return np.concatenate(parts, axis=0)


def _inputs(case, seed=0):
    n, c, o, h, w, kernel, padding, dilation, groups = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    weight = rng.standard_normal((o, c // groups, *kernel)).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    ho, wo = h + 2 * padding[0] - dilation[0] * (kernel[0] - 1), w + 2 * padding[1] - dilation[1] * (kernel[1] - 1)
    grad = rng.standard_normal((n, o, ho, wo)).astype(np.float32)
    return x, weight, bias, grad


def _close(got, want, reduced: int):
    # float32 sums of `reduced` products of standard normals, against float64
    scale = np.sqrt(reduced) * 1e-6 * 8
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=scale)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_forward(case):
    x, w, b, _ = _inputs(case)
    *_, padding, dilation, groups = case
    taps = w.shape[1] * w.shape[2] * w.shape[3]
    _close(
        conv_direct.forward(x, w, b, padding, dilation, groups), _reference(x, w, b, padding, dilation, groups), taps
    )
    _close(
        conv_direct.forward(x, w, None, padding, dilation, groups),
        _reference(x, w, None, padding, dilation, groups),
        taps,
    )


@pytest.mark.parametrize("case", CASES, ids=str)
def test_weight_grad(case):
    x, w, _, g = _inputs(case)
    *_, padding, dilation, groups = case
    got = conv_direct.weight_grad(x, g, w.shape, padding, dilation, groups)
    _close(got, _weight_grad_reference(x, g, w.shape, padding, dilation, groups), g[:, 0].size)


@pytest.mark.parametrize("case", [c for c in CASES if conv_direct.takes_input_grad((0, 0, *c[5]), c[6], c[7])], ids=str)
def test_input_grad(case):
    x, w, _, g = _inputs(case)
    *_, padding, dilation, groups = case
    # The forward's adjoint in float64: each output's gradient times each tap's weight, added to the
    # input it read.
    h, wd = x.shape[2:]
    o, cg, kh, kw = w.shape
    og = o // groups
    want = np.zeros(x.shape)
    (ph, pw), (dh, dw) = padding, dilation
    for gi in range(groups):
        for i in range(kh):
            for j in range(kw):
                # output (y, x) reads input (y + i*dh - ph, x + j*dw - pw)
                contrib = np.einsum(
                    "noyx,oc->ncyx",
                    g[:, gi * og : (gi + 1) * og].astype(np.float64),
                    w[gi * og : (gi + 1) * og, :, i, j],
                )
                ys, xs = i * dh - ph, j * dw - pw
                ho, wo = g.shape[2:]
                y0, y1 = max(0, -ys), min(ho, h - ys)
                x0, x1 = max(0, -xs), min(wo, wd - xs)
                if y0 < y1 and x0 < x1:
                    want[:, gi * cg : (gi + 1) * cg, y0 + ys : y1 + ys, x0 + xs : x1 + xs] += contrib[
                        :, :, y0:y1, x0:x1
                    ]
    _close(conv_direct.input_grad(g, w, padding, dilation, groups), want, og * kh * kw)


def test_weight_grad_of_a_wide_layer():
    """256 output by 64 input channels: the partial sums of a part's items take more than one wave
    (8 MiB each); every output still sums its positions in order."""
    case = (2, 64, 256, 4, 5, (3, 3), (1, 1), (1, 1), 1)
    x, w, _, g = _inputs(case)
    got = conv_direct.weight_grad(x, g, w.shape, (1, 1), (1, 1), 1)
    _close(got, _weight_grad_reference(x, g, w.shape, (1, 1), (1, 1), 1), g[:, 0].size)
    split = np.empty(w.shape, np.float32)
    for part in range(3):
        native.weight_grad(x, g, split, 1, 1, 1, 1, 1, part, 3)
    assert np.array_equal(got, split)


@pytest.mark.parametrize("parts", [2, 3, 7])
def test_parts_give_the_same_bits(parts):
    """The outputs split among threads, never one output's sum: any split gives the same bits."""
    case = (3, 9, 13, 7, 21, (3, 3), (1, 1), (1, 1), 1)
    x, w, b, g = _inputs(case)
    one = np.empty(g.shape, np.float32)
    native.forward(x, w, b, one, 1, 1, 1, 1, 1, 0, 1)
    split = np.empty(g.shape, np.float32)
    for part in range(parts):
        native.forward(x, w, b, split, 1, 1, 1, 1, 1, part, parts)
    assert np.array_equal(one, split)
    whole, pieces = np.empty(w.shape, np.float32), np.empty(w.shape, np.float32)
    native.weight_grad(x, g, whole, 1, 1, 1, 1, 1, 0, 1)
    for part in range(parts):
        native.weight_grad(x, g, pieces, 1, 1, 1, 1, 1, part, parts)
    assert np.array_equal(whole, pieces)


@pytest.mark.parametrize("threads", [2, 3, 5])
def test_the_thread_pool_gives_the_same_bits(threads):
    """Pieces claimed by whichever of the pool's threads is free, several a thread, alone or within a
    part: the same bits as one thread."""
    case = (3, 9, 13, 7, 21, (3, 3), (1, 1), (1, 1), 1)
    x, w, b, g = _inputs(case)
    one, whole = np.empty(g.shape, np.float32), np.empty(w.shape, np.float32)
    native.forward(x, w, b, one, 1, 1, 1, 1, 1, 0, 1)
    native.weight_grad(x, g, whole, 1, 1, 1, 1, 1, 0, 1)
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        for parts in (1, 2):
            split, pieces = np.empty(g.shape, np.float32), np.empty(w.shape, np.float32)
            for part in range(parts):
                native.forward(x, w, b, split, 1, 1, 1, 1, 1, part, parts, threads)
                native.weight_grad(x, g, pieces, 1, 1, 1, 1, 1, part, parts, threads)
            assert np.array_equal(one, split)
            assert np.array_equal(whole, pieces)
    finally:
        ember.set_num_threads(before)


@pytest.mark.parametrize("shape", [(32, 16, 1024), (3, 5, 37), (2, 3, 7), (1, 1, 1), (4, 2, 16)])
def test_channel_sums(shape):
    """Sums over images and positions against float64 (float64 lanes across images), the same bits
    on one thread and on the pool."""
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32) + 0.5
    one, pooled = np.empty(shape[1], np.float32), np.empty(shape[1], np.float32)
    native.channel_sums(x, one, 1)
    np.testing.assert_allclose(one, x.astype(np.float64).sum(axis=(0, 2)), rtol=2e-6, atol=1e-6)
    before = ember.get_num_threads()
    ember.set_num_threads(3)
    try:
        native.channel_sums(x, pooled, 3)
    finally:
        ember.set_num_threads(before)
    assert np.array_equal(one, pooled)


def test_inf_past_the_last_output_column():
    """Lanes past the last output column multiply zero gradients by masked inputs: an inf there must
    not make the taps that never read it NaN."""
    x, w, _, g = _inputs((1, 2, 3, 4, 20, (3, 3), (0, 0), (1, 1), 1))
    x[:, :, :, -1] = np.inf  # read by the last output through tap column 2 only
    got = conv_direct.weight_grad(x, g, w.shape, (0, 0), (1, 1), 1)
    want = _weight_grad_reference(x, g, w.shape, (0, 0), (1, 1), 1)
    assert np.isfinite(got[:, :, :, :2]).all()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_bad_arguments():
    x, w, b, g = _inputs(CASES[0])
    with pytest.raises(TypeError):  # an output the kernel cannot write in place is refused, not copied
        native.forward(x, w, b, np.empty(g.shape, np.float64), 1, 1, 1, 1, 1, 0, 1)
    with pytest.raises(TypeError):
        native.forward(x, w, b, np.empty(g.shape[::-1], np.float32).T, 1, 1, 1, 1, 1, 0, 1)
    with pytest.raises(ValueError, match="wrong shape"):
        native.forward(x, w, b, np.empty((1, 1, 1, 1), np.float32), 1, 1, 1, 1, 1, 0, 1)
    with pytest.raises(ValueError, match="part"):
        native.forward(x, w, b, np.empty(g.shape, np.float32), 1, 1, 1, 1, 1, 2, 2)
    with pytest.raises(ValueError, match="threads"):
        native.forward(x, w, b, np.empty(g.shape, np.float32), 1, 1, 1, 1, 1, 0, 1, 0)
    with pytest.raises(ValueError, match="threads"):
        native.weight_grad(x, g, np.empty(w.shape, np.float32), 1, 1, 1, 1, 1, 0, 1, 0)
    with pytest.raises(ValueError, match="3-D"):
        native.channel_sums(g, np.empty(g.shape[1], np.float32), 1)
    with pytest.raises(ValueError, match="wrong shape"):
        native.channel_sums(g.reshape(g.shape[0], g.shape[1], -1), np.empty(g.shape[1] + 1, np.float32), 1)
    with pytest.raises(ValueError, match="groups"):
        native.weight_grad(x, g, np.empty(w.shape, np.float32), 1, 1, 1, 1, 2, 0, 1)


# -- the same bits from other builds ---------------------------------------------------------------


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            return next((set(line.split(":")[1].split()) for line in f if line.startswith("flags")), set())
    except OSError:
        return set()


def _build(march: str, tmp: Path):
    """The module compiled for ``-march=march`` (as setup.py builds it, less -march=native)."""
    pybind11 = pytest.importorskip("pybind11")
    compiler = shutil.which(os.environ.get("CXX", "g++"))
    if compiler is None:
        pytest.skip("no C++ compiler")
    name = "_conv" + sysconfig.get_config_var("EXT_SUFFIX")
    out = tmp / march / name
    out.parent.mkdir()
    command = [compiler, "-O2", "-std=c++17", "-shared", "-fPIC", "-ffp-contract=off", f"-march={march}",
               f"-I{pybind11.get_include()}", f"-I{sysconfig.get_paths()['include']}", str(SOURCE), "-o", str(out)]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True)
    spec = importlib.util.spec_from_file_location("_conv", out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(sys.platform != "linux" or os.uname().machine != "x86_64", reason="builds for x86-64 targets")
def test_vector_widths_give_the_same_bits(tmp_path):
    """The installed build (the machine's widest vectors), an AVX2 build and a build without vector
    FMA (scalar std::fma) agree bit for bit on the forward, the weight gradient and channel sums."""
    builds = {"installed": native, "x86-64": _build("x86-64", tmp_path)}
    if {"avx2", "fma"} <= _cpu_flags():
        builds["haswell"] = _build("haswell", tmp_path)
    assert builds["x86-64"].lanes == 1
    for case in CASES[:5]:
        x, w, b, g = _inputs(case, seed=1)
        *_, (ph, pw), (dh, dw), groups = case
        results = {}
        for name, module in builds.items():
            out, grad = np.empty(g.shape, np.float32), np.empty(w.shape, np.float32)
            module.forward(x, w, b, out, ph, pw, dh, dw, groups, 0, 1)
            module.weight_grad(x, g, grad, ph, pw, dh, dw, groups, 0, 1)
            sums = np.empty(g.shape[1], np.float32)
            module.channel_sums(g.reshape(g.shape[0], g.shape[1], -1), sums, 1)
            results[name] = (out, grad, sums)
        for name, result in results.items():
            for got, want in zip(result, results["installed"], strict=True):
                assert np.array_equal(got, want), (name, case)
