/* A frame the hook intercepts, read before it starts: its arguments and free variables as a dict,
 * the Frame object given to the callback, and running a cache entry's code in its place.
 *
 * When the hook sees a function frame, CPython has bound the arguments into localsplus (positional,
 * then keyword-only, then the *args tuple, then the **kwargs dict; defaults filled in) and nothing
 * else: MAKE_CELL and COPY_FREE_VARS have not run, so an argument that is also a cell still holds its
 * value, and free variables are read from the function's closure.
 *
 * A cache entry's code runs through a function object made from it with the frame's globals,
 * builtins and closure (kept on the entry while those stay the same), called with the frame's
 * arguments. CPython pushes, runs, clears and pops that new frame as for any call; the code is marked
 * as a replacement so that the hook lets it run as it is.
 */
#include "eval_frame.h"

#include <structmember.h>

#define ARG_FLAGS (CO_VARARGS | CO_VARKEYWORDS)

static inline int
total_args(PyCodeObject *code)
{
    return code->co_argcount + code->co_kwonlyargcount + ((code->co_flags & CO_VARARGS) != 0) +
           ((code->co_flags & CO_VARKEYWORDS) != 0);
}

PyObject *
ember_frame_locals(_PyInterpreterFrame *frame, PyCodeObject *code)
{
    int nargs = total_args(code);
    int nfree = code->co_nfreevars;
    PyObject *names = code->co_localsplusnames;
    PyObject *locals = _PyDict_NewPresized(nargs + nfree);
    if (locals == NULL) {
        return NULL;
    }
    for (int i = 0; i < nargs; i++) {
        PyObject *value = frame->localsplus[i];
        if (value != NULL && PyDict_SetItem(locals, PyTuple_GET_ITEM(names, i), value) < 0) {
            goto error;
        }
    }
    if (nfree > 0) {
        PyObject *closure = ember_frame_function(frame)->func_closure;
        int offset = code->co_nlocalsplus - nfree;
        for (int i = 0; closure != NULL && i < nfree && i < PyTuple_GET_SIZE(closure); i++) {
            PyObject *value = PyCell_GET(PyTuple_GET_ITEM(closure, i));
            /* An empty cell (the enclosing scope has not bound it yet) has no value to guard on. */
            if (value != NULL && PyDict_SetItem(locals, PyTuple_GET_ITEM(names, offset + i), value) < 0) {
                goto error;
            }
        }
    }
    return locals;
error:
    Py_DECREF(locals);
    return NULL;
}

/* ---- Frame: what the callback receives ---- */

typedef struct {
    PyObject_HEAD
    PyObject *f_code;
    PyObject *f_globals;
    PyObject *f_builtins;
    PyObject *f_locals;
    PyObject *closure;
    PyObject *f_func;
} EmberFrame;

PyObject *
ember_frame_new(_PyInterpreterFrame *frame, PyCodeObject *code, PyObject *f_locals)
{
    EmberFrame *self = PyObject_GC_New(EmberFrame, &EmberFrame_Type);
    if (self == NULL) {
        return NULL;
    }
    PyFunctionObject *func = ember_frame_function(frame);
    self->f_code = Py_NewRef((PyObject *)code);
    self->f_globals = Py_NewRef(frame->f_globals);
    self->f_builtins = Py_NewRef(frame->f_builtins);
    self->f_locals = Py_NewRef(f_locals);
    self->closure = Py_NewRef(func->func_closure != NULL ? func->func_closure : Py_None);
    self->f_func = Py_NewRef((PyObject *)func);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

static int
frame_traverse(EmberFrame *self, visitproc visit, void *arg)
{
    Py_VISIT(self->f_code);
    Py_VISIT(self->f_globals);
    Py_VISIT(self->f_builtins);
    Py_VISIT(self->f_locals);
    Py_VISIT(self->closure);
    Py_VISIT(self->f_func);
    return 0;
}

static int
frame_clear(EmberFrame *self)
{
    Py_CLEAR(self->f_code);
    Py_CLEAR(self->f_globals);
    Py_CLEAR(self->f_builtins);
    Py_CLEAR(self->f_locals);
    Py_CLEAR(self->closure);
    Py_CLEAR(self->f_func);
    return 0;
}

static void
frame_dealloc(EmberFrame *self)
{
    PyObject_GC_UnTrack(self);
    frame_clear(self);
    PyObject_GC_Del(self);
}

static PyObject *
frame_repr(EmberFrame *self)
{
    PyCodeObject *code = (PyCodeObject *)self->f_code;
    return PyUnicode_FromFormat("<Frame of %U at %U:%d>", code->co_qualname, code->co_filename, code->co_firstlineno);
}

static PyMemberDef frame_members[] = {
    {"f_code", T_OBJECT, offsetof(EmberFrame, f_code), READONLY, "the frame's code object"},
    {"f_globals", T_OBJECT, offsetof(EmberFrame, f_globals), READONLY, "the frame's globals"},
    {"f_builtins", T_OBJECT, offsetof(EmberFrame, f_builtins), READONLY, "the frame's builtins"},
    {"f_locals", T_OBJECT, offsetof(EmberFrame, f_locals), READONLY,
     "the arguments by name, and the free variables by name holding their cells' contents"},
    {"closure", T_OBJECT, offsetof(EmberFrame, closure), READONLY, "the function's closure (a tuple of cells) or None"},
    {"f_func", T_OBJECT, offsetof(EmberFrame, f_func), READONLY, "the function being called"},
    {NULL},
};

PyTypeObject EmberFrame_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ember.dynamo._eval_frame.Frame",
    .tp_basicsize = sizeof(EmberFrame),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A function frame about to start, as the frame-evaluation callback sees it.",
    .tp_traverse = (traverseproc)frame_traverse,
    .tp_clear = (inquiry)frame_clear,
    .tp_dealloc = (destructor)frame_dealloc,
    .tp_repr = (reprfunc)frame_repr,
    .tp_members = frame_members,
};

/* ---- running a cache entry's code ---- */

static int
check_compatible(PyCodeObject *original, PyCodeObject *replacement, PyObject *closure)
{
    if (original->co_argcount != replacement->co_argcount ||
        original->co_posonlyargcount != replacement->co_posonlyargcount ||
        original->co_kwonlyargcount != replacement->co_kwonlyargcount ||
        (original->co_flags & ARG_FLAGS) != (replacement->co_flags & ARG_FLAGS)) {
        PyErr_Format(PyExc_TypeError, "cache entry code %U does not take the arguments of %U", replacement->co_qualname,
                     original->co_qualname);
        return -1;
    }
    Py_ssize_t ncells = closure != NULL ? PyTuple_GET_SIZE(closure) : 0;
    if (replacement->co_nfreevars != ncells) {
        PyErr_Format(PyExc_TypeError, "cache entry code %U has %d free variables, the closure of %U holds %zd",
                     replacement->co_qualname, replacement->co_nfreevars, original->co_qualname, ncells);
        return -1;
    }
    if ((replacement->co_flags & (CO_OPTIMIZED | CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR |
                                  CO_ITERABLE_COROUTINE)) != CO_OPTIMIZED) {
        PyErr_Format(PyExc_TypeError, "cache entry code %U is not the code of a plain function (a generator, "
                     "coroutine or module code)", replacement->co_qualname);
        return -1;
    }
    return 0;
}

/* The function that runs the entry's code for this frame (borrowed from the entry). */
static PyObject *
entry_function(_PyInterpreterFrame *frame, PyCodeObject *code, EmberCacheEntry *entry)
{
    PyFunctionObject *func = ember_frame_function(frame);
    PyFunctionObject *fn = (PyFunctionObject *)entry->fn;
    if (fn != NULL && fn->func_globals == frame->f_globals && fn->func_builtins == frame->f_builtins &&
        fn->func_closure == func->func_closure) {
        return (PyObject *)fn;
    }
    PyCodeObject *replacement = (PyCodeObject *)entry->code;
    if (check_compatible(code, replacement, func->func_closure) < 0) {
        return NULL;
    }
    EmberCodeState *state = ember_code_state_get_or_create(replacement);
    if (state == NULL) {
        return NULL;
    }
    state->flags |= EMBER_CODE_REPLACEMENT;
    fn = (PyFunctionObject *)PyFunction_New((PyObject *)replacement, frame->f_globals);
    if (fn == NULL) {
        return NULL;
    }
    Py_XSETREF(fn->func_builtins, Py_NewRef(frame->f_builtins));
    Py_XSETREF(fn->func_closure, Py_XNewRef(func->func_closure));
    Py_XSETREF(fn->func_name, Py_NewRef(func->func_name));
    Py_XSETREF(fn->func_qualname, Py_NewRef(func->func_qualname));
    Py_XSETREF(entry->fn, (PyObject *)fn);
    return (PyObject *)fn;
}

#define SMALL_STACK 16

/* Calls fn with the arguments bound in the frame, as the caller passed them. */
static PyObject *
call_with_frame_arguments(PyObject *fn, _PyInterpreterFrame *frame, PyCodeObject *code)
{
    int argcount = code->co_argcount;
    int kwonly = code->co_kwonlyargcount;
    if (kwonly == 0 && (code->co_flags & ARG_FLAGS) == 0) {
        return PyObject_Vectorcall(fn, frame->localsplus, argcount, NULL);
    }
    PyObject **slots = frame->localsplus + argcount + kwonly;
    PyObject *varargs = (code->co_flags & CO_VARARGS) ? *slots++ : NULL;
    PyObject *varkw = (code->co_flags & CO_VARKEYWORDS) ? *slots : NULL;
    Py_ssize_t nvarargs = varargs != NULL ? PyTuple_GET_SIZE(varargs) : 0;
    Py_ssize_t nkw = kwonly + (varkw != NULL ? PyDict_GET_SIZE(varkw) : 0);
    Py_ssize_t npos = argcount + nvarargs;
    PyObject *small[SMALL_STACK];
    PyObject **stack = small;
    if (npos + nkw > SMALL_STACK) {
        stack = PyMem_Malloc((npos + nkw) * sizeof(PyObject *));
        if (stack == NULL) {
            return PyErr_NoMemory();
        }
    }
    PyObject *kwnames = NULL;
    PyObject *result = NULL;
    /* The references stay owned by the frame (and its *args tuple and **kwargs dict) during the call. */
    for (int i = 0; i < argcount; i++) {
        stack[i] = frame->localsplus[i];
    }
    for (Py_ssize_t i = 0; i < nvarargs; i++) {
        stack[argcount + i] = PyTuple_GET_ITEM(varargs, i);
    }
    if (nkw > 0) {
        kwnames = PyTuple_New(nkw);
        if (kwnames == NULL) {
            goto done;
        }
        for (int i = 0; i < kwonly; i++) {
            PyTuple_SET_ITEM(kwnames, i, Py_NewRef(PyTuple_GET_ITEM(code->co_localsplusnames, argcount + i)));
            stack[npos + i] = frame->localsplus[argcount + i];
        }
        if (varkw != NULL) {
            Py_ssize_t pos = 0, i = kwonly;
            PyObject *key, *value;
            while (i < nkw && PyDict_Next(varkw, &pos, &key, &value)) {
                PyTuple_SET_ITEM(kwnames, i, Py_NewRef(key));
                stack[npos + i] = value;
                i++;
            }
        }
    }
    result = PyObject_Vectorcall(fn, stack, npos, kwnames);
done:
    Py_XDECREF(kwnames);
    if (stack != small) {
        PyMem_Free(stack);
    }
    return result;
}

PyObject *
ember_run_entry_code(_PyInterpreterFrame *frame, PyCodeObject *code, EmberCacheEntry *entry)
{
    PyObject *fn = entry_function(frame, code, entry);
    if (fn == NULL) {
        return NULL;
    }
    Py_INCREF(fn); /* the entry may be dropped (reset) while its code runs */
    PyObject *result = call_with_frame_arguments(fn, frame, code);
    Py_DECREF(fn);
    return result;
}
