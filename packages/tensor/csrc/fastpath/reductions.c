/* Sums over one dimension of a contiguous float tensor that is not its last (a bias gradient, a
 * mean over the batch): ``x.sum(0)``.
 *
 * For such a dimension NumPy's ``np.add.reduce`` adds the slices in order, each element of the result
 * accumulating down its own column, in the element type. The loop below does the same additions in the
 * same order, so its bits are those of the Python kernel; a last dimension (NumPy sums it pairwise) and
 * anything else go to the Python kernel.
 */
#include "fastpath.h"

#define COLUMN_SUM(T, name)                                                                         \
    static void name(const T *x, T *out, long long outer, long long reduced, long long inner) {    \
        for (long long o = 0; o < outer; o++) {                                                    \
            const T *block = x + o * reduced * inner;                                              \
            T *row = out + o * inner;                                                              \
            if (reduced == 0) {                                                                    \
                for (long long i = 0; i < inner; i++) row[i] = 0;                                  \
                continue;                                                                          \
            }                                                                                      \
            for (long long i = 0; i < inner; i++) row[i] = block[i];                               \
            for (long long r = 1; r < reduced; r++) {                                              \
                const T *slice = block + r * inner;                                                \
                for (long long i = 0; i < inner; i++) row[i] = row[i] + slice[i];                  \
            }                                                                                      \
        }                                                                                          \
    }

COLUMN_SUM(float, column_sum_float)
COLUMN_SUM(double, column_sum_double)

/* The keyword arguments the fast case takes: none, or ``dtype=None``. */
static int plain_kwargs(PyObject *kwargs) {
    if (kwargs == NULL || PyDict_GET_SIZE(kwargs) == 0) return 1;
    if (PyDict_GET_SIZE(kwargs) != 1) return 0;
    PyObject *dtype = PyDict_GetItemWithError(kwargs, s_dtype);  // borrowed
    return dtype == Py_None;
}

/* The kernel bound to (fallback, float32, float64): ``sum.dim_IntList(self, dim, keepdim=False)`` for
 * an exact contiguous float tensor and one int dim that is followed by more than one element. */
static PyObject *fp_column_sum(PyObject *bound, PyObject *args, PyObject *kwargs) {
    PyObject *fallback = PyTuple_GET_ITEM(bound, 0), *f32 = PyTuple_GET_ITEM(bound, 1), *f64 = PyTuple_GET_ITEM(bound, 2);
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (nargs < 2 || nargs > 3 || !plain_kwargs(kwargs)) {
        if (PyErr_Occurred()) return NULL;
        return PyObject_Call(fallback, args, kwargs);
    }
    PyObject *self = PyTuple_GET_ITEM(args, 0), *keep = nargs == 3 ? PyTuple_GET_ITEM(args, 2) : Py_False;
    Meta m;
    long long dim, d;
    if (!read_meta(self, &m) || !plain_storage(self) || m.ndim == 0 || !as_ll(PyTuple_GET_ITEM(args, 1), &dim) ||
        !wrap_dim(dim, m.ndim, &d) || (keep != Py_True && keep != Py_False))
        return PyObject_Call(fallback, args, kwargs);
    PyObject *dtype = SLOT(self, off_dtype), *array = SLOT(self, off_array);
    if ((dtype != f32 && dtype != f64) || array == NULL || Py_TYPE(array) != ndarray_type ||
        !is_contiguous_cached(self, &m))
        return PyObject_Call(fallback, args, kwargs);
    long long outer = 1, inner = 1;
    for (Py_ssize_t i = 0; i < d; i++) outer *= m.shape[i];
    for (Py_ssize_t i = d + 1; i < m.ndim; i++) inner *= m.shape[i];
    if (inner < 2) return PyObject_Call(fallback, args, kwargs);
    long long shape[MAXDIM];
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < m.ndim; i++) {
        if (i != d)
            shape[n++] = m.shape[i];
        else if (keep == Py_True)
            shape[n++] = 1;
    }
    Py_buffer in;
    if (PyObject_GetBuffer(array, &in, PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Clear();
        return PyObject_Call(fallback, args, kwargs);
    }
    Py_buffer res;
    PyObject *result = fresh_array(shape, n, dtype, &res), *out = NULL;
    if (result != NULL) {
        if (dtype == f32)
            column_sum_float((const float *)in.buf, (float *)res.buf, outer, m.shape[d], inner);
        else
            column_sum_double((const double *)in.buf, (double *)res.buf, outer, m.shape[d], inner);
        PyBuffer_Release(&res);
        out = own_array(result, dtype);
        Py_DECREF(result);
    }
    PyBuffer_Release(&in);
    return out;
}

static PyMethodDef column_sum_def = {"sum", (PyCFunction)(void (*)(void))fp_column_sum, METH_VARARGS | METH_KEYWORDS,
                                     "sum($self, /, self, dim=None, keepdim=False, *, dtype=None)\n--\n\n"
                                     "sum.dim_IntList's CPU kernel: sums down columns in C, else the Python kernel"};

/* column_sum(fallback, float32, float64): the kernel above, bound to its fallback. */
PyObject *py_column_sum(PyObject *self, PyObject *args) { return bind_kernel(&column_sum_def, args); }
