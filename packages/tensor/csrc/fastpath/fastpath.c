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
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <structmember.h>

#define MAXDIM 64
// Larger slice steps go to Python, whose ints cannot overflow (stride * step, end - start + step).
#define MAXSTEP (1LL << 32)

static PyTypeObject *Tensor_type, *Storage_type, *ndarray_type;
static PyObject *ViewRefs_type, *flags, *MISS, *py_make_view;
static Py_ssize_t off_storage, off_shape, off_stride, off_offset, off_dtype, off_device, off_array, off_contig;
static Py_ssize_t soff_data, soff_nbytes, soff_device, soff_version, soff_handle;
static PyObject *s_data, *s_itemsize, *s_np, *s_base, *s_views, *s_limit, *s_prune, *s_requires_grad, *s_type,
    *s_kernels, *s_any, *s_slow, *s_subclasses, *s_nbytes;
static PyObject *zero;
static PyObject *s_dtype, *s_shape, *s_flags, *s_c_contiguous, *s_device;

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

static int slot_offset(PyObject *cls, const char *name, Py_ssize_t *offset) {
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

static void set_slot(PyObject *obj, Py_ssize_t off, PyObject *value) {
    Py_INCREF(value);
    Py_XSETREF(SLOT(obj, off), value);
}

static PyObject *py_init(PyObject *self, PyObject *args) {
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

static int as_ll(PyObject *o, long long *out) {
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
static int read_dims(PyObject *seq, long long *out, Py_ssize_t *n) {
    if (!PyTuple_CheckExact(seq) && !PyList_CheckExact(seq)) return 0;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    if (len > MAXDIM) return 0;
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < len; i++)
        if (!as_ll(items[i], &out[i])) return 0;
    *n = len;
    return 1;
}

static PyObject *make_tuple(const long long *values, Py_ssize_t n) {
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
typedef struct {
    Py_ssize_t ndim;
    long long shape[MAXDIM], stride[MAXDIM], offset;
} Meta;

static int read_meta(PyObject *t, Meta *m) {
    if (Tensor_type == NULL || Py_TYPE(t) != Tensor_type) return 0;
    PyObject *shape = SLOT(t, off_shape), *stride = SLOT(t, off_stride), *offset = SLOT(t, off_offset);
    if (shape == NULL || stride == NULL || offset == NULL) return 0;
    Py_ssize_t n, k;
    if (!read_dims(shape, m->shape, &n) || !read_dims(stride, m->stride, &k) || n != k) return 0;
    m->ndim = n;
    return as_ll(offset, &m->offset);
}

/* -- making a view: ember.core.tensor.make_view ------------------------------------------------- */

static long long numel_of(const long long *shape, Py_ssize_t n) {
    long long total = 1;
    for (Py_ssize_t i = 0; i < n; i++) total *= shape[i];
    return total;
}

/* Remember ``view`` among the views of ``root`` (tensor.note_view). */
static int note_view(PyObject *view, PyObject *base) {
    PyObject *root = PyObject_GetAttr(base, s_base);
    if (root == NULL) return -1;
    if (root == Py_None) {
        Py_DECREF(root);
        root = Py_NewRef(base);
    }
    int rc = -1;
    PyObject *refs = NULL, *ref = NULL, *limit = NULL;
    if (PyObject_SetAttr(view, s_base, root) < 0) goto done;
    refs = PyObject_GetAttr(root, s_views);
    if (refs == NULL) goto done;
    if (refs == Py_None) {
        Py_SETREF(refs, PyObject_CallNoArgs(ViewRefs_type));
        if (refs == NULL) goto done;
        PyObject *sixteen = PyLong_FromLong(16);
        if (sixteen == NULL) goto done;
        int bad = PyObject_SetAttr(refs, s_limit, sixteen);
        Py_DECREF(sixteen);
        if (bad || PyObject_SetAttr(root, s_views, refs) < 0) goto done;
    }
    if (!PyList_Check(refs)) {
        PyErr_SetString(PyExc_TypeError, "_views is not a ViewRefs");
        goto done;
    }
    ref = PyWeakref_NewRef(view, NULL);
    if (ref == NULL || PyList_Append(refs, ref) < 0) goto done;
    limit = PyObject_GetAttr(refs, s_limit);
    if (limit == NULL) goto done;
    long long lim;
    if (!as_ll(limit, &lim) || PyList_GET_SIZE(refs) > lim) {
        PyObject *r = PyObject_CallMethodNoArgs(refs, s_prune);
        if (r == NULL) goto done;
        Py_DECREF(r);
    }
    rc = 0;
done:
    Py_DECREF(root);
    Py_XDECREF(refs);
    Py_XDECREF(ref);
    Py_XDECREF(limit);
    return rc;
}

/* The NumPy view a CPU tensor keeps in ``_array``; None for storage that holds no ndarray. */
static PyObject *array_view(PyObject *storage, PyObject *dtype, const long long *shape, const long long *stride,
                            Py_ssize_t ndim, long long offset, PyObject *shape_tuple) {
    PyObject *data = SLOT(storage, soff_data);
    if (data == NULL || Py_TYPE(data) != ndarray_type) return Py_NewRef(Py_None);
    PyObject *itemsize_obj = PyObject_GetAttr(dtype, s_itemsize);
    if (itemsize_obj == NULL) return NULL;
    long long size = PyLong_AsLongLong(itemsize_obj);
    Py_DECREF(itemsize_obj);
    if (size == -1 && PyErr_Occurred()) return NULL;
    long long bytes[MAXDIM];
    for (Py_ssize_t i = 0; i < ndim; i++) bytes[i] = stride[i] * size;
    // An empty view reads nothing; NumPy refuses an offset past the end of an empty buffer.
    long long start = (offset && numel_of(shape, ndim)) ? offset * size : 0;
    PyObject *np_dtype = PyObject_GetAttr(dtype, s_np);
    PyObject *strides = make_tuple(bytes, ndim);
    PyObject *start_obj = PyLong_FromLongLong(start);
    PyObject *result = NULL;
    if (np_dtype != NULL && strides != NULL && start_obj != NULL) {
        PyObject *args[] = {shape_tuple, np_dtype, data, start_obj, strides};
        result = PyObject_Vectorcall((PyObject *)ndarray_type, args, 5, NULL);
    }
    Py_XDECREF(np_dtype);
    Py_XDECREF(strides);
    Py_XDECREF(start_obj);
    return result;
}

/* make_view for C integer metadata: the view of ``base`` (an exact Tensor) as given. */
static PyObject *view_of(PyObject *base, const long long *shape, const long long *stride, Py_ssize_t ndim,
                         long long offset) {
    PyObject *storage = SLOT(base, off_storage), *dtype = SLOT(base, off_dtype);
    PyObject *shape_t = make_tuple(shape, ndim), *stride_t = make_tuple(stride, ndim);
    PyObject *offset_o = PyLong_FromLongLong(offset);
    PyObject *array = NULL, *t = NULL;
    if (shape_t == NULL || stride_t == NULL || offset_o == NULL) goto done;
    array = array_view(storage, dtype, shape, stride, ndim, offset, shape_t);
    if (array == NULL) goto done;
    t = Tensor_type->tp_alloc(Tensor_type, 0);
    if (t == NULL) goto done;
    set_slot(t, off_storage, storage);
    set_slot(t, off_shape, shape_t);
    set_slot(t, off_stride, stride_t);
    set_slot(t, off_offset, offset_o);
    set_slot(t, off_dtype, dtype);
    set_slot(t, off_device, SLOT(storage, soff_device));
    set_slot(t, off_contig, Py_None);
    set_slot(t, off_array, array);
    if (note_view(t, base) < 0) Py_CLEAR(t);
done:
    Py_XDECREF(shape_t);
    Py_XDECREF(stride_t);
    Py_XDECREF(offset_o);
    Py_XDECREF(array);
    return t;
}

static int plain_storage(PyObject *base) {
    PyObject *storage = SLOT(base, off_storage);
    return storage != NULL && Py_TYPE(storage) == Storage_type && SLOT(storage, soff_device) != NULL &&
           SLOT(base, off_dtype) != NULL;
}

/* make_view(base, shape, stride, offset): the Python function's work, or a call to it when the
 * metadata is not plain ints or the base is not an exact Tensor. */
static PyObject *fp_make_view(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (py_make_view == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ember.core._fastpath.init has not run");
        return NULL;
    }
    if (nargs != 4) return PyObject_Vectorcall(py_make_view, args, nargs, NULL);
    long long shape[MAXDIM], stride[MAXDIM], offset;
    Py_ssize_t n, k;
    if (Py_TYPE(args[0]) != Tensor_type || !plain_storage(args[0]) || !read_dims(args[1], shape, &n) ||
        !read_dims(args[2], stride, &k) || n != k || !as_ll(args[3], &offset))
        return PyObject_Vectorcall(py_make_view, args, nargs, NULL);
    return view_of(args[0], shape, stride, n, offset);
}

/* -- the view kernels: None when the call is not the common case --------------------------------- */

static int contiguous(const Meta *m) {
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

static int wrap_dim(long long dim, Py_ssize_t ndim, long long *out) {
    long long n = ndim > 0 ? ndim : 1;
    if (dim < -n || dim >= n) return 0;
    *out = dim < 0 ? dim + n : dim;
    return 1;
}

#define DECLINE Py_RETURN_NONE
#define TENSOR_META(obj, m) \
    Meta m;                 \
    if (!read_meta(obj, &m) || !plain_storage(obj)) DECLINE

/* view(self, size) for a contiguous tensor: sizes with at most one -1 that hold its elements. */
static PyObject *fp_view(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) DECLINE;
    TENSOR_META(args[0], m);
    long long shape[MAXDIM], stride[MAXDIM];
    Py_ssize_t n;
    if (!read_dims(args[1], shape, &n)) DECLINE;
    PyObject *cached = SLOT(args[0], off_contig);  // is_contiguous's cache
    if (cached == Py_False || (cached != Py_True && !contiguous(&m))) DECLINE;
    long long total = numel_of(m.shape, m.ndim), known = 1;
    Py_ssize_t infer = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (shape[i] == -1) {
            if (infer >= 0) DECLINE;
            infer = i;
        } else if (shape[i] < 0) {
            DECLINE;
        } else if (shape[i] != 0 && known > LLONG_MAX / shape[i]) {
            DECLINE;  // sizes past the C range: Python's error
        } else {
            known *= shape[i];
        }
    }
    if (infer >= 0) {
        if (known == 0 || total % known) DECLINE;
        shape[infer] = total / known;
    } else if (known != total) {
        DECLINE;
    }
    // Contiguous strides, a size-1 dimension counting as 1 (layout.contiguous_strides).
    long long running = 1;
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        stride[i] = running;
        running *= shape[i] > 1 ? shape[i] : 1;
    }
    if (cached != Py_True) set_slot(args[0], off_contig, Py_True);
    return view_of(args[0], shape, stride, n, m.offset);
}

/* transpose(self, dim0, dim1) */
static PyObject *fp_transpose(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) DECLINE;
    TENSOR_META(args[0], m);
    long long a, b, d0, d1;
    if (!as_ll(args[1], &a) || !as_ll(args[2], &b) || !wrap_dim(a, m.ndim, &d0) || !wrap_dim(b, m.ndim, &d1))
        DECLINE;
    if (m.ndim) {
        long long s = m.shape[d0], st = m.stride[d0];
        m.shape[d0] = m.shape[d1], m.stride[d0] = m.stride[d1];
        m.shape[d1] = s, m.stride[d1] = st;
    }
    return view_of(args[0], m.shape, m.stride, m.ndim, m.offset);
}

/* t(self) for a tensor of at most two dimensions */
static PyObject *fp_t(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 1) DECLINE;
    TENSOR_META(args[0], m);
    if (m.ndim > 2) DECLINE;
    if (m.ndim == 2) {
        long long s = m.shape[0], st = m.stride[0];
        m.shape[0] = m.shape[1], m.stride[0] = m.stride[1];
        m.shape[1] = s, m.stride[1] = st;
    }
    return view_of(args[0], m.shape, m.stride, m.ndim, m.offset);
}

/* unsqueeze(self, dim) */
static PyObject *fp_unsqueeze(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) DECLINE;
    TENSOR_META(args[0], m);
    long long dim, d;
    if (m.ndim >= MAXDIM || !as_ll(args[1], &dim) || !wrap_dim(dim, m.ndim + 1, &d)) DECLINE;
    long long inner = d < m.ndim ? m.stride[d] * m.shape[d] : 1;
    for (Py_ssize_t i = m.ndim; i > d; i--) m.shape[i] = m.shape[i - 1], m.stride[i] = m.stride[i - 1];
    m.shape[d] = 1, m.stride[d] = inner;
    return view_of(args[0], m.shape, m.stride, m.ndim + 1, m.offset);
}

/* Apply select(dim, index) to C metadata; 0 when the index is out of range. */
static int do_select(Meta *m, Py_ssize_t d, long long index) {
    long long size = m->shape[d];
    if (index < -size || index >= size) return 0;
    if (index < 0) index += size;
    m->offset += index * m->stride[d];
    for (Py_ssize_t i = d; i < m->ndim - 1; i++) m->shape[i] = m->shape[i + 1], m->stride[i] = m->stride[i + 1];
    m->ndim--;
    return 1;
}

/* Apply slice(dim, start, end, step) to C metadata (None bounds as has_start/has_end = 0). */
static void do_slice(Meta *m, Py_ssize_t d, int has_start, long long start, int has_end, long long end, long long step) {
    long long size = m->shape[d];
    if (!has_start) start = 0;
    if (!has_end) end = size;
    start = start < 0 ? (start + size > 0 ? start + size : 0) : (start < size ? start : size);
    end = end < 0 ? (end + size > 0 ? end + size : 0) : (end < size ? end : size);
    long long length = (end - start + step - 1) / step;  // floor division: the numerator is > -step
    if (end - start + step - 1 < 0) length = 0;
    m->shape[d] = length > 0 ? length : 0;
    m->offset += start * m->stride[d];
    m->stride[d] *= step;
}

/* select(self, dim, index) */
static PyObject *fp_select(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) DECLINE;
    TENSOR_META(args[0], m);
    long long dim, d, index;
    if (m.ndim == 0 || !as_ll(args[1], &dim) || !as_ll(args[2], &index) || !wrap_dim(dim, m.ndim, &d) ||
        !do_select(&m, d, index))
        DECLINE;
    return view_of(args[0], m.shape, m.stride, m.ndim, m.offset);
}

/* An optional int argument: 1 and *out for an int, 0 for None; -1 for anything else. */
static int optional_ll(PyObject *o, long long *out) {
    if (o == Py_None) return 0;
    return as_ll(o, out) ? 1 : -1;
}

/* slice(self, dim=0, start=None, end=None, step=1) */
static PyObject *fp_slice(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 5) DECLINE;
    TENSOR_META(args[0], m);
    long long dim = 0, d, start = 0, end = 0, step = 1;
    int has_start = 0, has_end = 0;
    if (nargs > 1 && !as_ll(args[1], &dim)) DECLINE;
    if (nargs > 2 && (has_start = optional_ll(args[2], &start)) < 0) DECLINE;
    if (nargs > 3 && (has_end = optional_ll(args[3], &end)) < 0) DECLINE;
    if (nargs > 4 && !as_ll(args[4], &step)) DECLINE;
    if (m.ndim == 0 || step <= 0 || step > MAXSTEP || !wrap_dim(dim, m.ndim, &d)) DECLINE;
    do_slice(&m, d, has_start, start, has_end, end, step);
    return view_of(args[0], m.shape, m.stride, m.ndim, m.offset);
}

/* -- the dispatcher's common case ---------------------------------------------------------------- */

static int flag(PyObject *name) {
    PyObject *v = PyObject_GetAttr(flags, name);
    if (v == NULL) return -1;
    int on = PyObject_IsTrue(v);
    Py_DECREF(v);
    return on;
}

static int requires_grad(PyObject *t) {
    PyObject *v = PyObject_GetAttr(t, s_requires_grad);
    if (v == NULL) return -1;
    int on = PyObject_IsTrue(v);
    Py_DECREF(v);
    return on;
}

/* dispatch._needs_grad: 1 when a tensor argument (or one in a list or tuple argument) requires grad. */
static int any_requires_grad(PyObject *const *items, Py_ssize_t n, int nested) {
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = items[i];
        if (PyObject_TypeCheck(a, Tensor_type)) {
            int on = requires_grad(a);
            if (on) return on;
        } else if (nested && (PyList_CheckExact(a) || PyTuple_CheckExact(a))) {
            Py_ssize_t m = PySequence_Fast_GET_SIZE(a);
            PyObject **inner = PySequence_Fast_ITEMS(a);
            for (Py_ssize_t j = 0; j < m; j++) {
                if (PyObject_TypeCheck(inner[j], Tensor_type)) {
                    int on = requires_grad(inner[j]);
                    if (on) return on;
                }
            }
        }
    }
    return 0;
}

/* dispatch._first_tensor: the first tensor argument, in a list or tuple argument or a keyword's
 * value, or NULL (borrowed). */
static PyObject *first_tensor(PyObject *args, PyObject *kwargs) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
        PyObject *a = PyTuple_GET_ITEM(args, i);
        if (PyObject_TypeCheck(a, Tensor_type)) return a;
        if (PyList_CheckExact(a) || PyTuple_CheckExact(a)) {
            for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(a); j++) {
                PyObject *b = PySequence_Fast_ITEMS(a)[j];
                if (PyObject_TypeCheck(b, Tensor_type)) return b;
            }
        }
    }
    if (kwargs != Py_None) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(kwargs, &pos, &key, &value))
            if (PyObject_TypeCheck(value, Tensor_type)) return value;
    }
    return NULL;
}

/* call(op, args, kwargs): run the op's kernel when no level above the backend has work to do (no
 * switched level or mode, no dispatching subclass, nothing requiring grad) and the device of the
 * first tensor argument has a kernel; else the MISS marker. */
static PyObject *fp_call(PyObject *self, PyObject *const *argv, Py_ssize_t nargs) {
    if (Tensor_type == NULL || nargs != 3 || !PyTuple_CheckExact(argv[1])) return Py_NewRef(MISS);
    PyObject *op = argv[0], *args = argv[1], *kwargs = argv[2];
    if (kwargs != Py_None && !PyDict_CheckExact(kwargs)) return Py_NewRef(MISS);
    int on = flag(s_slow);
    if (on) return on < 0 ? NULL : Py_NewRef(MISS);
    if ((on = any_requires_grad(&PyTuple_GET_ITEM(args, 0), PyTuple_GET_SIZE(args), 1))) {
        return on < 0 ? NULL : Py_NewRef(MISS);
    }
    if (kwargs != Py_None && PyDict_GET_SIZE(kwargs)) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(kwargs, &pos, &key, &value)) {
            if ((on = any_requires_grad(&value, 1, 0))) return on < 0 ? NULL : Py_NewRef(MISS);
        }
    }
    if ((on = flag(s_subclasses))) return on < 0 ? NULL : Py_NewRef(MISS);
    PyObject *first = first_tensor(args, kwargs);
    if (first == NULL) return Py_NewRef(MISS);  // a factory, or no tensor argument: the Python path
    // The first argument an exact Tensor: _below_autograd's shortcut; else redispatch_backend's choice,
    // the device of the first tensor argument (one without a kernel for it: its decomposition, in Python).
    PyObject *device = PyObject_GetAttr(first, s_device);
    if (device == NULL) return NULL;
    PyObject *device_type = PyObject_GetAttr(device, s_type);
    Py_DECREF(device);
    if (device_type == NULL) return NULL;
    PyObject *kernels = PyObject_GetAttr(op, s_kernels);
    if (kernels == NULL || !PyDict_CheckExact(kernels)) {
        Py_DECREF(device_type);
        Py_XDECREF(kernels);
        return kernels == NULL ? NULL : Py_NewRef(MISS);
    }
    PyObject *kernel = PyDict_GetItemWithError(kernels, device_type);  // borrowed
    Py_DECREF(device_type);
    if (kernel != NULL && PyObject_IsTrue(kernel)) {
        Py_INCREF(kernel);
    } else {
        if (PyErr_Occurred()) {
            Py_DECREF(kernels);
            return NULL;
        }
        kernel = PyObject_GetAttr(op, s_any);
        if (kernel == NULL) {
            Py_DECREF(kernels);
            return NULL;
        }
        if (kernel == Py_None) {
            Py_DECREF(kernel);
            Py_DECREF(kernels);
            return Py_NewRef(MISS);
        }
    }
    Py_DECREF(kernels);
    PyObject *result = PyObject_Call(kernel, args, kwargs == Py_None || !PyDict_GET_SIZE(kwargs) ? NULL : kwargs);
    Py_DECREF(kernel);
    return result;
}

/* Whether a call with this first tensor takes the dispatcher's fast path for a view method: an exact
 * Tensor, no switched level or mode, no dispatching subclass, no grad required. -1 on error. */
static int plain_call(PyObject *t) {
    if (Tensor_type == NULL || Py_TYPE(t) != Tensor_type) return 0;
    int on = flag(s_slow);
    if (on) return on < 0 ? -1 : 0;
    if ((on = flag(s_subclasses))) return on < 0 ? -1 : 0;
    if ((on = requires_grad(t))) return on < 0 ? -1 : 0;
    return 1;
}

/* getitem(self, index): ``self[index]`` for ints, slices of ints and None, as one view, when the call
 * would take the fast path anyway; None otherwise (the Python indexing runs, raising its errors). */
static PyObject *fp_getitem(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) DECLINE;
    int plain = plain_call(args[0]);
    if (plain <= 0) {
        if (plain < 0) return NULL;
        DECLINE;
    }
    TENSOR_META(args[0], m);
    PyObject *index = args[1];
    PyObject *const *items = &index;
    Py_ssize_t count = 1;
    if (PyTuple_CheckExact(index)) {
        items = &PyTuple_GET_ITEM(index, 0);
        count = PyTuple_GET_SIZE(index);
    }
    Py_ssize_t consumed = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (items[i] != Py_None) consumed++;
    }
    if (consumed > m.ndim) DECLINE;
    Py_ssize_t dim = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = items[i];
        long long v;
        if (item == Py_None) {
            if (m.ndim >= MAXDIM) DECLINE;
            // unsqueeze(dim): the stride of a new dimension in front of dim.
            long long inner = dim < m.ndim ? m.stride[dim] * m.shape[dim] : 1;
            for (Py_ssize_t j = m.ndim; j > dim; j--) m.shape[j] = m.shape[j - 1], m.stride[j] = m.stride[j - 1];
            m.shape[dim] = 1, m.stride[dim] = inner;
            m.ndim++;
            dim++;
        } else if (PySlice_Check(item)) {
            PySliceObject *s = (PySliceObject *)item;
            long long start = 0, stop = 0, step = 1;
            int has_start = optional_ll(s->start, &start), has_stop = optional_ll(s->stop, &stop);
            int has_step = optional_ll(s->step, &step);
            if (has_start < 0 || has_stop < 0 || has_step < 0 || step <= 0 || step > MAXSTEP) DECLINE;
            if (has_start || has_stop || has_step) do_slice(&m, dim, has_start, start, has_stop, stop, step);
            dim++;
        } else if (as_ll(item, &v)) {
            if (!do_select(&m, dim, v)) DECLINE;
        } else {
            DECLINE;
        }
    }
    return view_of(args[0], m.shape, m.stride, m.ndim, m.offset);
}

/* view_method(self, sizes): ``self.view(*sizes)`` for int sizes (or one tuple or list of them) when the
 * call would take the fast path; None otherwise. */
static PyObject *fp_view_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyTuple_CheckExact(args[1])) DECLINE;
    int plain = plain_call(args[0]);
    if (plain <= 0) {
        if (plain < 0) return NULL;
        DECLINE;
    }
    PyObject *sizes = args[1];
    if (PyTuple_GET_SIZE(sizes) == 1 && (PyTuple_CheckExact(PyTuple_GET_ITEM(sizes, 0)) ||
                                          PyList_CheckExact(PyTuple_GET_ITEM(sizes, 0))))
        sizes = PyTuple_GET_ITEM(sizes, 0);
    if (PySequence_Fast_GET_SIZE(sizes) == 0) DECLINE;  // view(): the Python path's TypeError
    PyObject *call[] = {args[0], sizes};
    return fp_view(self, call, 2);
}

/* method(kind, self, *args): a view method (``t``, ``transpose``, ``unsqueeze``) on the fast path. */
static PyObject *fp_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 2) DECLINE;
    int plain = plain_call(args[1]);
    if (plain <= 0) {
        if (plain < 0) return NULL;
        DECLINE;
    }
    switch (PyLong_AsLong(args[0])) {
        case 0:
            return fp_t(self, args + 1, nargs - 1);
        case 1:
            return fp_transpose(self, args + 1, nargs - 1);
        case 2:
            return fp_unsqueeze(self, args + 1, nargs - 1);
        default:
            if (PyErr_Occurred()) return NULL;
            DECLINE;
    }
}

/* -- tensors from arrays --------------------------------------------------------------------------- */

/* wrap(array, nbytes, device, shape, stride, dtype): a Tensor owning ``array`` as its storage
 * (tensor.from_array's last step: ``_new(Tensor, Storage(array, nbytes, device), ...)``). */
static PyObject *fp_wrap(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6 || Tensor_type == NULL) {
        PyErr_SetString(PyExc_TypeError, "wrap takes 6 arguments, after init");
        return NULL;
    }
    PyObject *storage = Storage_type->tp_alloc(Storage_type, 0);
    if (storage == NULL) return NULL;
    set_slot(storage, soff_data, args[0]);
    set_slot(storage, soff_nbytes, args[1]);
    set_slot(storage, soff_device, args[2]);
    set_slot(storage, soff_version, zero);
    set_slot(storage, soff_handle, Py_None);
    PyObject *t = Tensor_type->tp_alloc(Tensor_type, 0);
    if (t != NULL) {
        set_slot(t, off_storage, storage);
        set_slot(t, off_shape, args[3]);
        set_slot(t, off_stride, args[4]);
        set_slot(t, off_offset, zero);
        set_slot(t, off_dtype, args[5]);
        set_slot(t, off_device, args[2]);
        set_slot(t, off_array, args[0]);
        set_slot(t, off_contig, Py_None);
    }
    Py_DECREF(storage);
    return t;
}


/* -- pointwise ops: pointwise._fast_path ---------------------------------------------------------- */

static PyObject *fast_dtypes, *exact_dtypes, *bool_dtype, *quiet_var, *quiet_value, *py_from_array, *cpu_device;


static PyObject *py_init_arrays(PyObject *self, PyObject *args) {
    if (!PyArg_ParseTuple(args, "OO", &py_from_array, &cpu_device)) return NULL;
    Py_INCREF(py_from_array);
    Py_INCREF(cpu_device);
    Py_RETURN_NONE;
}

static PyObject *py_init_pointwise(PyObject *self, PyObject *args) {
    if (!PyArg_ParseTuple(args, "O!O!OOO", &PyTuple_Type, &fast_dtypes, &PyTuple_Type, &exact_dtypes, &bool_dtype,
                          &quiet_var, &quiet_value))
        return NULL;
    PyObject *keep[] = {fast_dtypes, exact_dtypes, bool_dtype, quiet_var, quiet_value};
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) Py_INCREF(keep[i]);
    Py_RETURN_NONE;
}

static int in_tuple(PyObject *item, PyObject *tuple) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++)
        if (PyTuple_GET_ITEM(tuple, i) == item) return 1;
    return 0;
}

/* Tensor.is_contiguous() for an exact Tensor with int metadata, caching it as the method does;
 * -1 when the metadata is not plain ints. */
static int is_contiguous_cached(PyObject *t, const Meta *m) {
    PyObject *cached = SLOT(t, off_contig);
    if (cached == Py_True) return 1;
    if (cached == Py_False) return 0;
    int c = contiguous(m);
    set_slot(t, off_contig, c ? Py_True : Py_False);
    return c;
}

/* Whether ``m``'s strides are the row-major ones of its sizes (layout.int_contiguous_strides). */
static int row_major(const Meta *m) {
    long long running = 1;
    for (Py_ssize_t i = m->ndim - 1; i >= 0; i--) {
        if (m->stride[i] != running) return 0;
        running *= m->shape[i] > 1 ? m->shape[i] : 1;
    }
    return 1;
}

/* tensor.from_array(result, dtype) for a C-contiguous ndarray of that dtype; the Python function for
 * anything else. */
static PyObject *own_array(PyObject *result, PyObject *dtype) {
    PyObject *np_dtype = NULL, *want = NULL, *flags_obj = NULL, *c = NULL, *shape = NULL, *nbytes = NULL;
    PyObject *stride_t = NULL, *out = NULL;
    int plain = 0;
    if (Py_TYPE(result) == ndarray_type) {
        np_dtype = PyObject_GetAttr(result, s_dtype);
        want = PyObject_GetAttr(dtype, s_np);
        if (np_dtype == NULL || want == NULL) goto done;
        if (np_dtype == want) {
            flags_obj = PyObject_GetAttr(result, s_flags);
            if (flags_obj == NULL) goto done;
            c = PyObject_GetAttr(flags_obj, s_c_contiguous);
            if (c == NULL) goto done;
            plain = c == Py_True;
        }
    }
    if (!plain) {
        PyObject *call[] = {result, dtype};
        out = PyObject_Vectorcall(py_from_array, call, 2, NULL);
        goto done;
    }
    shape = PyObject_GetAttr(result, s_shape);
    nbytes = PyObject_GetAttr(result, s_nbytes);
    if (shape == NULL || nbytes == NULL) goto done;
    long long sizes[MAXDIM], stride[MAXDIM];
    Py_ssize_t n;
    if (!read_dims(shape, sizes, &n)) {
        PyObject *call[] = {result, dtype};
        out = PyObject_Vectorcall(py_from_array, call, 2, NULL);
        goto done;
    }
    long long running = 1;
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        stride[i] = running;
        running *= sizes[i] > 1 ? sizes[i] : 1;
    }
    stride_t = make_tuple(stride, n);
    if (stride_t == NULL) goto done;
    PyObject *call[] = {result, nbytes, cpu_device, shape, stride_t, dtype};
    out = fp_wrap(NULL, call, 6);
done:
    Py_XDECREF(np_dtype);
    Py_XDECREF(want);
    Py_XDECREF(flags_obj);
    Py_XDECREF(c);
    Py_XDECREF(shape);
    Py_XDECREF(nbytes);
    Py_XDECREF(stride_t);
    return out;
}

/* from_array(array, dtype=None): tensor.from_array, in C for a C-contiguous ndarray of the given dtype. */
static PyObject *fp_from_array(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (py_from_array == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ember.core._fastpath.init_arrays has not run");
        return NULL;
    }
    if (nargs != 2 || args[1] == Py_None) return PyObject_Vectorcall(py_from_array, args, nargs, NULL);
    return own_array(args[0], args[1]);
}

/* pointwise(compute, args, bool_result, params, exact): pointwise._fast_path, the same checks and
 * the same call of ``compute``; None when the call does not qualify. */
static PyObject *fp_pointwise(PyObject *self, PyObject *const *argv, Py_ssize_t nargs) {
    if (nargs != 5 || fast_dtypes == NULL || py_from_array == NULL || !PyTuple_CheckExact(argv[1]) ||
        !PyDict_CheckExact(argv[3]))
        DECLINE;
    PyObject *compute = argv[0], *args = argv[1], *params = argv[3];
    int bool_result = PyObject_IsTrue(argv[2]), exact = PyObject_IsTrue(argv[4]);
    Py_ssize_t count = PyTuple_GET_SIZE(args);
    if (bool_result < 0 || exact < 0) return NULL;
    if (count < 1 || count > 2) DECLINE;
    PyObject *a = PyTuple_GET_ITEM(args, 0), *b = count == 2 ? PyTuple_GET_ITEM(args, 1) : NULL;
    Meta ma, mb;
    if (!read_meta(a, &ma) || SLOT(a, off_array) == NULL || SLOT(a, off_array) == Py_None ||
        !is_contiguous_cached(a, &ma))
        DECLINE;
    PyObject *dtype = SLOT(a, off_dtype);
    if (dtype == NULL) DECLINE;
    // Integer operands only with a tensor of their dtype: a Python number could promote them.
    if (!in_tuple(dtype, fast_dtypes) && (!exact || !in_tuple(dtype, exact_dtypes) || (b && Py_TYPE(b) != Tensor_type)))
        DECLINE;
    PyObject *operand = NULL;
    if (b != NULL) {
        if (Py_TYPE(b) == Tensor_type) {
            if (!read_meta(b, &mb) || SLOT(b, off_dtype) != dtype || SLOT(b, off_array) == NULL ||
                SLOT(b, off_array) == Py_None || !is_contiguous_cached(b, &mb))
                DECLINE;
            int same = ma.ndim == mb.ndim;
            for (Py_ssize_t i = 0; same && i < ma.ndim; i++) same = ma.shape[i] == mb.shape[i];
            if (!same && (!row_major(&ma) || !row_major(&mb))) DECLINE;
            operand = SLOT(b, off_array);
        } else if (PyFloat_CheckExact(b) || PyLong_CheckExact(b)) {
            operand = b;
        } else {
            DECLINE;
        }
    }
    PyObject *token = PyContextVar_Set(quiet_var, quiet_value);  // pointwise's silence()
    if (token == NULL) return NULL;
    PyObject *call[] = {SLOT(a, off_array), operand};
    PyObject *result = PyObject_VectorcallDict(compute, call, b ? 2 : 1, PyDict_GET_SIZE(params) ? params : NULL);
    if (result == NULL && b != NULL && PyErr_ExceptionMatches(PyExc_ValueError)) {
        PyErr_Clear();  // shapes that do not broadcast: the plan raises PyTorch's error
        result = Py_NewRef(Py_None);
    }
    PyObject *type, *value, *traceback;  // an error of compute's, kept across the reset
    PyErr_Fetch(&type, &value, &traceback);
    int reset = PyContextVar_Reset(quiet_var, token);
    Py_DECREF(token);
    if (reset < 0) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        Py_XDECREF(result);
        return NULL;
    }
    PyErr_Restore(type, value, traceback);
    if (result == NULL || result == Py_None) return result;
    PyObject *out = own_array(result, bool_result ? bool_dtype : dtype);
    Py_DECREF(result);
    return out;
}


/* same_kind_arrays(tensors, max_ndim): joining._same_kind_arrays, the arrays of exact CPU Tensors of
 * one dtype and rank (1 to max_ndim), else None. */
static PyObject *fp_same_kind_arrays(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long long max_ndim;
    if (Tensor_type == NULL || nargs != 2 || !as_ll(args[1], &max_ndim)) DECLINE;
    PyObject *tensors = args[0];
    if (!PyList_CheckExact(tensors) && !PyTuple_CheckExact(tensors)) DECLINE;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(tensors);
    PyObject **items = PySequence_Fast_ITEMS(tensors);
    if (n == 0 || Py_TYPE(items[0]) != Tensor_type) DECLINE;
    PyObject *dtype = SLOT(items[0], off_dtype), *shape = SLOT(items[0], off_shape);
    if (dtype == NULL || shape == NULL || !PyTuple_Check(shape)) DECLINE;
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    if (!(0 < ndim && ndim <= max_ndim)) DECLINE;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = items[i], *s;
        if (Py_TYPE(t) != Tensor_type || SLOT(t, off_dtype) != dtype || (s = SLOT(t, off_shape)) == NULL ||
            !PyTuple_Check(s) || PyTuple_GET_SIZE(s) != ndim || SLOT(t, off_array) == NULL ||
            SLOT(t, off_array) == Py_None)
            DECLINE;
    }
    PyObject *arrays = PyList_New(n);
    if (arrays == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) PyList_SET_ITEM(arrays, i, Py_NewRef(SLOT(items[i], off_array)));
    return arrays;
}

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
    {"init_arrays", py_init_arrays, METH_VARARGS, "init_arrays(from_array, cpu): what from_array needs"},
    {"from_array", (PyCFunction)(void (*)(void))fp_from_array, METH_FASTCALL, "tensor.from_array"},
    {"init_pointwise", py_init_pointwise, METH_VARARGS, "the dtypes and NumPy objects pointwise needs"},
    {"pointwise", (PyCFunction)(void (*)(void))fp_pointwise, METH_FASTCALL, "pointwise._fast_path, else None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastpath", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fastpath(void) {
    const char *names[] = {"data", "itemsize", "np", "_base", "_views", "limit", "prune",
                           "requires_grad", "type", "_kernels", "_any", "slow", "subclasses", "nbytes"};
    PyObject **slots[] = {&s_data, &s_itemsize, &s_np, &s_base, &s_views, &s_limit, &s_prune,
                          &s_requires_grad, &s_type, &s_kernels, &s_any, &s_slow, &s_subclasses, &s_nbytes};
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
