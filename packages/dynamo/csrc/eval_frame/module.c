/* ember.dynamo._eval_frame: the Python functions of the frame-evaluation hook.
 * ember.dynamo._frame_hook is its documented face.
 */
#include "eval_frame.h"

static PyObject *
py_set_eval_frame(PyObject *module, PyObject *callback)
{
    if (callback != Py_None && callback != Py_False && !PyCallable_Check(callback)) {
        return PyErr_Format(PyExc_TypeError, "set_eval_frame takes None, False or a callable, not %.100s",
                            Py_TYPE(callback)->tp_name);
    }
    PyObject *previous = ember_get_callback();
    previous = Py_NewRef(previous != NULL ? previous : Py_None);
    if (ember_set_callback(callback) < 0) {
        Py_DECREF(previous);
        return NULL;
    }
    return previous;
}

static PyObject *
py_get_eval_frame_callback(PyObject *module, PyObject *unused)
{
    PyObject *callback = ember_get_callback();
    return Py_NewRef(callback != NULL ? callback : Py_None);
}

static PyObject *
py_hook_installed(PyObject *module, PyObject *unused)
{
    return PyBool_FromLong(ember_hook_installed());
}

static PyCodeObject *
as_code(PyObject *code)
{
    if (!PyCode_Check(code)) {
        PyErr_Format(PyExc_TypeError, "expected a code object, not %.100s", Py_TYPE(code)->tp_name);
        return NULL;
    }
    return (PyCodeObject *)code;
}

static PyObject *
py_skip_code(PyObject *module, PyObject *code)
{
    PyCodeObject *co = as_code(code);
    EmberCodeState *state = co == NULL ? NULL : ember_code_state_get_or_create(co);
    if (state == NULL) {
        return NULL;
    }
    state->flags |= EMBER_CODE_SKIP;
    Py_RETURN_NONE;
}

static PyObject *
py_is_skipped(PyObject *module, PyObject *code)
{
    PyCodeObject *co = as_code(code);
    if (co == NULL) {
        return NULL;
    }
    EmberCodeState *state = ember_code_state(co);
    return PyBool_FromLong(state != NULL && (state->flags & EMBER_CODE_SKIP));
}

static PyObject *
py_cache_entries(PyObject *module, PyObject *code)
{
    PyCodeObject *co = as_code(code);
    if (co == NULL) {
        return NULL;
    }
    EmberCodeState *state = ember_code_state(co);
    if (state == NULL || state->entries == NULL) {
        return PyList_New(0);
    }
    return PyList_GetSlice(state->entries, 0, PY_SSIZE_T_MAX);
}

static PyObject *
py_add_cache_entry(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        return PyErr_Format(PyExc_TypeError, "add_cache_entry(code, entry) takes 2 arguments (%zd given)", nargs);
    }
    PyCodeObject *co = as_code(args[0]);
    if (co == NULL) {
        return NULL;
    }
    if (!EmberCacheEntry_Check(args[1]) || ((EmberCacheEntry *)args[1])->code == NULL) {
        return PyErr_Format(PyExc_TypeError, "add_cache_entry: expected a CacheEntry, not %.100s", Py_TYPE(args[1])->tp_name);
    }
    EmberCodeState *state = ember_code_state_get_or_create(co);
    if (state == NULL || ember_code_state_add_entry(state, args[1]) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
py_reset_code(PyObject *module, PyObject *code)
{
    PyCodeObject *co = as_code(code);
    if (co == NULL) {
        return NULL;
    }
    EmberCodeState *state = ember_code_state(co);
    if (state != NULL) {
        ember_code_state_reset(state);
    }
    Py_RETURN_NONE;
}

static PyObject *
py_reset_code_caches(PyObject *module, PyObject *unused)
{
    ember_code_state_reset_all();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"set_eval_frame", py_set_eval_frame, METH_O,
     "set_eval_frame(callback) -> previous\n\nSets this thread's callback: None (hook off), False (run cached entries, "
     "never call back) or callable(frame, cache_entries) -> CacheEntry | None | SKIP_RECURSIVE. Returns the previous one."},
    {"get_eval_frame_callback", py_get_eval_frame_callback, METH_NOARGS,
     "get_eval_frame_callback() -> None | False | callable: this thread's callback"},
    {"hook_installed", py_hook_installed, METH_NOARGS,
     "hook_installed() -> bool: whether the interpreter runs frames through the hook (some thread has a callback)"},
    {"skip_code", py_skip_code, METH_O, "skip_code(code): frames of this code run as they are, until a reset"},
    {"is_skipped", py_is_skipped, METH_O, "is_skipped(code) -> bool: whether skip_code(code) is in effect"},
    {"cache_entries", py_cache_entries, METH_O, "cache_entries(code) -> list[CacheEntry]: a copy, newest first"},
    {"add_cache_entry", (PyCFunction)(void (*)(void))py_add_cache_entry, METH_FASTCALL,
     "add_cache_entry(code, entry): puts entry first among the code's entries"},
    {"reset_code", py_reset_code, METH_O, "reset_code(code): drops the code's entries and its skip flag"},
    {"reset_code_caches", py_reset_code_caches, METH_NOARGS,
     "reset_code_caches(): drops the entries and skip flags of every code object"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ember.dynamo._eval_frame",
    .m_doc = "The PEP 523 frame-evaluation hook of ember.compile (see ember.dynamo._frame_hook).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__eval_frame(void)
{
    if (ember_code_state_init() < 0 || ember_hook_init() < 0 || PyType_Ready(&EmberCacheEntry_Type) < 0 || PyType_Ready(&EmberFrame_Type) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    if (ember_skip_recursive == NULL) {
        ember_skip_recursive = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type); /* a unique sentinel */
        if (ember_skip_recursive == NULL) {
            goto error;
        }
    }
    if (PyModule_AddObjectRef(module, "CacheEntry", (PyObject *)&EmberCacheEntry_Type) < 0 ||
        PyModule_AddObjectRef(module, "Frame", (PyObject *)&EmberFrame_Type) < 0 ||
        PyModule_AddObjectRef(module, "SKIP_RECURSIVE", ember_skip_recursive) < 0) {
        goto error;
    }
    return module;
error:
    Py_DECREF(module);
    return NULL;
}
