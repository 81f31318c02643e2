/* ember.dynamo._eval_frame: shared declarations of the frame-evaluation hook (PEP 523).
 *
 * The files of the extension:
 *   compat.h      what differs between CPython 3.11, 3.12 and 3.13 (frame layout, clearing a frame)
 *   code_state.c  per-code-object state kept in co_extra (cache entries, skip flag), CacheEntry
 *   frame.c       the frame's arguments and free variables as a dict, the Frame given to callbacks,
 *                 running a cache entry's code in place of the frame's
 *   hook.c        the evaluation function itself and the per-thread callback
 *   module.c      the Python functions of the module
 */
#ifndef EMBER_EVAL_FRAME_H
#define EMBER_EVAL_FRAME_H

#include "compat.h"

/* ---- per-code state (code_state.c) ---- */

/* Flags of a code object's state; the hook runs the code as it is when any is set. */
#define EMBER_CODE_SKIP 1        /* skip_code(): set by the caller, cleared by reset */
#define EMBER_CODE_REPLACEMENT 2 /* a cache entry's code: always runs as it is */

typedef struct EmberCodeState {
    int flags;
    PyObject *entries; /* list of CacheEntry, newest first; NULL when there is none */
    struct EmberCodeState *prev, *next; /* every live state, for reset_code_caches() */
} EmberCodeState;

extern Py_ssize_t ember_extra_index;

/* The state of a code object, or NULL. Reads co_extra directly: this is the hot path. */
static inline EmberCodeState *
ember_code_state(PyCodeObject *code)
{
    EmberCodeExtra *extra = (EmberCodeExtra *)code->co_extra;
    if (extra == NULL || ember_extra_index >= extra->ce_size) {
        return NULL;
    }
    return (EmberCodeState *)extra->ce_extras[ember_extra_index];
}

int ember_code_state_init(void);
EmberCodeState *ember_code_state_get_or_create(PyCodeObject *code);
int ember_code_state_add_entry(EmberCodeState *state, PyObject *entry);
void ember_code_state_reset(EmberCodeState *state);
void ember_code_state_reset_all(void);

typedef struct {
    PyObject_HEAD
    PyObject *check_fn;
    PyObject *code;
    PyObject *dict;
    PyObject *weakreflist;
    PyObject *fn; /* the function that runs `code`, built for the last globals/builtins/closure seen */
} EmberCacheEntry;

extern PyTypeObject EmberCacheEntry_Type;
#define EmberCacheEntry_Check(op) PyObject_TypeCheck(op, &EmberCacheEntry_Type)

/* ---- frames (frame.c) ---- */

extern PyTypeObject EmberFrame_Type;
PyObject *ember_frame_locals(_PyInterpreterFrame *frame, PyCodeObject *code);
PyObject *ember_frame_new(_PyInterpreterFrame *frame, PyCodeObject *code, PyObject *f_locals);
PyObject *ember_run_entry_code(_PyInterpreterFrame *frame, PyCodeObject *code, EmberCacheEntry *entry);

/* ---- the hook (hook.c) ---- */

extern PyObject *ember_skip_recursive; /* the callback's answer: run this frame and its callees as they are */
int ember_hook_init(void);
PyObject *ember_get_callback(void);    /* borrowed; NULL when off */
int ember_set_callback(PyObject *callback); /* None: off; steals nothing */
int ember_hook_installed(void);             /* whether the interpreter runs frames through the hook */

#endif
