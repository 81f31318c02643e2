/* What differs between the CPython versions the hook supports (3.11, 3.12, 3.13).
 *
 * The hook reads the interpreter's own frame (_PyInterpreterFrame) before it starts running, so it
 * needs CPython's internal headers (Py_BUILD_CORE). Some internal functions it needs are not
 * exported from libpython on every version; those are written here, following what that version's
 * ceval.c and pystate.c do, for the one case the hook needs: a function frame that never started.
 */
#ifndef EMBER_EVAL_FRAME_COMPAT_H
#define EMBER_EVAL_FRAME_COMPAT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030E0000
#error "ember.dynamo._eval_frame supports CPython 3.11, 3.12 and 3.13"
#endif
#ifdef Py_GIL_DISABLED
#error "ember.dynamo._eval_frame does not support the free-threaded build of CPython"
#endif

#define Py_BUILD_CORE 1
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE

/* co_extra's layout: private to codeobject.c, the same in 3.11-3.13. */
typedef struct {
    Py_ssize_t ce_size;
    void *ce_extras[1];
} EmberCodeExtra;

#if PY_VERSION_HEX >= 0x030C0000
#define ember_request_code_extra_index PyUnstable_Eval_RequestCodeExtraIndex
#define ember_code_set_extra PyUnstable_Code_SetExtra
#else
#define ember_request_code_extra_index _PyEval_RequestCodeExtraIndex
#define ember_code_set_extra _PyCode_SetExtra
#endif

static inline PyCodeObject *
ember_frame_code(_PyInterpreterFrame *frame)
{
#if PY_VERSION_HEX >= 0x030D0000
    return (PyCodeObject *)frame->f_executable;
#else
    return frame->f_code;
#endif
}

static inline PyFunctionObject *
ember_frame_function(_PyInterpreterFrame *frame)
{
#if PY_VERSION_HEX >= 0x030C0000
    return (PyFunctionObject *)frame->f_funcobj;
#else
    return frame->f_func;
#endif
}

#if PY_VERSION_HEX >= 0x030D0000
/* Exported by 3.13 (for its JIT); declared in an internal header we do not include. */
PyAPI_FUNC(void) _PyEval_FrameClearAndPop(PyThreadState *tstate, _PyInterpreterFrame *frame);
#endif

/* Clears and pops a function frame that the hook received and did not run.
 *
 * 3.11: the caller (_PyEval_Vector) clears and pops the frame after the evaluation function
 * returns, whatever it did, so there is nothing to do.
 * 3.12 and 3.13: the evaluation function clears and pops its frame before it returns (the default
 * one does it when the frame exits), so a frame we do not run must be cleared here.
 */
static inline void
ember_discard_unstarted_frame(PyThreadState *tstate, _PyInterpreterFrame *frame)
{
#if PY_VERSION_HEX >= 0x030D0000
    _PyEval_FrameClearAndPop(tstate, frame);
#elif PY_VERSION_HEX >= 0x030C0000
    /* ceval.c's clear_thread_frame and frame.c's _PyFrame_ClearExceptCode, for a frame that never
     * ran: it has no frame object (nothing could see it) and owns its arguments in localsplus. */
    assert(frame->owner == FRAME_OWNED_BY_THREAD);
    assert(frame->frame_obj == NULL);
    tstate->c_recursion_remaining--;
    for (int i = 0; i < frame->stacktop; i++) {
        Py_XDECREF(frame->localsplus[i]);
    }
    Py_XDECREF(frame->f_locals);
    Py_DECREF(frame->f_funcobj);
    Py_DECREF(frame->f_code);
    tstate->c_recursion_remaining++;
    /* pystate.c's _PyThreadState_PopFrame: the frame is the top of the thread's data stack; when it
     * opened a chunk of that stack, the chunk goes back to the arena allocator. */
    PyObject **base = (PyObject **)frame;
    if (base == &tstate->datastack_chunk->data[0]) {
        _PyStackChunk *chunk = tstate->datastack_chunk;
        _PyStackChunk *previous = chunk->previous;
        tstate->datastack_top = &previous->data[previous->top];
        tstate->datastack_chunk = previous;
        PyObjectArenaAllocator arena;
        PyObject_GetArenaAllocator(&arena);
        arena.free(arena.ctx, chunk, chunk->size);
        tstate->datastack_limit = (PyObject **)(((char *)previous) + previous->size);
    }
    else {
        tstate->datastack_top = base;
    }
#else
    (void)tstate;
    (void)frame;
#endif
}

#endif
