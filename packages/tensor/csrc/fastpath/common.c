/* ember.core._fastpath: the objects ``init`` hands over (the definitions of fastpath.h's globals),
 * integers and tensor metadata as C values. */
#include "fastpath.h"

PyTypeObject *Tensor_type, *Storage_type, *ndarray_type;
PyObject *ViewRefs_type, *flags, *MISS, *py_make_view;
Py_ssize_t off_storage, off_shape, off_stride, off_offset, off_dtype, off_device, off_array, off_contig;
Py_ssize_t soff_data, soff_nbytes, soff_device, soff_version, soff_handle;
PyObject *s_data, *s_itemsize, *s_np, *s_base, *s_views, *s_limit, *s_prune, *s_requires_grad, *s_type, *s_kernels,
    *s_any, *s_slow, *s_subclasses, *s_nbytes, *s_alpha;
PyObject *zero;
PyObject *s_dtype, *s_shape, *s_flags, *s_c_contiguous, *s_device;
PyObject *fast_dtypes, *exact_dtypes, *bool_dtype, *quiet_var, *quiet_value, *py_from_array, *cpu_device;

int slot_offset(PyObject *cls, const char *name, Py_ssize_t *offset) {
    PyObject *descr = PyObject_GetAttrString(cls, name);
    if (descr == NULL) return -1;
    if (!Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%s is not a slot", name);
        Py_DECREF(descr);
        return -1;
    }
    *offset = ((PyMemberDescrObject *)descr)->d_member->offset;
    Py_DECREF(descr);
    return 0;
}

void set_slot(PyObject *obj, Py_ssize_t off, PyObject *value) {
    Py_INCREF(value);
    Py_XSETREF(SLOT(obj, off), value);
}

PyObject *py_init(PyObject *self, PyObject *args) {
    PyObject *tensor, *storage, *ndarray;
    if (!PyArg_ParseTuple(args, "O!O!O!OOOO", &PyType_Type, &tensor, &PyType_Type, &storage, &PyType_Type, &ndarray,
                          &ViewRefs_type, &flags, &MISS, &py_make_view))
        return NULL;
    Tensor_type = (PyTypeObject *)tensor;
    Storage_type = (PyTypeObject *)storage;
    ndarray_type = (PyTypeObject *)ndarray;
    PyObject *keep[] = {tensor, storage, ndarray, ViewRefs_type, flags, MISS, py_make_view};
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) Py_INCREF(keep[i]);  // held for the process
    if (slot_offset(tensor, "_storage", &off_storage) || slot_offset(tensor, "_shape", &off_shape) ||
        slot_offset(tensor, "_stride", &off_stride) || slot_offset(tensor, "_offset", &off_offset) ||
        slot_offset(tensor, "dtype", &off_dtype) || slot_offset(tensor, "device", &off_device) ||
        slot_offset(tensor, "_array", &off_array) || slot_offset(tensor, "_contig", &off_contig) ||
        slot_offset(storage, "data", &soff_data) || slot_offset(storage, "nbytes", &soff_nbytes) ||
        slot_offset(storage, "device", &soff_device) || slot_offset(storage, "version", &soff_version) ||
        slot_offset(storage, "handle", &soff_handle))
        return NULL;
    Py_RETURN_NONE;
}

/* -- integers: only exact Python ints in the C long long range are handled ------------------------ */

int as_ll(PyObject *o, long long *out) {
    if (!PyLong_CheckExact(o)) return 0;
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (*out == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* A tuple of exact ints as C integers; 0 (no error set) when it is anything else. */
int read_dims(PyObject *seq, long long *out, Py_ssize_t *n) {
    if (!PyTuple_CheckExact(seq) && !PyList_CheckExact(seq)) return 0;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    if (len > MAXDIM) return 0;
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < len; i++)
        if (!as_ll(items[i], &out[i])) return 0;
    *n = len;
    return 1;
}

PyObject *make_tuple(const long long *values, Py_ssize_t n) {
    PyObject *t = PyTuple_New(n);
    if (t == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyLong_FromLongLong(values[i]);
        if (v == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

/* The metadata of an exact Tensor as C integers; 0 when it is not one or holds other than ints. */

int read_meta(PyObject *t, Meta *m) {
    if (Tensor_type == NULL || Py_TYPE(t) != Tensor_type) return 0;
    PyObject *shape = SLOT(t, off_shape), *stride = SLOT(t, off_stride), *offset = SLOT(t, off_offset);
    if (shape == NULL || stride == NULL || offset == NULL) return 0;
    Py_ssize_t n, k;
    if (!read_dims(shape, m->shape, &n) || !read_dims(stride, m->stride, &k) || n != k) return 0;
    m->ndim = n;
    return as_ll(offset, &m->offset);
}

long long numel_of(const long long *shape, Py_ssize_t n) {
    long long total = 1;
    for (Py_ssize_t i = 0; i < n; i++) total *= shape[i];
    return total;
}

/* Whether a tensor's storage is a plain Storage with a device (and the tensor a dtype). */
int plain_storage(PyObject *base) {
    PyObject *storage = SLOT(base, off_storage);
    return storage != NULL && Py_TYPE(storage) == Storage_type && SLOT(storage, soff_device) != NULL &&
           SLOT(base, off_dtype) != NULL;
}

int contiguous(const Meta *m) {
    long long expected = 1;
    for (Py_ssize_t i = m->ndim - 1; i >= 0; i--) {
        if (m->shape[i] == 0) return 1;
        if (m->shape[i] != 1) {
            if (m->stride[i] != expected) return 0;
            expected *= m->shape[i];
        }
    }
    return 1;
}

int wrap_dim(long long dim, Py_ssize_t ndim, long long *out) {
    long long n = ndim > 0 ? ndim : 1;
    if (dim < -n || dim >= n) return 0;
    *out = dim < 0 ? dim + n : dim;
    return 1;
}

int optional_ll(PyObject *o, long long *out) {
    if (o == Py_None) return 0;
    return as_ll(o, out) ? 1 : -1;
}

int in_tuple(PyObject *item, PyObject *tuple) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++)
        if (PyTuple_GET_ITEM(tuple, i) == item) return 1;
    return 0;
}

/* Tensor.is_contiguous() for an exact Tensor with int metadata, caching it as the method does;
 * -1 when the metadata is not plain ints. */
int is_contiguous_cached(PyObject *t, const Meta *m) {
    PyObject *cached = SLOT(t, off_contig);
    if (cached == Py_True) return 1;
    if (cached == Py_False) return 0;
    int c = contiguous(m);
    set_slot(t, off_contig, c ? Py_True : Py_False);
    return c;
}

/* Whether ``m``'s strides are the row-major ones of its sizes (layout.int_contiguous_strides). */
int row_major(const Meta *m) {
    long long running = 1;
    for (Py_ssize_t i = m->ndim - 1; i >= 0; i--) {
        if (m->stride[i] != running) return 0;
        running *= m->shape[i] > 1 ? m->shape[i] : 1;
    }
    return 1;
}

/* A kernel written in C, bound to ``(fallback, float32, float64)``: the Python kernel it hands every
 * other call to and the dtypes it handles (``scaled_add``, ``tensor_add``, ``column_sum``). */
PyObject *bind_kernel(PyMethodDef *def, PyObject *args) {
    PyObject *fallback, *f32, *f64;
    if (!PyArg_ParseTuple(args, "OOO", &fallback, &f32, &f64)) return NULL;
    if (Tensor_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ember.core._fastpath.init has not run");
        return NULL;
    }
    PyObject *bound = PyTuple_Pack(3, fallback, f32, f64);
    if (bound == NULL) return NULL;
    PyObject *kernel = PyCFunction_New(def, bound);
    Py_DECREF(bound);
    return kernel;
}
