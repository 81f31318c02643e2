/* The evaluation function installed with _PyInterpreterState_SetEvalFrameFunc, and its callback.
 *
 * The callback is per thread (as PyTorch's): set_eval_frame in one thread changes what that thread's
 * frames do, never another's. The evaluation function is installed for the interpreter while at
 * least one thread has a callback set, and removed when none has (a thread that exits with its
 * callback set keeps it installed, which costs the other threads the pass-through only).
 *
 * For each frame: pass through (run it with the default evaluation function) when this thread has no
 * callback or is running a check_fn (frames a check_fn enters run normally), for what is not a plain
 * function frame (module and class bodies, generators, coroutines, async generators always run as
 * they are, and a generator resuming is never seen), and for code marked skip or replacement. Else
 * the arguments and free variables become a dict, the entries are tried in order, newest first, with
 * check_fn(f_locals), and the first that passes runs its code instead of the frame's. When none
 * passes: in run-only mode (callback False) the frame runs as it is; else callback(frame, entries) is
 * called with the thread's callback set to None (frames it enters run normally; a compiled function
 * it calls may set its own) and answers with a CacheEntry to run (added at the front of the code's
 * entries unless already there), None (run the frame as it is) or SKIP_RECURSIVE (run the frame with
 * the thread's callback set to None, so that every frame it enters runs as it is).
 */
#include "eval_frame.h"

/* This thread's side of the hook, in a Py_tss slot: pthread_getspecific is a few loads, where a
 * _Thread_local of a dlopen'ed module goes through __tls_get_addr, which can take its slow path on
 * every call. Made when the thread first sets a callback; freed when it sets None again outside the
 * hook. */
typedef struct {
    PyObject *callback; /* strong reference; NULL when off (None) */
    int busy;           /* a check_fn is running: frames it enters run normally */
    int depth;          /* frames of this thread inside intercept(): the state stays while positive */
} ThreadHook;

static Py_tss_t thread_key = Py_tss_NEEDS_INIT;
/* Threads whose callback is set: the evaluation function is installed while this is positive. */
static Py_ssize_t active_threads = 0;

PyObject *ember_skip_recursive = NULL;

#define NOT_INTERCEPTED (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE)

static PyObject *ember_eval_frame(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag);

int
ember_hook_init(void)
{
    if (!PyThread_tss_is_created(&thread_key) && PyThread_tss_create(&thread_key) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "no thread-specific storage key for the frame-evaluation hook");
        return -1;
    }
    return 0;
}

static inline ThreadHook *
thread_hook(void)
{
    return (ThreadHook *)PyThread_tss_get(&thread_key);
}

PyObject *
ember_get_callback(void)
{
    ThreadHook *th = thread_hook();
    return th != NULL ? th->callback : NULL;
}

int
ember_hook_installed(void)
{
    return _PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get()) == ember_eval_frame;
}

static int
install(int on)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (on) {
        if (current != ember_eval_frame && current != _PyEval_EvalFrameDefault) {
            PyErr_SetString(PyExc_RuntimeError,
                            "another frame evaluation function (PEP 523) is installed; the ember.compile hook "
                            "cannot run beside it");
            return -1;
        }
        _PyInterpreterState_SetEvalFrameFunc(interp, ember_eval_frame);
    }
    else if (current == ember_eval_frame) {
        _PyInterpreterState_SetEvalFrameFunc(interp, _PyEval_EvalFrameDefault);
    }
    return 0;
}

int
ember_set_callback(PyObject *callback)
{
    ThreadHook *th = thread_hook();
    PyObject *next = callback == Py_None ? NULL : callback;
    PyObject *previous = th != NULL ? th->callback : NULL;
    if (th == NULL) {
        if (next == NULL) {
            return 0;
        }
        th = PyMem_RawCalloc(1, sizeof(ThreadHook));
        if (th == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if (PyThread_tss_set(&thread_key, th) != 0) {
            PyMem_RawFree(th);
            PyErr_SetString(PyExc_RuntimeError, "cannot store the frame-evaluation callback of this thread");
            return -1;
        }
    }
    if (previous == NULL && next != NULL) {
        if (active_threads == 0 && install(1) < 0) {
            return -1;
        }
        active_threads++;
    }
    else if (previous != NULL && next == NULL) {
        active_threads--;
        if (active_threads == 0) {
            install(0);
        }
    }
    th->callback = Py_XNewRef(next);
    if (next == NULL && th->depth == 0 && !th->busy) {
        PyThread_tss_set(&thread_key, NULL);
        PyMem_RawFree(th);
    }
    Py_XDECREF(previous); /* last: may run arbitrary code */
    return 0;
}

/* Sets the thread's callback back after running something with it off; keeps a pending exception. */
static int
restore_callback(PyObject *callback)
{
    if (!PyErr_Occurred()) {
        return ember_set_callback(callback);
    }
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc = PyErr_GetRaisedException();
    if (ember_set_callback(callback) < 0) {
        PyErr_Clear();
    }
    PyErr_SetRaisedException(exc);
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (ember_set_callback(callback) < 0) {
        PyErr_Clear();
    }
    PyErr_Restore(type, value, tb);
#endif
    return 0;
}

/* Runs the frame as it is. */
static inline PyObject *
run_default(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag)
{
    return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
}

/* Runs the entry's code in place of the frame, which is then discarded without running. */
static PyObject *
run_entry(PyThreadState *tstate, _PyInterpreterFrame *frame, PyCodeObject *code, EmberCacheEntry *entry)
{
    if (entry->code == (PyObject *)code) {
        return run_default(tstate, frame, 0);
    }
    PyObject *result = ember_run_entry_code(frame, code, entry);
    ember_discard_unstarted_frame(tstate, frame);
    return result;
}

static PyObject *
fail(PyThreadState *tstate, _PyInterpreterFrame *frame)
{
    ember_discard_unstarted_frame(tstate, frame);
    return NULL;
}

/* Whether the entry's check passes for these locals: 1, 0, or -1 with an exception set. */
static inline int
check_entry(EmberCacheEntry *entry, PyObject *f_locals)
{
    PyObject *ok = PyObject_CallOneArg(entry->check_fn, f_locals);
    if (ok == NULL) {
        return -1;
    }
    int passed = ok == Py_True ? 1 : (ok == Py_False ? 0 : PyObject_IsTrue(ok));
    Py_DECREF(ok);
    return passed;
}

#if defined(__GNUC__) || defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

/* A function frame of code that is neither skipped nor a replacement, with a callback set. */
static PyObject *
intercept_frame(PyThreadState *tstate, _PyInterpreterFrame *frame, PyCodeObject *code, EmberCodeState *state,
                ThreadHook *th)
{
    PyObject *callback = th->callback;
    if (callback == Py_False && (state == NULL || state->entries == NULL || PyList_GET_SIZE(state->entries) == 0)) {
        return run_default(tstate, frame, 0);
    }
    PyObject *f_locals = ember_frame_locals(frame, code);
    if (f_locals == NULL) {
        return fail(tstate, frame);
    }
    th->busy = 1;
    /* The list is read again at each step: a check_fn may reset the caches. */
    for (Py_ssize_t i = 0; state != NULL && state->entries != NULL && i < PyList_GET_SIZE(state->entries); i++) {
        EmberCacheEntry *entry = (EmberCacheEntry *)Py_NewRef(PyList_GET_ITEM(state->entries, i));
        int passed = check_entry(entry, f_locals);
        if (passed != 0) {
            th->busy = 0;
            Py_DECREF(f_locals);
            PyObject *result = passed > 0 ? run_entry(tstate, frame, code, entry) : fail(tstate, frame);
            Py_DECREF(entry);
            return result;
        }
        Py_DECREF(entry);
    }
    if (callback == Py_False) {
        th->busy = 0;
        Py_DECREF(f_locals);
        return run_default(tstate, frame, 0);
    }
    /* The callback runs with this thread's callback off (as PyTorch's): frames it enters run normally,
     * and a compiled function it calls may set its own. */
    Py_INCREF(callback);
    th->busy = 0;
    PyObject *answer = NULL;
    PyObject *frame_obj = ember_frame_new(frame, code, f_locals);
    PyObject *entries = frame_obj == NULL ? NULL
                        : (state != NULL && state->entries != NULL) ? PyList_GetSlice(state->entries, 0, PY_SSIZE_T_MAX)
                                                                    : PyList_New(0);
    if (entries != NULL && ember_set_callback(Py_None) == 0) {
        PyObject *args[2] = {frame_obj, entries};
        answer = PyObject_Vectorcall(callback, args, 2, NULL);
        if (restore_callback(callback) < 0) {
            Py_CLEAR(answer);
        }
    }
    Py_DECREF(callback);
    Py_XDECREF(entries);
    Py_XDECREF(frame_obj);
    Py_DECREF(f_locals);
    if (answer == NULL) {
        return fail(tstate, frame);
    }
    if (answer == Py_None) {
        Py_DECREF(answer);
        return run_default(tstate, frame, 0);
    }
    if (answer == ember_skip_recursive) {
        Py_DECREF(answer);
        Py_INCREF(callback);
        if (ember_set_callback(Py_None) < 0) {
            Py_DECREF(callback);
            return fail(tstate, frame);
        }
        PyObject *result = run_default(tstate, frame, 0);
        if (restore_callback(callback) < 0) {
            Py_CLEAR(result);
        }
        Py_DECREF(callback);
        return result;
    }
    if (!EmberCacheEntry_Check(answer) || ((EmberCacheEntry *)answer)->code == NULL) {
        PyErr_Format(PyExc_TypeError, "the frame-evaluation callback must return a CacheEntry, None or SKIP_RECURSIVE, not %.100s",
                     Py_TYPE(answer)->tp_name);
        Py_DECREF(answer);
        return fail(tstate, frame);
    }
    state = ember_code_state_get_or_create(code);
    int present = 0;
    for (Py_ssize_t i = 0; state != NULL && state->entries != NULL && i < PyList_GET_SIZE(state->entries); i++) {
        present |= PyList_GET_ITEM(state->entries, i) == answer;
    }
    if (state == NULL || (!present && ember_code_state_add_entry(state, answer) < 0)) {
        Py_DECREF(answer);
        return fail(tstate, frame);
    }
    PyObject *result = run_entry(tstate, frame, code, (EmberCacheEntry *)answer);
    Py_DECREF(answer);
    return result;
}

/* Kept out of line so that the pass-through path of ember_eval_frame stays a few loads and a jump.
 * The thread's state stays allocated while depth is positive. */
static NOINLINE PyObject *
intercept(PyThreadState *tstate, _PyInterpreterFrame *frame, PyCodeObject *code, EmberCodeState *state,
          ThreadHook *th)
{
    th->depth++;
    PyObject *result = intercept_frame(tstate, frame, code, state, th);
    th->depth--;
    return result;
}

static PyObject *
ember_eval_frame(PyThreadState *tstate, _PyInterpreterFrame *frame, int throwflag)
{
    ThreadHook *th = thread_hook();
    if (th == NULL || th->callback == NULL || th->busy || throwflag) {
        return run_default(tstate, frame, throwflag);
    }
    PyCodeObject *code = ember_frame_code(frame);
    if ((code->co_flags & (CO_OPTIMIZED | NOT_INTERCEPTED)) != CO_OPTIMIZED || frame->owner != FRAME_OWNED_BY_THREAD ||
        frame->f_locals != NULL) {
        return run_default(tstate, frame, throwflag);
    }
    EmberCodeState *state = ember_code_state(code);
    if (state != NULL && state->flags != 0) {
        return run_default(tstate, frame, throwflag);
    }
    return intercept(tstate, frame, code, state, th);
}
