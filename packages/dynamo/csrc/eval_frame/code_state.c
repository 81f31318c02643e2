/* Per-code-object state, kept in the code object's co_extra slot (PEP 523), and CacheEntry.
 *
 * A code object's state holds its skip flag and its cache entries (a list, newest first). States
 * live as long as their code object (CPython calls free_state when the code dies); a linked list of
 * every live state lets reset_code_caches() clear them all without keeping code objects alive.
 */
#include "eval_frame.h"

#include <structmember.h>

Py_ssize_t ember_extra_index = -1;
static EmberCodeState *all_states = NULL;

static void
free_state(void *ptr)
{
    EmberCodeState *state = (EmberCodeState *)ptr;
    if (state == NULL) {
        return;
    }
    if (state->prev != NULL) {
        state->prev->next = state->next;
    }
    else {
        all_states = state->next;
    }
    if (state->next != NULL) {
        state->next->prev = state->prev;
    }
    PyObject *entries = state->entries;
    state->entries = NULL;
    PyMem_Free(state);
    Py_XDECREF(entries); /* last: may run arbitrary code */
}

int
ember_code_state_init(void)
{
    if (ember_extra_index < 0) {
        ember_extra_index = ember_request_code_extra_index(free_state);
        if (ember_extra_index < 0) {
            PyErr_SetString(PyExc_RuntimeError, "no free co_extra slot for the frame-evaluation hook");
            return -1;
        }
    }
    return 0;
}

EmberCodeState *
ember_code_state_get_or_create(PyCodeObject *code)
{
    EmberCodeState *state = ember_code_state(code);
    if (state != NULL) {
        return state;
    }
    state = PyMem_Calloc(1, sizeof(EmberCodeState));
    if (state == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    if (ember_code_set_extra((PyObject *)code, ember_extra_index, state) < 0) {
        PyMem_Free(state);
        return NULL;
    }
    state->next = all_states;
    if (all_states != NULL) {
        all_states->prev = state;
    }
    all_states = state;
    return state;
}

int
ember_code_state_add_entry(EmberCodeState *state, PyObject *entry)
{
    if (state->entries == NULL) {
        state->entries = PyList_New(0);
        if (state->entries == NULL) {
            return -1;
        }
    }
    return PyList_Insert(state->entries, 0, entry);
}

void
ember_code_state_reset(EmberCodeState *state)
{
    state->flags &= EMBER_CODE_REPLACEMENT; /* a replacement code stays one: its functions may run */
    Py_CLEAR(state->entries);
}

void
ember_code_state_reset_all(void)
{
    /* Clearing a list may free code objects, whose states then leave the list: walk a snapshot. */
    Py_ssize_t n = 0;
    for (EmberCodeState *s = all_states; s != NULL; s = s->next) {
        n++;
    }
    PyObject **lists = PyMem_Calloc(n ? n : 1, sizeof(PyObject *));
    if (lists == NULL) {
        return;
    }
    Py_ssize_t i = 0;
    for (EmberCodeState *s = all_states; s != NULL; s = s->next) {
        s->flags &= EMBER_CODE_REPLACEMENT;
        lists[i++] = s->entries; /* ownership moves to `lists` */
        s->entries = NULL;
    }
    for (i = 0; i < n; i++) {
        Py_XDECREF(lists[i]);
    }
    PyMem_Free(lists);
}

/* ---- CacheEntry ---- */

static int
entry_init(EmberCacheEntry *self, PyObject *args, PyObject *kwargs)
{
    PyObject *check_fn, *code;
    if (!PyArg_ParseTuple(args, "OO:CacheEntry", &check_fn, &code)) {
        return -1;
    }
    if (!PyCallable_Check(check_fn)) {
        PyErr_Format(PyExc_TypeError, "CacheEntry: check_fn must be callable, not %.100s", Py_TYPE(check_fn)->tp_name);
        return -1;
    }
    if (!PyCode_Check(code)) {
        PyErr_Format(PyExc_TypeError, "CacheEntry: code must be a code object, not %.100s", Py_TYPE(code)->tp_name);
        return -1;
    }
    Py_XSETREF(self->check_fn, Py_NewRef(check_fn));
    Py_XSETREF(self->code, Py_NewRef(code));
    Py_CLEAR(self->fn);
    if (kwargs != NULL) {
        /* Further keyword arguments become attributes (guards, compile id, ...). */
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kwargs, &pos, &key, &value)) {
            if (PyObject_SetAttr((PyObject *)self, key, value) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

static int
entry_traverse(EmberCacheEntry *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->check_fn);
    Py_VISIT(self->code);
    Py_VISIT(self->dict);
    Py_VISIT(self->fn);
    return 0;
}

static int
entry_clear(EmberCacheEntry *self)
{
    Py_CLEAR(self->check_fn);
    Py_CLEAR(self->code);
    Py_CLEAR(self->dict);
    Py_CLEAR(self->fn);
    return 0;
}

static void
entry_dealloc(EmberCacheEntry *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    entry_clear(self);
    tp->tp_free((PyObject *)self);
}

static PyObject *
entry_repr(EmberCacheEntry *self)
{
    if (self->code == NULL) {
        return PyUnicode_FromFormat("<%s (empty)>", Py_TYPE(self)->tp_name);
    }
    PyCodeObject *code = (PyCodeObject *)self->code;
    return PyUnicode_FromFormat("<%s for %U at %U:%d>", Py_TYPE(self)->tp_name, code->co_qualname, code->co_filename,
                                code->co_firstlineno);
}

static PyMemberDef entry_members[] = {
    {"check_fn", T_OBJECT, offsetof(EmberCacheEntry, check_fn), READONLY,
     "check_fn(f_locals) -> bool: whether this entry's code may run for a frame with these locals"},
    {"code", T_OBJECT, offsetof(EmberCacheEntry, code), READONLY, "the code run in place of the frame's"},
    {NULL},
};

PyTypeObject EmberCacheEntry_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ember.dynamo._eval_frame.CacheEntry",
    .tp_basicsize = sizeof(EmberCacheEntry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "CacheEntry(check_fn, code, **attributes)\n\n"
              "A compiled replacement for a code object: when check_fn(f_locals) is true, code runs in place of "
              "the frame's code, with the frame's arguments, globals, builtins and closure. Further keyword "
              "arguments become attributes.",
    .tp_init = (initproc)entry_init,
    .tp_new = PyType_GenericNew,
    .tp_traverse = (traverseproc)entry_traverse,
    .tp_clear = (inquiry)entry_clear,
    .tp_dealloc = (destructor)entry_dealloc,
    .tp_repr = (reprfunc)entry_repr,
    .tp_members = entry_members,
    .tp_dictoffset = offsetof(EmberCacheEntry, dict),
    .tp_weaklistoffset = offsetof(EmberCacheEntry, weakreflist),
};
