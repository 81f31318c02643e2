"""The short-time Fourier transform and its inverse: ``ember.stft`` and ``ember.istft``.

Both are composites of ops that have derivatives, so autograd (and the other transforms) go through
them without rules of their own:

- ``stft``: pad the signal by ``n_fft // 2`` at both ends (``center``), cut it into frames of
  ``n_fft`` samples every ``hop_length`` (``unfold``, a view), multiply by the window (zero-padded
  to ``n_fft`` about its center when shorter), and transform each frame (``_fft_r2c`` for real
  input, one-sided by default; ``_fft_c2c`` for complex input or window). The result is laid out
  ``(batch?, frequency, frame)``.
- ``istft``: transform each frame back (``_fft_c2r`` or ``_fft_c2c``), multiply by the window,
  overlap-add the frames (``index_add`` along time), and divide by the overlap-added squared
  window, which must not vanish anywhere (the NOLA condition); then trim the centering padding or
  cut/pad to ``length``.

The argument checks and their messages are PyTorch's (``stft(...)``/``istft(...)`` in front).
"""

from __future__ import annotations

import warnings

from ember.core import dtypes as D
from ember.core.api import method, public
from ember.core.dispatch import ops
from ember.core.tensor import Tensor
from ember.core.warn_always import should_warn

aten = ops.aten

_NORM_NONE, _NORM_BY_ROOT_N, _NORM_BY_N = 0, 1, 2


def _window_to_n_fft(window: Tensor | None, win_length: int, n_fft: int, like: Tensor) -> Tensor | None:
    """The window zero-padded about its center to ``n_fft`` (ones of ``win_length`` where None)."""
    if win_length == n_fft:
        return window
    if window is None:
        window = aten.ones.default([win_length], dtype=like.dtype.to_real(), device=like.device)
    left = (n_fft - win_length) // 2
    return aten.constant_pad_nd.default(window, [left, n_fft - win_length - left], 0)


def _warn_rectangular(window: Tensor | None, inverse: bool = False) -> None:
    """PyTorch's warning, once per process for each direction, that no window means a rectangular one."""
    if window is not None or not should_warn("istft rectangular window" if inverse else "stft rectangular window"):
        return
    why = (
        "Please provide the same window used by stft to make the inversion lossless."
        if inverse
        else "Other windows such as ember.hann_window or ember.hamming_window are recommended to reduce spectral "
        "leakage, which a rectangular window is known to cause."
    )
    warnings.warn(
        f"A window was not provided. A rectangular window will be applied. {why} To suppress this warning and use "
        "a rectangular window, explicitly set `window=ember.ones(n_fft, device=<device>)`.",
        UserWarning,
        stacklevel=3,
    )


def _type_string(t: Tensor) -> str:
    """How PyTorch names a tensor's type in these messages ("ember.DoubleTensor", "CPUComplexDoubleType")."""
    if t.dtype.category == D.COMPLEX:
        return f"{t.device.type.upper()}{D.SCALAR_TYPE_NAMES[t.dtype]}Type"
    return D.legacy_type_name(t.dtype, t.device.type, prefix="ember")


def _window_string(window: Tensor | None) -> str:
    return "None" if window is None else f"{_type_string(window)}{{{list(window.shape)}}}"


def _optional(value) -> str:
    return "None" if value is None else str(int(value))


@public("stft")
@method("stft")
def stft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
    align_to_window: bool | None = None,
) -> Tensor:
    """The short-time Fourier transform of a 1-D signal or a batch (2-D) of them.

    ``align_to_window`` (with ``center=False`` only): frames begin where the window begins, not
    where the ``n_fft`` samples around a shorter window begin.
    """
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    x = input
    if center:
        pad = n_fft // 2
        # The padding ops take (batch, channel, time): a signal or a batch of them gains leading dims of one.
        dims = x.ndim
        x = aten.pad.default(x.view([1] * (3 - dims) + list(x.shape)), [pad, pad], pad_mode)
        x = x.view(x.shape[-dims:])
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length

    def fail(reason: str):
        raise RuntimeError(
            f"stft({_type_string(x)}{list(x.shape)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
            f"window={_window_string(window)}, normalized={int(normalized)}, onesided={_optional(onesided)}, "
            f"return_complex={_optional(return_complex)}, align_to_window={_optional(align_to_window)}) : {reason}"
        )

    is_complex = x.dtype.category == D.COMPLEX or (window is not None and window.dtype.category == D.COMPLEX)
    complex_out = is_complex if return_complex is None else return_complex
    if not complex_out:
        if return_complex is None:
            raise RuntimeError(
                "stft requires the return_complex parameter be given for real inputs, and will further require "
                "that return_complex=True in a future PyTorch release."
            )
        warnings.warn(
            "stft with return_complex=False is deprecated. In a future pytorch release, stft will return complex "
            "tensors for all inputs, and return_complex=False will raise an error.\nNote: you can still call "
            "torch.view_as_real on the complex output to recover the old return format.",
            UserWarning,
            stacklevel=2,
        )
    _warn_rectangular(window)
    if x.dtype.category not in (D.FLOATING, D.COMPLEX):
        fail("expected a tensor of floating point or complex values")
    if x.ndim not in (1, 2):
        fail("expected a 1D or 2D tensor")
    batched = x if x.ndim == 2 else x.unsqueeze(0)
    length = batched.shape[1]
    if n_fft <= 0 or n_fft > length:
        fail(f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        fail(f"expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        fail(f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        fail(
            f"expected a 1D window tensor of size equal to win_length={win}, but got window with size {list(window.shape)}"
        )
    full_window = _window_to_n_fft(window, win, n_fft, batched)
    if align_to_window and win < n_fft:
        # Frame k covers samples [k * hop, k * hop + win) under the window: zeros around the signal
        # stand where the window's zero padding is.
        left = (n_fft - win) // 2
        batched = aten.constant_pad_nd.default(batched, [left, n_fft - win - left], 0)
    frames = batched.unfold(1, n_fft, hop)  # (batch, frame, n_fft)
    if full_window is not None:
        frames = frames * full_window
    norm = _NORM_BY_ROOT_N if normalized else _NORM_NONE
    if frames.dtype.category == D.COMPLEX:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = aten._fft_c2c.default(frames, [2], norm, True)
    else:
        out = aten._fft_r2c.default(frames, [2], norm, True if onesided is None else onesided)
    out = out.transpose(1, 2)
    if x.ndim == 1:
        out = out.squeeze(0)
    return out if complex_out else aten.view_as_real.default(out)


@public("istft")
@method("istft")
def istft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    normalized: bool = False,
    onesided: bool | None = None,
    length: int | None = None,
    return_complex: bool = False,
) -> Tensor:
    """The inverse of ``stft``: frames transformed back and overlap-added, divided by the summed squared window."""
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if input.dtype.category != D.COMPLEX:
        raise RuntimeError(
            "istft requires a complex-valued input tensor matching the output from stft with return_complex=True."
        )
    as_real = aten.view_as_real.default(input)  # PyTorch counts and checks the dims of this view
    dims = as_real.ndim
    n_frames, fft_size = as_real.size(-2), as_real.size(-3)

    def fail(reason: str, sep: str = " : "):
        raise RuntimeError(
            f"istft({_type_string(input)}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
            f"window={_window_string(window)}, center={int(center)}, normalized={int(normalized)}, "
            f"onesided={_optional(onesided)}, length={'None' if length is None else length}, "
            f"return_complex={int(return_complex)}){sep}{reason}"
        )

    if input.numel() == 0:
        fail("input tensor cannot be empty.")
    if dims not in (3, 4):
        fail(f"expected a tensor with 3 or 4 dimensions, but got {dims}")
    side = fft_size != n_fft if onesided is None else onesided
    if side and n_fft // 2 + 1 != fft_size:
        fail(
            "expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 + 1 when "
            f"onesided=True, but got {fft_size}"
        )
    if not side and n_fft != fft_size:
        fail(
            "expected the frequency dimension (3rd to the last) of the input tensor to match n_fft when "
            f"onesided=False, but got {fft_size}"
        )
    if not 0 < hop <= win:
        fail("expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        fail("expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        fail("Invalid window shape. window has to be 1D and length of `win_length`")
    _warn_rectangular(window, inverse=True)
    if window is not None and window.dtype.category == D.COMPLEX and not return_complex:
        raise RuntimeError("Complex windows are incompatible with return_complex=False")
    ones = aten.ones.default([win], dtype=input.dtype.to_real(), device=input.device)
    full_window = _window_to_n_fft(ones if window is None else window, win, n_fft, input)

    frames = input.unsqueeze(0) if dims == 3 else input
    frames = frames.transpose(1, 2)  # (batch, frame, frequency)
    norm = _NORM_BY_ROOT_N if normalized else _NORM_BY_N
    if return_complex:
        if side:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = aten._fft_c2c.default(frames, [2], norm, False)
    else:
        if not side:
            frames = frames.narrow(-1, 0, n_fft // 2 + 1)
        frames = aten._fft_c2r.default(frames, [2], norm, n_fft)
    frames = frames * full_window.view(1, 1, n_fft)

    total = n_fft + hop * (n_frames - 1)
    y = _overlap_add(frames, hop, total)
    envelope = _overlap_add(full_window.pow(2).expand(1, n_frames, n_fft), hop, total)

    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = total - n_fft // 2 if center else total
    stop = min(end, total)
    y = y.narrow(1, start, max(stop - start, 0))
    envelope = envelope.narrow(1, start, max(stop - start, 0))
    # The check reads data, which a meta tensor has none of.
    if envelope.device.type != "meta" and bool((envelope.abs() < 1e-11).any()):
        fail(
            "window overlap add min: 1\n(the squared window overlap-added every hop_length is zero somewhere: the "
            "nonzero overlap-add (NOLA) condition fails, so the signal cannot be recovered there)",
            sep=" ",
        )
    y = y / envelope
    if dims == 3:
        y = y.squeeze(0)
    if end > total:
        warnings.warn(
            "The length of signal is shorter than the length parameter. Result is being padded with zeros in the "
            "tail. Please check your center and hop_length settings.",
            UserWarning,
            stacklevel=2,
        )
        y = aten.constant_pad_nd.default(y, [0, end - total], 0)
    return y


def _overlap_add(frames: Tensor, hop: int, total: int) -> Tensor:
    """Frames ``(batch, frame, n)`` summed into a signal ``(batch, total)``, frame ``k`` starting at ``k * hop``."""
    batch, n_frames, n = frames.shape
    positions = aten.arange.start_step(0, n_frames * hop, hop, dtype=D.int64, device=frames.device)
    positions = (positions.unsqueeze(1) + aten.arange.start_step(0, n, 1, dtype=D.int64, device=frames.device)).reshape(
        -1
    )
    signal = aten.zeros.default([batch, total], dtype=frames.dtype, device=frames.device)
    return aten.index_add.default(signal, 1, positions, frames.reshape(batch, n_frames * n))
