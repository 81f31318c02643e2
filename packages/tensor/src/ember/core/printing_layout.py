"""The body of a printed tensor: its values laid out as nested ``[...]`` lines, as PyTorch lays them out.

Values are formatted as Python floats (float64; complex128 for complex tensors), converted only for
the values shown: every narrower float, float16 and bfloat16 included, converts to float64 exactly,
and Python's ``format`` of that exact value is what PyTorch prints too (it formats ``item()`` and
``tolist()`` values), so the digits agree to the last place.

One ``Formatter`` looks at every value that will be shown (the edges only, when the tensor is
summarized) and picks a mode: integer mode (``1.``) when every finite nonzero value is integral,
scientific notation when the largest and smallest magnitudes are more than 1000 apart or beyond
1e8 / 1e-4, fixed ``precision`` digits otherwise; ``sci_mode`` overrides the choice. It pads every value
to the widest. ``tensor_body`` then lays rows out, ``linewidth`` characters a line, eliding the middle of
every dimension longer than ``2 * edgeitems`` when the tensor holds more than ``threshold`` elements.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ember.core.dtypes_extra import complex32_as_complex64


@dataclasses.dataclass
class PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


OPTIONS = PrintOptions()


class Formatter:
    """Formats the values of one real tensor (or one part of a complex one) to a common width."""

    def __init__(self, values: np.ndarray) -> None:
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        flat = values.reshape(-1)
        if not self.floating:
            for value in flat.tolist():
                self.width = max(self.width, len(str(value)))
            return
        shown = flat[np.isfinite(flat) & (flat != 0)]
        if shown.size == 0:
            # Nothing to measure: zeros, nan and inf print in integer mode, whatever sci_mode says.
            return
        magnitudes = np.abs(shown)
        smallest, largest = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(shown == np.ceil(shown)))
        if OPTIONS.sci_mode is None:
            self.sci_mode = largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4
        else:
            self.sci_mode = OPTIONS.sci_mode
        if self.sci_mode:
            spec = f".{OPTIONS.precision}e"
            extra = 0
        elif self.int_mode:
            spec, extra = ".0f", 1  # the "." that integer mode appends
        else:
            spec = f".{OPTIONS.precision}f"
            extra = 0
        for value in shown.tolist():
            self.width = max(self.width, len(format(value, spec)) + extra)

    def format(self, value) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = format(value, f"{self.width}.{OPTIONS.precision}e")
        elif self.int_mode:
            text = format(value, ".0f")
            if math.isfinite(value):
                text += "."
        else:
            text = format(value, f".{OPTIONS.precision}f")
        return text.rjust(self.width)


def _complex_text(value: complex, real: Formatter, imag: Formatter) -> str:
    imag_text = (imag.format(value.imag) + "j").lstrip()
    # A negative imaginary part (or -0.) brings its own sign; otherwise a "+" joins the parts.
    if imag_text[0] in "+-":
        return real.format(value.real) + imag_text
    return real.format(value.real) + "+" + imag_text


def _printable(array: np.ndarray) -> np.ndarray:
    """The values in a dtype Python formats exactly as PyTorch's ``item()``/``tolist()`` give them."""
    kind = array.dtype.kind
    if array.dtype.names:  # complex32: a structured pair of halves
        return complex32_as_complex64(array).astype(np.complex128)
    if kind == "c":
        return array.astype(np.complex128)
    if array.dtype.type is np.void:  # a storage-only dtype (bits8, int4, ...): no values to show
        raise NotImplementedError('"_local_scalar_dense_cpu" not implemented for a storage-only dtype')
    if kind == "f" or kind == "V" or array.dtype.name == "bfloat16":
        return array.astype(np.float64)
    return array


def _edges(array: np.ndarray, edge: int) -> list[np.ndarray]:
    """The values a summarized print shows, as flat pieces (their arrangement does not matter)."""
    if array.ndim == 0:
        return [array.reshape(-1)]
    n = array.shape[0]
    if array.ndim == 1:
        # With edge == 0 both slices run to the ends, so all of the row counts, as in PyTorch.
        return [array[:edge], array[-edge:]] if n > 2 * edge else [array]
    if not edge:
        return []
    rows = [*range(edge), *range(n - edge, n)] if n > 2 * edge else range(n)
    return [piece for i in rows for piece in _edges(array[i], edge)]


def _formatters(values: np.ndarray, summarize: bool) -> tuple[Formatter, Formatter | None]:
    if summarize:
        pieces = _edges(values, OPTIONS.edgeitems)
        shown = np.concatenate(pieces) if pieces else values.reshape(-1)[:0]
    else:
        shown = values
    # Converted after picking the shown values, so a huge tensor is never copied whole.
    shown = _printable(shown)
    if shown.dtype.kind == "c":
        return Formatter(shown.real), Formatter(shown.imag)
    return Formatter(shown), None


def tensor_body(array: np.ndarray, indent: int) -> str:
    """The nested-list text of a non-empty tensor's values, its first line starting at column ``indent``."""
    summarize = array.size > OPTIONS.threshold
    real, imag = _formatters(array, summarize)
    return _layout(array, indent, summarize, real, imag)


def _layout(values: np.ndarray, indent: int, summarize: bool, real: Formatter, imag: Formatter | None) -> str:
    if values.ndim == 0:
        value = _printable(values).item()
        return real.format(value) if imag is None else _complex_text(value, real, imag)
    if values.ndim == 1:
        return _row(values, indent, summarize, real, imag)
    edge = OPTIONS.edgeitems
    n = values.shape[0]
    if summarize and n > 2 * edge:
        head = [_layout(values[i], indent + 1, summarize, real, imag) for i in range(edge)]
        tail = [_layout(values[i], indent + 1, summarize, real, imag) for i in range(n - edge, n)]
        slices = [*head, "...", *tail]
    else:
        slices = [_layout(values[i], indent + 1, summarize, real, imag) for i in range(n)]
    # Blank lines between blocks: one fewer than the block's rank, as NumPy and PyTorch print.
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _row(values: np.ndarray, indent: int, summarize: bool, real: Formatter, imag: Formatter | None) -> str:
    element = real.width + 2 + (0 if imag is None else imag.width + 1)
    per_line = max(1, math.floor((OPTIONS.linewidth - indent) / element))

    def text(part: np.ndarray) -> list[str]:
        items = _printable(part).tolist()
        if imag is None:
            return [real.format(v) for v in items]
        return [_complex_text(v, real, imag) for v in items]

    edge = OPTIONS.edgeitems
    if summarize and not edge:
        data = ["..."]
    elif summarize and values.shape[0] > 2 * edge:
        data = [*text(values[:edge]), " ...", *text(values[-edge:])]
    else:
        data = text(values)
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
