/* The view kernels and basic indexing as one view: ember.core.tensor.make_view and the view ops' common cases. */
#include "fastpath.h"

/* -- making a view: ember.core.tensor.make_view ------------------------------------------------- */
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
PyObject *view_of(PyObject *base, const long long *shape, const long long *stride, Py_ssize_t ndim,
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

/* make_view(base, shape, stride, offset): the Python function's work, or a call to it when the
 * metadata is not plain ints or the base is not an exact Tensor. */
PyObject *fp_make_view(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
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

PyObject *fp_view(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
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
PyObject *fp_transpose(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
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
PyObject *fp_t(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
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
PyObject *fp_unsqueeze(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
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
PyObject *fp_select(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) DECLINE;
    TENSOR_META(args[0], m);
    long long dim, d, index;
    if (m.ndim == 0 || !as_ll(args[1], &dim) || !as_ll(args[2], &index) || !wrap_dim(dim, m.ndim, &d) ||
        !do_select(&m, d, index))
        DECLINE;
    return view_of(args[0], m.shape, m.stride, m.ndim, m.offset);
}

/* An optional int argument: 1 and *out for an int, 0 for None; -1 for anything else. */
/* slice(self, dim=0, start=None, end=None, step=1) */
PyObject *fp_slice(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
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

/* getitem(self, index): ``self[index]`` for ints, slices of ints and None, as one view, when the call
 * would take the fast path anyway; None otherwise (the Python indexing runs, raising its errors). */
PyObject *fp_getitem(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
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
PyObject *fp_view_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
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
PyObject *fp_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
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
