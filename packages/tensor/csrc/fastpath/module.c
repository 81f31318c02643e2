/* ember.core._fastpath: the common case of small eager ops, in C.
 *
 * Every function here either does exactly what the Python code it stands for does, or declines and
 * returns None (the dispatcher's call returns the ``MISS`` marker instead), after which the caller
 * runs its Python path. Declining is cheap and has no side effect, so anything unusual (symbolic sizes,
 * subclasses, an index out of range, an error to raise) is left to Python, which keeps PyTorch's
 * errors in one place. The module is optional: without a compiler Ember runs the Python path alone.
 *
 * ``init`` hands over the classes and objects the functions use; tensor slots are read and written at
 * the offsets their member descriptors give, for exact ``Tensor`` instances only (a subclass might
 * shadow a slot with a property). The tensors and storages made here get every slot that
 * ``tensor._new`` and ``Storage.__init__`` set; ember.core.tensor checks the slot names before ``init``.
 */

#include "fastpath.h"

static PyMethodDef methods[] = {
    {"init", py_init, METH_VARARGS, "init(Tensor, Storage, ndarray, ViewRefs, flags, MISS, make_view)"},
    {"make_view", (PyCFunction)(void (*)(void))fp_make_view, METH_FASTCALL, "tensor.make_view"},
    {"view", (PyCFunction)(void (*)(void))fp_view, METH_FASTCALL, "the view kernel's common case, else None"},
    {"transpose", (PyCFunction)(void (*)(void))fp_transpose, METH_FASTCALL, "transpose.int's common case"},
    {"t", (PyCFunction)(void (*)(void))fp_t, METH_FASTCALL, "t's common case, else None"},
    {"unsqueeze", (PyCFunction)(void (*)(void))fp_unsqueeze, METH_FASTCALL, "unsqueeze's common case"},
    {"select", (PyCFunction)(void (*)(void))fp_select, METH_FASTCALL, "select.int's common case, else None"},
    {"slice", (PyCFunction)(void (*)(void))fp_slice, METH_FASTCALL, "slice.Tensor's common case, else None"},
    {"call", (PyCFunction)(void (*)(void))fp_call, METH_FASTCALL, "the dispatcher's fast path, else MISS"},
    {"getitem", (PyCFunction)(void (*)(void))fp_getitem, METH_FASTCALL, "basic indexing's common case"},
    {"view_method", (PyCFunction)(void (*)(void))fp_view_method, METH_FASTCALL, "Tensor.view's common case"},
    {"method", (PyCFunction)(void (*)(void))fp_method, METH_FASTCALL, "t/transpose/unsqueeze methods"},
    {"wrap", (PyCFunction)(void (*)(void))fp_wrap, METH_FASTCALL, "a Tensor owning an array"},
    {"same_kind_arrays", (PyCFunction)(void (*)(void))fp_same_kind_arrays, METH_FASTCALL,
     "joining._same_kind_arrays, else None"},
    {"fill_data_ptrs", (PyCFunction)(void (*)(void))fp_fill_data_ptrs, METH_FASTCALL,
     "fill_data_ptrs(out, tensors): each tensor's data_ptr() into a pointer array, else False"},
    {"init_arrays", py_init_arrays, METH_VARARGS, "init_arrays(from_array, cpu): what from_array needs"},
    {"from_array", (PyCFunction)(void (*)(void))fp_from_array, METH_FASTCALL, "tensor.from_array"},
    {"init_pointwise", py_init_pointwise, METH_VARARGS, "the dtypes and NumPy objects pointwise needs"},
    {"pointwise", (PyCFunction)(void (*)(void))fp_pointwise, METH_FASTCALL, "pointwise._fast_path, else None"},
    {"scaled_add", py_scaled_add, METH_VARARGS, "scaled_add(fallback, float32, float64): add_'s CPU kernel"},
    {"tensor_add", py_tensor_add, METH_VARARGS, "tensor_add(fallback, float32, float64): add.Tensor's CPU kernel"},
    {"column_sum", py_column_sum, METH_VARARGS, "column_sum(fallback, float32, float64): sum.dim_IntList's CPU kernel"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastpath", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fastpath(void) {
    const char *names[] = {"data", "itemsize", "np", "_base", "_views", "limit", "prune",
                           "requires_grad", "type", "_kernels", "_any", "slow", "subclasses", "nbytes", "alpha"};
    PyObject **slots[] = {&s_data, &s_itemsize, &s_np, &s_base, &s_views, &s_limit, &s_prune,
                          &s_requires_grad, &s_type, &s_kernels, &s_any, &s_slow, &s_subclasses, &s_nbytes, &s_alpha};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        *slots[i] = PyUnicode_InternFromString(names[i]);
        if (*slots[i] == NULL) return NULL;
    }
    const char *more[] = {"dtype", "shape", "flags", "c_contiguous", "device"};
    PyObject **more_slots[] = {&s_dtype, &s_shape, &s_flags, &s_c_contiguous, &s_device};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        *more_slots[i] = PyUnicode_InternFromString(more[i]);
        if (*more_slots[i] == NULL) return NULL;
    }
    zero = PyLong_FromLong(0);
    if (zero == NULL) return NULL;
    return PyModule_Create(&module);
}
