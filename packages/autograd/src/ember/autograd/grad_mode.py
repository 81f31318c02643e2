"""Grad modes: whether ops record for backward, per thread.

``no_grad``, ``enable_grad``, ``set_grad_enabled`` and ``inference_mode`` work as context managers
and as decorators (of plain functions and of generator functions, whose every resumption runs in
the mode). ``set_grad_enabled(False)`` also takes effect when merely called, as in PyTorch.
Inference mode is no-grad plus a mark on the tensors it makes: autograd refuses to save them.
"""

from __future__ import annotations

import functools
import inspect
import threading


class _State(threading.local):
    def __init__(self) -> None:
        self.enabled = True
        self.inference = False


state = _State()


def is_grad_enabled() -> bool:
    return state.enabled


def is_inference_mode_enabled() -> bool:
    return state.inference


class _Mode:
    """A context manager that is also a decorator; subclasses say what ``__enter__`` sets."""

    def __call__(self, fn):
        if inspect.isclass(fn):
            raise RuntimeError(f"{type(self).__name__} cannot decorate a class; decorate its methods")
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return call

    def _wrap_generator(self, fn):
        @functools.wraps(fn)
        def generate(*args, **kwargs):
            gen = fn(*args, **kwargs)
            try:
                with self.clone():
                    value = gen.send(None)
                while True:
                    try:
                        sent = yield value
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as exc:
                        with self.clone():
                            value = gen.throw(exc)
                    else:
                        with self.clone():
                            value = gen.send(sent)
            except StopIteration as stop:
                return stop.value

        return generate

    def clone(self):
        return type(self)()


class no_grad(_Mode):
    """Ops inside record nothing: results do not require grad."""

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        if orig_func is not None and callable(orig_func):  # ``@no_grad`` without parentheses
            return self(orig_func)
        return self

    def __init__(self, orig_func=None) -> None:
        self.prev = True

    def __enter__(self) -> None:
        self.prev = state.enabled
        state.enabled = False

    def __exit__(self, *exc) -> None:
        state.enabled = self.prev


class enable_grad(_Mode):
    """Ops inside record again, inside a ``no_grad`` block too."""

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        if orig_func is not None and callable(orig_func):
            return self(orig_func)
        return self

    def __init__(self, orig_func=None) -> None:
        self.prev = True

    def __enter__(self) -> None:
        self.prev = state.enabled
        state.enabled = True

    def __exit__(self, *exc) -> None:
        state.enabled = self.prev


class set_grad_enabled(_Mode):
    """Turn recording on or off: now (as a call) and for a block (as a context manager)."""

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not {type(mode).__name__}")
        self.prev = state.enabled
        self.mode = mode
        state.enabled = mode

    def __enter__(self) -> None:
        state.enabled = self.mode

    def __exit__(self, *exc) -> None:
        state.enabled = self.prev

    def clone(self):
        return set_grad_enabled.__new_clone__(self.mode)

    @staticmethod
    def __new_clone__(mode: bool):
        # A clone for decorating must not switch the mode when it is made.
        clone = object.__new__(set_grad_enabled)
        clone.prev, clone.mode = state.enabled, mode
        return clone


class inference_mode(_Mode):
    """No grad, and tensors made inside are inference tensors, which autograd refuses to save."""

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode) and not isinstance(mode, bool):  # ``@inference_mode`` without parentheses
            self.__init__(True)
            return self(mode)
        return self

    def __init__(self, mode: bool = True) -> None:
        if callable(mode) and not isinstance(mode, bool):
            mode = True
        self.mode = bool(mode)
        self.prev = (True, False)

    def __enter__(self) -> None:
        self.prev = (state.enabled, state.inference)
        if self.mode:
            state.enabled, state.inference = False, True
        else:
            state.inference = False
        _marking.update()

    def __exit__(self, *exc) -> None:
        state.enabled, state.inference = self.prev
        _marking.update()

    def clone(self):
        return inference_mode(self.mode)


class _InferenceMarking:
    """While any thread is in inference mode, an interposer marks the tensors ops make there."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.threads: set[int] = set()
        self.installed = False

    def update(self) -> None:
        from ember.core import dispatch

        with self.lock:
            me = threading.get_ident()
            if state.inference:
                self.threads.add(me)
            else:
                self.threads.discard(me)
            want = bool(self.threads)
            if want != self.installed:
                if dispatch.level_handler("inference") is None:
                    dispatch.install_level("inference", _mark_inference)
                dispatch.enable_level("inference", want)
            self.installed = want


_marking = _InferenceMarking()


def _mark_inference(op, args, kwargs, call_below):
    result = call_below(args, kwargs)
    if state.inference:
        from ember.core.tensor import Tensor

        for t in result if isinstance(result, tuple | list) else (result,):
            if isinstance(t, Tensor):
                t._inference = True
    return result
