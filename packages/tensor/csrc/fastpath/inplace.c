/* In-place addition, ``p.add_(g, alpha=a)``: an optimizer's update. */
#include "fastpath.h"

/* -- in-place addition: ``p.add_(g, alpha=a)``, an optimizer's update ------------------------------ */

/* The element loops. Each product is rounded to the element type before the sum, as NumPy's
 * ``np.add(p, np.multiply(g, alpha), out=p)`` rounds it (the build turns off FMA contraction), so the
 * bits are those of the Python path on every machine. */
static void axpy_float(float *p, const float *g, float alpha, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        float scaled = alpha * g[i];
        p[i] = p[i] + scaled;
    }
}

static void axpy_double(double *p, const double *g, double alpha, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        double scaled = alpha * g[i];
        p[i] = p[i] + scaled;
    }
}

static void add_float(float *p, const float *g, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) p[i] = p[i] + g[i];
}

static void add_double(double *p, const double *g, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) p[i] = p[i] + g[i];
}

/* The alpha of a call: 1 and *out for an exact float, or an exact int that a double holds exactly;
 * 0 for anything else (the Python kernel then decides, with its checks and errors). */
static int read_alpha(PyObject *kwargs, double *out, int *given) {
    *given = 0;
    *out = 1.0;
    if (kwargs == NULL || PyDict_GET_SIZE(kwargs) == 0) return 1;
    if (PyDict_GET_SIZE(kwargs) != 1) return 0;
    PyObject *alpha = PyDict_GetItemWithError(kwargs, s_alpha);  // borrowed
    if (alpha == NULL) return 0;
    if (PyFloat_CheckExact(alpha)) {
        *out = PyFloat_AS_DOUBLE(alpha);
    } else {
        long long v;
        if (!as_ll(alpha, &v) || v > (1LL << 53) || v < -(1LL << 53)) return 0;
        *out = (double)v;
    }
    *given = *out != 1.0;
    return 1;
}

/* A C-contiguous buffer of a tensor's array (writable for the target); 0 (no error set) when NumPy
 * cannot give one. */
static int contiguous_buffer(PyObject *t, Py_buffer *view, int writable) {
    PyObject *array = SLOT(t, off_array);
    if (array == NULL || Py_TYPE(array) != ndarray_type) return 0;
    if (PyObject_GetBuffer(array, view, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* The kernel bound to (fallback, float32, float64): the common case of ``add_`` (two exact
 * contiguous tensors of one float dtype and shape, the operand in other memory or the target
 * itself, ``alpha`` a number) in C; anything else is ``fallback(*args, **kwargs)``. */
static PyObject *fp_scaled_add(PyObject *bound, PyObject *args, PyObject *kwargs) {
    PyObject *fallback = PyTuple_GET_ITEM(bound, 0), *f32 = PyTuple_GET_ITEM(bound, 1), *f64 = PyTuple_GET_ITEM(bound, 2);
    double alpha;
    int scaled;
    if (PyTuple_GET_SIZE(args) != 2 || !read_alpha(kwargs, &alpha, &scaled)) {
        if (PyErr_Occurred()) return NULL;
        return PyObject_Call(fallback, args, kwargs);
    }
    PyObject *a = PyTuple_GET_ITEM(args, 0), *b = PyTuple_GET_ITEM(args, 1);
    Meta ma, mb;
    if (!read_meta(a, &ma) || !read_meta(b, &mb) || ma.ndim != mb.ndim) return PyObject_Call(fallback, args, kwargs);
    for (Py_ssize_t i = 0; i < ma.ndim; i++)
        if (ma.shape[i] != mb.shape[i]) return PyObject_Call(fallback, args, kwargs);
    PyObject *dtype = SLOT(a, off_dtype), *storage = SLOT(a, off_storage);
    if ((dtype != f32 && dtype != f64) || SLOT(b, off_dtype) != dtype || storage == NULL ||
        Py_TYPE(storage) != Storage_type || (SLOT(b, off_storage) == storage && a != b) ||
        !is_contiguous_cached(a, &ma) || !is_contiguous_cached(b, &mb))
        return PyObject_Call(fallback, args, kwargs);
    PyObject *version = SLOT(storage, soff_version);
    long long count;
    if (version == NULL || !as_ll(version, &count) || count == LLONG_MAX) return PyObject_Call(fallback, args, kwargs);
    Py_buffer pa, pb;
    if (!contiguous_buffer(a, &pa, 1)) return PyObject_Call(fallback, args, kwargs);
    if (!contiguous_buffer(b, &pb, 0)) {
        PyBuffer_Release(&pa);
        return PyObject_Call(fallback, args, kwargs);
    }
    if (dtype == f32) {
        Py_ssize_t n = pa.len / (Py_ssize_t)sizeof(float);
        if (scaled)
            axpy_float((float *)pa.buf, (const float *)pb.buf, (float)alpha, n);
        else
            add_float((float *)pa.buf, (const float *)pb.buf, n);
    } else {
        Py_ssize_t n = pa.len / (Py_ssize_t)sizeof(double);
        if (scaled)
            axpy_double((double *)pa.buf, (const double *)pb.buf, alpha, n);
        else
            add_double((double *)pa.buf, (const double *)pb.buf, n);
    }
    PyBuffer_Release(&pa);
    PyBuffer_Release(&pb);
    PyObject *next = PyLong_FromLongLong(count + 1);  // the in-place write's version bump
    if (next == NULL) return NULL;
    Py_XSETREF(SLOT(storage, soff_version), next);
    return Py_NewRef(a);
}

static PyMethodDef scaled_add_def = {"add_", (PyCFunction)(void (*)(void))fp_scaled_add, METH_VARARGS | METH_KEYWORDS,
                                     "add_($self, /, self, other, *, alpha=1)\n--\n\n"
                                     "add_'s CPU kernel: the common case in C, else the Python kernel"};

/* scaled_add(fallback, float32, float64): the ``add_`` kernel above, bound to its fallback. */
PyObject *py_scaled_add(PyObject *self, PyObject *args) {
    PyObject *fallback, *f32, *f64;
    if (!PyArg_ParseTuple(args, "OOO", &fallback, &f32, &f64)) return NULL;
    if (Tensor_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ember.core._fastpath.init has not run");
        return NULL;
    }
    PyObject *bound = PyTuple_Pack(3, fallback, f32, f64);
    if (bound == NULL) return NULL;
    PyObject *kernel = PyCFunction_New(&scaled_add_def, bound);
    Py_DECREF(bound);
    return kernel;
}
