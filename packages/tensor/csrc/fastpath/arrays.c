/* Tensors wrapping NumPy arrays (tensor.from_array) and the arrays of a list of tensors (cat, stack). */
#include "fastpath.h"

/* -- tensors from arrays --------------------------------------------------------------------------- */

/* wrap(array, nbytes, device, shape, stride, dtype): a Tensor owning ``array`` as its storage
 * (tensor.from_array's last step: ``_new(Tensor, Storage(array, nbytes, device), ...)``). */
PyObject *fp_wrap(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
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

/* init_arrays(from_array, cpu): what from_array needs. */
PyObject *py_init_arrays(PyObject *self, PyObject *args) {
    if (!PyArg_ParseTuple(args, "OO", &py_from_array, &cpu_device)) return NULL;
    Py_INCREF(py_from_array);
    Py_INCREF(cpu_device);
    Py_RETURN_NONE;
}

/* tensor.from_array(result, dtype) for a C-contiguous ndarray of that dtype; the Python function for
 * anything else. */
PyObject *own_array(PyObject *result, PyObject *dtype) {
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
PyObject *fp_from_array(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (py_from_array == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ember.core._fastpath.init_arrays has not run");
        return NULL;
    }
    if (nargs != 2 || args[1] == Py_None) return PyObject_Vectorcall(py_from_array, args, nargs, NULL);
    return own_array(args[0], args[1]);
}

/* pointwise(compute, args, bool_result, params, exact): pointwise._fast_path, the same checks and
 * the same call of ``compute``; None when the call does not qualify. */

/* same_kind_arrays(tensors, max_ndim): joining._same_kind_arrays, the arrays of exact CPU Tensors of
 * one dtype and rank (1 to max_ndim), else None. */
PyObject *fp_same_kind_arrays(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
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

/* A new C-contiguous ndarray of ``shape`` and the element type of ``dtype`` (an Ember dtype), with its
 * buffer acquired writable in ``view`` (the caller releases it); NULL with an error set on failure. */
PyObject *fresh_array(const long long *shape, Py_ssize_t n, PyObject *dtype, Py_buffer *view) {
    PyObject *shape_t = make_tuple(shape, n), *np_dtype = PyObject_GetAttr(dtype, s_np), *result = NULL;
    if (shape_t != NULL && np_dtype != NULL) {
        PyObject *call[] = {shape_t, np_dtype};
        result = PyObject_Vectorcall((PyObject *)ndarray_type, call, 2, NULL);
    }
    Py_XDECREF(shape_t);
    Py_XDECREF(np_dtype);
    if (result != NULL && PyObject_GetBuffer(result, view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) Py_CLEAR(result);
    return result;
}

/* Whether instances of ``type`` keep their data where a Tensor does and answer ``data_ptr()`` as Tensor
 * does: Tensor itself, or a subclass (``nn.Parameter``) that overrides none of ``data_ptr`` and the slots
 * read here. The last type found so is remembered, and held (a step passes many tensors of one or two
 * types). */
static int reads_like_tensor(PyTypeObject *type) {
    static PyTypeObject *known = NULL;
    if (type == Tensor_type || type == known) return 1;
    if (!PyType_IsSubtype(type, Tensor_type)) return 0;
    static const char *names[] = {"data_ptr", "_storage", "_offset", "dtype"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        PyObject *mine = PyObject_GetAttrString((PyObject *)type, names[i]);
        PyObject *base = PyObject_GetAttrString((PyObject *)Tensor_type, names[i]);
        int same = mine != NULL && mine == base;
        Py_XDECREF(mine);
        Py_XDECREF(base);
        if (!same) {
            PyErr_Clear();
            return 0;
        }
    }
    Py_INCREF(type);  // held, so that no other type can take its address
    Py_XSETREF(known, type);
    return 1;
}

/* fill_data_ptrs(out, tensors): the data pointer of each tensor (``Tensor.data_ptr()``) written into
 * ``out``, a writable buffer of one pointer per tensor (a ctypes ``c_void_p`` array): what a compiled
 * kernel's call passes. True when done; False, with ``out`` partly written, when a tensor is not an exact
 * CPU Tensor on a plain storage holding an ndarray (the caller then asks each tensor). */
PyObject *fp_fill_data_ptrs(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || Tensor_type == NULL || (!PyList_CheckExact(args[1]) && !PyTuple_CheckExact(args[1])))
        Py_RETURN_FALSE;
    Py_buffer out;
    if (PyObject_GetBuffer(args[0], &out, PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(args[1]);
    PyObject **items = PySequence_Fast_ITEMS(args[1]);
    int done = out.len == n * (Py_ssize_t)sizeof(void *);
    for (Py_ssize_t i = 0; done && i < n; i++) {
        PyObject *t = items[i];
        long long offset, itemsize;
        if (!reads_like_tensor(Py_TYPE(t)) || !plain_storage(t) || !as_ll(SLOT(t, off_offset), &offset)) {
            done = 0;
            break;
        }
        PyObject *storage = SLOT(t, off_storage), *data = SLOT(storage, soff_data);
        PyObject *size = PyObject_GetAttr(SLOT(t, off_dtype), s_itemsize);
        if (size == NULL || !as_ll(size, &itemsize) || data == NULL || Py_TYPE(data) != ndarray_type) {
            Py_XDECREF(size);
            PyErr_Clear();
            done = 0;
            break;
        }
        Py_DECREF(size);
        long long nbytes;
        if (!as_ll(SLOT(storage, soff_nbytes), &nbytes)) {
            done = 0;
            break;
        }
        char *base = NULL;
        if (nbytes) {  // Storage.data_ptr: 0 for an empty storage
            Py_buffer view;
            if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
                PyErr_Clear();
                done = 0;
                break;
            }
            base = (char *)view.buf;
            PyBuffer_Release(&view);
        }
        ((void **)out.buf)[i] = base ? base + offset * itemsize : NULL;
    }
    PyBuffer_Release(&out);
    return PyBool_FromLong(done);
}
