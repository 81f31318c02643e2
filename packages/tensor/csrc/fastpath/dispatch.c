/* The dispatcher's common case: OpOverload.__call__ straight to the kernel when no level above the backend has work to do. */
#include "fastpath.h"

/* -- the dispatcher's common case ---------------------------------------------------------------- */

int flag(PyObject *name) {
    PyObject *v = PyObject_GetAttr(flags, name);
    if (v == NULL) return -1;
    int on = PyObject_IsTrue(v);
    Py_DECREF(v);
    return on;
}

int requires_grad(PyObject *t) {
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
PyObject *fp_call(PyObject *self, PyObject *const *argv, Py_ssize_t nargs) {
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
int plain_call(PyObject *t) {
    if (Tensor_type == NULL || Py_TYPE(t) != Tensor_type) return 0;
    int on = flag(s_slow);
    if (on) return on < 0 ? -1 : 0;
    if ((on = flag(s_subclasses))) return on < 0 ? -1 : 0;
    if ((on = requires_grad(t))) return on < 0 ? -1 : 0;
    return 1;
}
