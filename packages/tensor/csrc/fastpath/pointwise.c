/* Pointwise ops: pointwise._fast_path. */
#include "fastpath.h"

/* init_pointwise(fast dtypes, exact dtypes, bool, quiet var, quiet value): what pointwise needs. */
PyObject *py_init_pointwise(PyObject *self, PyObject *args) {
    if (!PyArg_ParseTuple(args, "O!O!OOO", &PyTuple_Type, &fast_dtypes, &PyTuple_Type, &exact_dtypes, &bool_dtype,
                          &quiet_var, &quiet_value))
        return NULL;
    PyObject *keep[] = {fast_dtypes, exact_dtypes, bool_dtype, quiet_var, quiet_value};
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) Py_INCREF(keep[i]);
    Py_RETURN_NONE;
}

/* pointwise(compute, args, bool_result, params, exact): pointwise._fast_path, the same checks and
 * the same call of ``compute``; None when the call does not qualify. */
PyObject *fp_pointwise(PyObject *self, PyObject *const *argv, Py_ssize_t nargs) {
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
