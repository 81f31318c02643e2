/* Addition in C: ``p.add_(g, alpha=a)``, an optimizer's update, and ``x + b`` of two float tensors of one
 * shape or with a bias along the trailing dimensions. */
#include "fastpath.h"


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
PyObject *py_scaled_add(PyObject *self, PyObject *args) { return bind_kernel(&scaled_add_def, args); }

/* -- ``x + b``: add.Tensor ------------------------------------------------------------------------- */

/* out = x + b, with b repeated along x's leading dimensions (``repeat`` copies of ``inner`` elements). */
#define BIAS_ADD(T, name)                                                                      \
    static void name(const T *x, const T *b, T *out, long long repeat, long long inner) {     \
        for (long long r = 0; r < repeat; r++) {                                              \
            const T *row = x + r * inner;                                                     \
            T *o = out + r * inner;                                                           \
            for (long long i = 0; i < inner; i++) o[i] = row[i] + b[i];                       \
        }                                                                                     \
    }

BIAS_ADD(float, bias_add_float)
BIAS_ADD(double, bias_add_double)

/* Whether ``small``'s sizes are the trailing sizes of ``big`` (so it broadcasts by repetition). */
static int trailing(const Meta *big, const Meta *small) {
    if (small->ndim > big->ndim) return 0;
    for (Py_ssize_t i = 0; i < small->ndim; i++)
        if (small->shape[small->ndim - 1 - i] != big->shape[big->ndim - 1 - i]) return 0;
    return 1;
}

/* The kernel bound to (fallback, float32, float64): ``add.Tensor(a, b)`` (alpha 1) for two exact
 * contiguous tensors of one float dtype, one's sizes the trailing sizes of the other's. Addition
 * commutes exactly, so which operand repeats does not change a bit. */
static PyObject *fp_add(PyObject *bound, PyObject *args, PyObject *kwargs) {
    PyObject *fallback = PyTuple_GET_ITEM(bound, 0), *f32 = PyTuple_GET_ITEM(bound, 1), *f64 = PyTuple_GET_ITEM(bound, 2);
    double alpha;
    int scaled;
    if (PyTuple_GET_SIZE(args) != 2 || !read_alpha(kwargs, &alpha, &scaled) || scaled) {
        if (PyErr_Occurred()) return NULL;
        return PyObject_Call(fallback, args, kwargs);
    }
    PyObject *a = PyTuple_GET_ITEM(args, 0), *b = PyTuple_GET_ITEM(args, 1);
    Meta ma, mb;
    if (!read_meta(a, &ma) || !read_meta(b, &mb) || !plain_storage(a) || !plain_storage(b))
        return PyObject_Call(fallback, args, kwargs);
    PyObject *dtype = SLOT(a, off_dtype);
    if ((dtype != f32 && dtype != f64) || SLOT(b, off_dtype) != dtype || !is_contiguous_cached(a, &ma) ||
        !is_contiguous_cached(b, &mb))
        return PyObject_Call(fallback, args, kwargs);
    int same = ma.ndim == mb.ndim;
    for (Py_ssize_t i = 0; same && i < ma.ndim; i++) same = ma.shape[i] == mb.shape[i];
    // Operands of other shapes: a row-major result only when both are laid out row-major (as the
    // pointwise plan decides); other layouts take the Python kernel.
    if (!same && (!row_major(&ma) || !row_major(&mb))) return PyObject_Call(fallback, args, kwargs);
    PyObject *big = a, *small = b;
    const Meta *mbig = &ma, *msmall = &mb;
    if (!trailing(&ma, &mb)) {
        if (!trailing(&mb, &ma)) return PyObject_Call(fallback, args, kwargs);
        big = b, small = a, mbig = &mb, msmall = &ma;
    }
    long long total = numel_of(mbig->shape, mbig->ndim), inner = numel_of(msmall->shape, msmall->ndim);
    long long repeat = inner ? total / inner : 0;
    Py_buffer pbig, psmall;
    if (!contiguous_buffer(big, &pbig, 0)) return PyObject_Call(fallback, args, kwargs);
    if (!contiguous_buffer(small, &psmall, 0)) {
        PyBuffer_Release(&pbig);
        return PyObject_Call(fallback, args, kwargs);
    }
    Py_buffer pout;
    PyObject *result = fresh_array(mbig->shape, mbig->ndim, dtype, &pout), *out = NULL;
    if (result != NULL) {
        if (dtype == f32)
            bias_add_float((const float *)pbig.buf, (const float *)psmall.buf, (float *)pout.buf, repeat, inner);
        else
            bias_add_double((const double *)pbig.buf, (const double *)psmall.buf, (double *)pout.buf, repeat, inner);
        PyBuffer_Release(&pout);
        out = own_array(result, dtype);
        Py_DECREF(result);
    }
    PyBuffer_Release(&pbig);
    PyBuffer_Release(&psmall);
    return out;
}

static PyMethodDef add_def = {"add", (PyCFunction)(void (*)(void))fp_add, METH_VARARGS | METH_KEYWORDS,
                              "add($self, /, self, other, *, alpha=1)\n--\n\n"
                              "add.Tensor's CPU kernel: the common case in C, else the Python kernel"};

/* tensor_add(fallback, float32, float64): the kernel above, bound to its fallback. */
PyObject *py_tensor_add(PyObject *self, PyObject *args) { return bind_kernel(&add_def, args); }
