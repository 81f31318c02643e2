/* The shared part of ember.core._fastpath: the objects ``init`` hands over, tensor and storage slot
 * offsets, integer and metadata helpers. The module is cut by concern: common.c (init, integers,
 * metadata), views.c (view kernels, basic indexing), dispatch.c (the dispatcher's common case),
 * arrays.c (tensors wrapping arrays), pointwise.c (pointwise ops), add.c (``add_``, ``add``), reductions.c
 * (``sum`` over a leading dimension), module.c (the method table).
 */
#ifndef EMBER_FASTPATH_H
#define EMBER_FASTPATH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <structmember.h>

#define MAXDIM 64
// Larger slice steps go to Python, whose ints cannot overflow (stride * step, end - start + step).
#define MAXSTEP (1LL << 32)

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))
#define DECLINE Py_RETURN_NONE
#define TENSOR_META(obj, m) \
    Meta m;                 \
    if (!read_meta(obj, &m) || !plain_storage(obj)) DECLINE

extern PyTypeObject *Tensor_type, *Storage_type, *ndarray_type;
extern PyObject *ViewRefs_type, *flags, *MISS, *py_make_view;
extern Py_ssize_t off_storage, off_shape, off_stride, off_offset, off_dtype, off_device, off_array, off_contig;
extern Py_ssize_t soff_data, soff_nbytes, soff_device, soff_version, soff_handle;
extern PyObject *s_data, *s_itemsize, *s_np, *s_base, *s_views, *s_limit, *s_prune, *s_requires_grad, *s_type,
    *s_kernels, *s_any, *s_slow, *s_subclasses, *s_nbytes, *s_alpha;
extern PyObject *zero;
extern PyObject *s_dtype, *s_shape, *s_flags, *s_c_contiguous, *s_device;
// Set by init_pointwise and init_arrays.
extern PyObject *fast_dtypes, *exact_dtypes, *bool_dtype, *quiet_var, *quiet_value, *py_from_array, *cpu_device;

/* The metadata of an exact Tensor as C integers. */
typedef struct {
    Py_ssize_t ndim;
    long long shape[MAXDIM], stride[MAXDIM], offset;
} Meta;

/* common.c */
int slot_offset(PyObject *cls, const char *name, Py_ssize_t *offset);
void set_slot(PyObject *obj, Py_ssize_t off, PyObject *value);
int as_ll(PyObject *o, long long *out);
int read_dims(PyObject *seq, long long *out, Py_ssize_t *n);
PyObject *make_tuple(const long long *values, Py_ssize_t n);
int read_meta(PyObject *t, Meta *m);
long long numel_of(const long long *shape, Py_ssize_t n);
int contiguous(const Meta *m);
int wrap_dim(long long dim, Py_ssize_t ndim, long long *out);
int plain_storage(PyObject *base);
int optional_ll(PyObject *o, long long *out);
int is_contiguous_cached(PyObject *t, const Meta *m);
int row_major(const Meta *m);
int in_tuple(PyObject *item, PyObject *tuple);
PyObject *bind_kernel(PyMethodDef *def, PyObject *args);

/* dispatch.c */
int flag(PyObject *name);
int requires_grad(PyObject *t);
int plain_call(PyObject *t);

/* views.c, arrays.c */
PyObject *view_of(PyObject *base, const long long *shape, const long long *stride, Py_ssize_t ndim, long long offset);
PyObject *own_array(PyObject *result, PyObject *dtype);
PyObject *fresh_array(const long long *shape, Py_ssize_t n, PyObject *dtype, Py_buffer *view);

/* The module's functions (module.c's table). */
#define ENTRY(name) PyObject *name(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
PyObject *py_init(PyObject *self, PyObject *args);
PyObject *py_init_arrays(PyObject *self, PyObject *args);
PyObject *py_init_pointwise(PyObject *self, PyObject *args);
PyObject *py_scaled_add(PyObject *self, PyObject *args);
PyObject *py_column_sum(PyObject *self, PyObject *args);
PyObject *py_tensor_add(PyObject *self, PyObject *args);
ENTRY(fp_make_view);
ENTRY(fp_view);
ENTRY(fp_transpose);
ENTRY(fp_t);
ENTRY(fp_unsqueeze);
ENTRY(fp_select);
ENTRY(fp_slice);
ENTRY(fp_call);
ENTRY(fp_getitem);
ENTRY(fp_view_method);
ENTRY(fp_method);
ENTRY(fp_wrap);
ENTRY(fp_from_array);
ENTRY(fp_pointwise);
ENTRY(fp_same_kind_arrays);
ENTRY(fp_fill_data_ptrs);
#undef ENTRY

#endif
