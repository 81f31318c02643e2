"""``ember.Generator``: a seed and an offset into the Philox stream, nothing more.

Philox is counter-based (``ember.core.philox``): the numbers of an op are a pure function of the
generator's ``(seed, offset)`` when the op starts. Each sampler reserves a range of counters with
``reserve(generator, count)``, which returns the seed and the first offset and moves the offset past
the range; so saving ``(seed, offset)`` and restoring it replays every later op exactly, and a
compiled kernel given the same pair draws the same numbers. What each op consumes is documented in
``ember.core.random_bits``.

State layout (``get_state``/``set_state``, ``ember.get_rng_state``): a uint8 tensor of 16 bytes, the
seed as a little-endian uint64 followed by the offset as a little-endian uint64. (PyTorch's CPU
generator, a Mersenne Twister, has a 5056-byte state; its CUDA Philox generator keeps seed and offset
as we do.) The default generator starts from a fresh random seed in each process, as PyTorch's
does; a new ``Generator()`` starts from PyTorch's fixed default seed, 67280421310721.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from ember.core import dtypes as D
from ember.core.api import public
from ember.core.devices import to_device
from ember.core.tensor import Tensor, from_array

DEFAULT_SEED = 67280421310721
STATE_BYTES = 16
_MASK = (1 << 64) - 1


def _check_seed(seed) -> int:
    """PyTorch's seed argument: an int in [-2**63, 2**64); negative seeds wrap to unsigned."""
    if isinstance(seed, Tensor):
        seed = seed.item()
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    seed = int(seed)
    if seed < -(1 << 63) or seed > _MASK:
        raise ValueError("Overflow when unpacking long long")
    return seed & _MASK


class Generator:
    """A Philox generator of the CPU: ``Generator(device="cpu")``, ``manual_seed``, ``get_state``..."""

    def __init__(self, device="cpu") -> None:
        device = to_device(device)
        if device.type != "cpu":
            raise RuntimeError(f"{device.type.upper()} device type not an accelerator.")
        self._device = device
        self._seed = DEFAULT_SEED
        self._offset = 0
        self._lock = threading.Lock()

    @property
    def device(self):
        return self._device

    def manual_seed(self, seed) -> Generator:
        """Start the stream of ``seed`` from its beginning (offset 0)."""
        seed = _check_seed(seed)
        with self._lock:
            self._seed, self._offset = seed, 0
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the new seed."""
        seed = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        return self._seed

    def get_offset(self) -> int:
        """How many Philox counters the ops have used since the seed was set."""
        return self._offset

    def set_offset(self, offset: int) -> Generator:
        if isinstance(offset, bool) or not isinstance(offset, int | np.integer) or not 0 <= offset <= _MASK:
            raise RuntimeError(f"set_offset expects an offset in [0, 2**64), got {offset!r}")
        with self._lock:
            self._offset = int(offset)
        return self

    def get_state(self) -> Tensor:
        """The state as 16 uint8 values: seed then offset, each a little-endian uint64."""
        with self._lock:
            raw = self._seed.to_bytes(8, "little") + self._offset.to_bytes(8, "little")
        return from_array(np.frombuffer(raw, np.uint8).copy(), D.uint8)

    def set_state(self, new_state) -> Generator:
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype is not D.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if new_state.numel() != STATE_BYTES:
            raise RuntimeError(
                f"Expected a Philox generator state of size {STATE_BYTES} but found the input RNG state size to be "
                f"{new_state.numel()}"
            )
        raw = new_state._require_data("read an RNG state").reshape(-1).tobytes()
        with self._lock:
            self._seed = int.from_bytes(raw[:8], "little")
            self._offset = int.from_bytes(raw[8:], "little")
        return self

    def reserve(self, count: int) -> tuple[int, int]:
        """Take ``count`` counters: returns ``(seed, first offset)`` and moves the offset past them."""
        with self._lock:
            seed, offset = self._seed, self._offset
            self._offset = (offset + count) & _MASK
        return seed, offset

    def __getstate__(self) -> dict:
        return {"device": str(self._device), "seed": self._seed, "offset": self._offset}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["device"])
        self._seed, self._offset = state["seed"], state["offset"]

    def __repr__(self) -> str:
        return f"<ember.Generator device={self._device} seed={self._seed} offset={self._offset}>"


default_generator = Generator()
default_generator.seed()
public("Generator")(Generator)
public("default_generator")(default_generator)


def resolve(generator) -> Generator:
    """The generator an op draws from: the one given, else the default."""
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"argument 'generator' must be ember.Generator, not {type(generator).__name__}")
    return generator


def reserve(generator, count: int) -> tuple[int, int]:
    return resolve(generator).reserve(count)


@public("manual_seed")
def manual_seed(seed) -> Generator:
    """Seed the default generator (and every device's, once devices have their own); returns it."""
    return default_generator.manual_seed(seed)


@public("seed")
def seed() -> int:
    """Seed the default generator from the operating system's entropy; returns the seed."""
    return default_generator.seed()


@public("initial_seed")
def initial_seed() -> int:
    return default_generator.initial_seed()


@public("get_rng_state")
def get_rng_state() -> Tensor:
    """The default generator's state: 16 uint8 values, seed then offset (little-endian uint64 each)."""
    return default_generator.get_state()


@public("set_rng_state")
def set_rng_state(new_state) -> None:
    default_generator.set_state(new_state)
