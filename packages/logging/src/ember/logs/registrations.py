"""Every log component and artifact of the project, in one place.

A package that logs asks for its module logger (``logging.getLogger(__name__)``) or for an
artifact logger (``get_artifact_logger(__name__, "graph_code")``); the names it may use are the
ones declared here. Add new ones here, beside their siblings, with a one-line description.
"""

from ember.logs._state import register_artifact, register_component

# -- components: a name users type, bound to the loggers of one package's modules -------------

register_component(
    "core", "tensors, dtypes, devices, the op registry and dispatcher", ["ember.core", "ember.ops", "ember.library"]
)
register_component(
    "autograd", "the reverse- and forward-mode engines and ember.func transforms", ["ember.autograd", "ember.func"]
)
register_component(
    "nn", "modules, optimizers, autocast and data loading", ["ember.nn", "ember.optim", "ember.amp", "ember.utils"]
)
register_component("sdpa", "scaled_dot_product_attention backends and FlexAttention", ["ember.sdpa"])
register_component("fx", "graph IR, tracing, fake tensors, functionalization, symbolic shapes", ["ember.fx"])
register_component("dynamo", "bytecode capture: tracing, guards, graph breaks, caches", ["ember.dynamo"])
register_component("aot", "AOT autograd: joint graphs and the partitioner", ["ember.aot"])
register_component("inductor", "lowering, scheduling, fusion and C++/Triton codegen", ["ember.inductor"])
register_component("export", "ember.export, .pt2 archives and AOT-compiled packages", ["ember.export"])
register_component("distributed", "stores, process groups, collectives, DTensor, FSDP", ["ember.distributed"])
register_component("cuda", "the CUDA device plugin: allocator, streams, eager kernels", ["ember.cuda"])

# -- artifacts: kinds of records, on or off; off_by_default ones only show when named ----------

register_artifact("graph", "each captured graph as a table of nodes")
register_artifact("graph_code", "each captured graph as Python source")
register_artifact("graph_breaks", "every graph break with the user's file, line and reason")
register_artifact("guards", "the guards installed for each compiled frame")
register_artifact("recompiles", "every recompile with the guard that failed")
register_artifact("dynamic", "which sizes and ints became symbolic (automatic dynamic shapes), and why")
register_artifact("bytecode", "original and rewritten bytecode of each compiled frame", off_by_default=True)
register_artifact("fx_graphs", "each graph symbolic_trace or make_fx makes, as Python source", off_by_default=True)
register_artifact("aot_graphs", "forward and backward graphs after AOT autograd")
register_artifact("aot_joint_graph", "the joint graph AOT autograd partitions", off_by_default=True)
register_artifact("output_code", "the code Inductor generates (kernels and wrapper)", off_by_default=True)
register_artifact("schedule", "Inductor's scheduler nodes in their final order", off_by_default=True)
register_artifact("fusion", "fusion decisions: which nodes fused and why others did not", off_by_default=True)
register_artifact("kernel_choice", "which kernel or template was chosen and the timings behind it", off_by_default=True)
register_artifact("perf_hints", "places where the compiled code is likely slower than it could be")
register_artifact("collectives", "every collective call with its group, sizes and timing", off_by_default=True)
register_artifact("compile_times", "time spent in each compile phase")
