"""``ember.utils.benchmark.utils.valgrind_wrapper``: the Callgrind result containers
(PyTorch's ``torch.utils.benchmark.utils.valgrind_wrapper``)."""

from ember.utils.benchmark.utils.valgrind_wrapper import timer_interface

__all__ = ["timer_interface"]
