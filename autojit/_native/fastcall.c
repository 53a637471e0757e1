/*
 * autojit._native.fastcall: the native warm-call entry of a decorated function.
 *
 * A Table serves repeat calls whose signature was armed by the Python dispatcher
 * (autojit/dispatch/fastpath.py) without any Python-level machinery: it checks that the
 * settings generation (autojit/config.py GENERATION: bumped when the environment is
 * re-read, the router swapped or the log level changed) and this context's config()
 * overrides are those it was armed under, matches the call's
 * arguments against each armed Spec (exact type, dtype, ndim, layout, the size equalities
 * of the plan), allocates the outputs, packs the kernel's (data, meta) arguments
 * (autojit/ir/kernel.py) and calls the compiled kernel. Anything unexpected returns
 * MISS and the dispatcher's full path runs, so a wrong answer is never possible from here:
 * only a slower one.
 *
 * The Table counts in the int64 array ``counter``: [0] calls served, [1] latencies
 * recorded, [2] their sum in ns, [3:] a ring of the latest ones in ns (stats.py folds
 * them into f.stats()).
 *
 * A Spec is (SPEC_VERSION, codes, constants, addresses, guards): ``codes`` a flat tuple of
 * ints built in fastpath.py (see encode_spec there; a spec of another version is refused);
 * the layout is parsed once, here, into fixed-size C arrays. Its guards (dispatch/guards.py:
 * what the trace read from globals, closure cells, defaults, ...) are a tuple of lists
 * [kind, holder, key, expected], checked by identity on every call; the Python side may
 * replace ``expected`` by an equal value's object, so they are read from the lists each time.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>
#include <math.h>
#include <float.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define MAX_ARGS 32
#define MAX_SYMS 32
#define MAX_SRC 16
#define MAX_ALLOC 8
#define MAX_ND 32
#define MAX_BUFS 32
#define MAX_SCAL 16
#define MAX_LOOP 8
#define MAX_STRIDES 64
#define MAX_OUT 8
#define MAX_SPECS 8
#define MAX_CALLS 4
#define SPEC_VERSION 2      /* fastpath.py SPEC_VERSION: the layout of a spec tuple */

enum { ARG_ARRAY = 1, ARG_PYFLOAT = 2, ARG_PYINT = 3, ARG_PYBOOL = 4, ARG_NPSCALAR = 5 };
enum { BUF_ARG = 0, BUF_ALLOC = 1, BUF_CONST = 2 };
/* guard kinds: the numbers of dispatch/guards.py */
enum { G_DICT = 0, G_CELL, G_DEFAULTS, G_KWDEFAULTS, G_LENGTH, G_ITEMS, G_BYTES, G_SET,
       G_ATTR, G_KINDS };

typedef void (*kernel_fn)(void **data, const int64_t *meta);

typedef struct {
    int kind, type_num, ndim, c_contig;
    uint64_t ones;            /* bit d set: axis d has size 1 */
    int has_range;
    int c_strided;            /* not C-contiguous but signature.py's c_ordered_strided */
    long long lo, hi;         /* Python int range (int guards) */
    PyTypeObject *scalar_type;
} ArgSpec;

typedef struct {
    int nsrc;
    int src_arg[MAX_SRC], src_axis[MAX_SRC];
    int has_guard, nonempty;
    long long guard;
} SymSpec;

typedef struct {
    int type_num, ndim;
    int dims[MAX_ND];         /* >= 0: symbol index; < 0: literal -d-1 */
} AllocSpec;

typedef struct {
    int type_num, from_sizes, arg, count;
    int syms[MAX_SYMS];
} ScalSpec;

typedef struct {
    int count;
    int syms[MAX_SYMS];
} LoopSpec;

typedef struct {              /* one kernel launch: where its operands come from */
    int nbuf, nscal, nloop, nstride;
    int buf_kind[MAX_BUFS], buf_index[MAX_BUFS];
    ScalSpec scal[MAX_SCAL];
    LoopSpec loops[MAX_LOOP];
    int stride_buf[MAX_STRIDES], stride_axis[MAX_STRIDES];
    kernel_fn kernel;
} CallSpec;

typedef struct {
    int nargs, nsym, single, nalloc, nconst, ncalls, nout, out_tuple;
    ArgSpec args[MAX_ARGS];
    SymSpec syms[MAX_SYMS];
    AllocSpec allocs[MAX_ALLOC];
    CallSpec calls[MAX_CALLS];
    int out_alloc[MAX_OUT], out_scalar[MAX_OUT];
    PyArrayObject *consts[MAX_BUFS];   /* borrowed: the Table's keep list holds them */
    Py_ssize_t nguards;
    struct Guard *guards;              /* parsed from a tuple of lists the keep list holds */
} Spec;

typedef struct Guard {        /* one [kind, holder, key, expected] list, parsed */
    int kind;
    PyObject *holder, *key, *list;     /* borrowed; expected is read from list[3] each call */
} Guard;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *overrides, *counter, *keep;
    int64_t generation;           /* the settings generation it was armed under */
    PyObject *fp_policy;          /* NumPy's error policy (np.errstate) it was armed under */
    long long n_limit, work_limit;
    int64_t *count;           /* counter: calls, latencies, ns sum, then the ring */
    long long ring;
    unsigned long tick, sample_mask;
    int nspecs;
    Spec *specs[MAX_SPECS];
} Table;

static PyObject *MISS, *ABSENT;

static int64_t now_ns(void) {
    struct timespec ts;
#if defined(CLOCK_MONOTONIC)
    clock_gettime(CLOCK_MONOTONIC, &ts);
#else
    timespec_get(&ts, TIME_UTC);
#endif
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static PyObject *g_ctxvar;                     /* config()'s overrides (identity) */
static PyObject *g_generation_cell;            /* the int64 array holding the generation */
static const volatile int64_t *g_generation;   /* its data */
static PyObject *g_fp_ctxvar, *g_fp_reports;   /* NumPy's error policy, its verdict() */

/* ---- parsing ------------------------------------------------------------------------ */

typedef struct { PyObject *code; Py_ssize_t at, n; int failed; } Reader;

static long long next_int(Reader *r) {
    if (r->failed) return 0;
    if (r->at >= r->n) { r->failed = 1; return 0; }
    long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(r->code, r->at++));
    if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); r->failed = 1; }
    return v;
}

static int next_count(Reader *r, int limit) {
    long long v = next_int(r);
    if (v < 0 || v > limit) r->failed = 1;
    return r->failed ? 0 : (int)v;
}

static int is_int_type(int t) {
    return t == NPY_BYTE || t == NPY_UBYTE || t == NPY_SHORT || t == NPY_USHORT ||
           t == NPY_INT || t == NPY_UINT || t == NPY_LONG || t == NPY_ULONG ||
           t == NPY_LONGLONG || t == NPY_ULONGLONG;
}

static int is_float_type(int t) { return t == NPY_FLOAT || t == NPY_DOUBLE; }

static int parse_args(Reader *r, Spec *s) {
    for (int i = 0; i < s->nargs; i++) {
        ArgSpec *a = &s->args[i];
        a->kind = (int)next_int(r);
        long long p1 = next_int(r), p2 = next_int(r), p3 = next_int(r), p4 = next_int(r);
        if (a->kind == ARG_ARRAY) {
            a->type_num = (int)p1; a->ndim = (int)p2; a->ones = (uint64_t)p3;
            a->c_contig = p4 == 1;   /* layout: 1 C-contiguous, 2 C-strided, 0 other */
            a->c_strided = p4 == 2;
            if (a->ndim < 0 || a->ndim > MAX_ND) return -1;
        } else if (a->kind == ARG_PYINT) {
            a->has_range = (int)p1; a->lo = p2; a->hi = p3;
        } else if (a->kind == ARG_NPSCALAR) {
            PyArray_Descr *d = PyArray_DescrFromType((int)p1);
            if (d == NULL) { PyErr_Clear(); return -1; }
            a->type_num = (int)p1; a->scalar_type = d->typeobj;
            Py_DECREF(d);
        } else if (a->kind != ARG_PYFLOAT && a->kind != ARG_PYBOOL) {
            return -1;
        }
    }
    return 0;
}

static int parse_syms(Reader *r, Spec *s) {
    for (int i = 0; i < s->nsym; i++) {
        SymSpec *y = &s->syms[i];
        y->nsrc = next_count(r, MAX_SRC);
        for (int k = 0; k < y->nsrc; k++) {
            y->src_arg[k] = next_count(r, s->nargs - 1);
            y->src_axis[k] = next_count(r, MAX_ND - 1);
            if (!r->failed && (s->args[y->src_arg[k]].kind != ARG_ARRAY ||
                               y->src_axis[k] >= s->args[y->src_arg[k]].ndim)) return -1;
        }
        y->has_guard = (int)next_int(r);
        y->guard = next_int(r);
        y->nonempty = (int)next_int(r);
        if (y->nsrc == 0 && !y->has_guard) return -1;
    }
    return 0;
}

static int parse_call(Reader *r, const Spec *s, CallSpec *c) {
    c->nbuf = next_count(r, MAX_BUFS);
    c->nscal = next_count(r, MAX_SCAL);
    c->nloop = next_count(r, MAX_LOOP);
    c->nstride = next_count(r, MAX_STRIDES);
    for (int i = 0; i < c->nbuf; i++) {
        c->buf_kind[i] = (int)next_int(r);
        c->buf_index[i] = (int)next_int(r);
        int limit = c->buf_kind[i] == BUF_ARG ? s->nargs : c->buf_kind[i] == BUF_ALLOC ?
                    s->nalloc : c->buf_kind[i] == BUF_CONST ? s->nconst : -1;
        if (c->buf_index[i] < 0 || c->buf_index[i] >= limit) return -1;
        if (c->buf_kind[i] == BUF_ARG && s->args[c->buf_index[i]].kind != ARG_ARRAY) return -1;
    }
    for (int i = 0; i < c->nscal; i++) {
        ScalSpec *p = &c->scal[i];
        p->type_num = (int)next_int(r);
        p->from_sizes = (int)next_int(r);
        if (!is_int_type(p->type_num) && !is_float_type(p->type_num) &&
            p->type_num != NPY_BOOL) return -1;
        if (p->from_sizes) {
            p->count = next_count(r, MAX_SYMS);
            for (int k = 0; k < p->count; k++) p->syms[k] = next_count(r, s->nsym - 1);
        } else {
            p->arg = next_count(r, s->nargs - 1);
            if (r->failed) return -1;
            const ArgSpec *a = &s->args[p->arg];
            if (a->kind == ARG_ARRAY) return -1;
            if (a->kind == ARG_NPSCALAR && a->type_num != p->type_num) return -1;
            if (a->kind == ARG_PYFLOAT && !is_float_type(p->type_num)) return -1;
            if (a->kind == ARG_PYINT && p->type_num == NPY_BOOL) return -1;
        }
    }
    for (int i = 0; i < c->nloop; i++) {
        c->loops[i].count = next_count(r, MAX_SYMS);
        for (int k = 0; k < c->loops[i].count; k++)
            c->loops[i].syms[k] = next_count(r, s->nsym - 1);
    }
    for (int i = 0; i < c->nstride; i++) {
        c->stride_buf[i] = next_count(r, c->nbuf - 1);
        c->stride_axis[i] = (int)next_int(r);
        if (c->stride_axis[i] >= MAX_ND) return -1;
    }
    return r->failed ? -1 : 0;
}

static int parse_rest(Reader *r, Spec *s) {
    for (int i = 0; i < s->nalloc; i++) {
        AllocSpec *a = &s->allocs[i];
        a->type_num = (int)next_int(r);
        a->ndim = next_count(r, MAX_ND);
        for (int d = 0; d < a->ndim; d++) {
            a->dims[d] = (int)next_int(r);
            if (a->dims[d] >= s->nsym) return -1;
        }
    }
    for (int i = 0; i < s->ncalls; i++)
        if (parse_call(r, s, &s->calls[i])) return -1;
    for (int i = 0; i < s->nout; i++) {
        s->out_alloc[i] = next_count(r, s->nalloc - 1);
        s->out_scalar[i] = (int)next_int(r);
    }
    return 0;
}

/* Return 0 when guards is a tuple of [kind, holder, key, expected] lists whose holders
 * have the types their kind reads; -1 otherwise. */
static int check_guards(PyObject *guards) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(guards); i++) {
        PyObject *g = PyTuple_GET_ITEM(guards, i);
        if (!PyList_CheckExact(g) || PyList_GET_SIZE(g) != 4) return -1;
        long kind = PyLong_AsLong(PyList_GET_ITEM(g, 0));
        if (kind == -1 && PyErr_Occurred()) { PyErr_Clear(); return -1; }
        PyObject *holder = PyList_GET_ITEM(g, 1), *key = PyList_GET_ITEM(g, 2);
        int ok = kind == G_DICT ? PyDict_Check(holder)
               : kind == G_CELL ? PyCell_Check(holder)
               : kind == G_DEFAULTS || kind == G_KWDEFAULTS ? PyFunction_Check(holder)
               : kind == G_LENGTH ? PyList_CheckExact(holder) || PyDict_CheckExact(holder)
               : kind == G_ITEMS ? PyList_CheckExact(holder)
               : kind == G_BYTES ? PyArray_CheckExact(holder)
               : kind == G_SET ? PyAnySet_CheckExact(holder)
               : kind == G_ATTR ? PyUnicode_CheckExact(key) : 0;
        if (!ok) return -1;
    }
    return 0;
}

/* Return 1 when the guard's holder reads its expected object (identity), 0 otherwise
 * (MISS: the Python side compares values and retraces or refreshes). Errors are cleared. */
static inline int guard_holds(int kind, PyObject *holder, PyObject *key, PyObject *expected) {
    PyObject *now;
    switch (kind) {
    case G_DICT:
        now = PyDict_GetItemWithError(holder, key);
        if (now == NULL) {
            if (PyErr_Occurred()) { PyErr_Clear(); return 0; }
            now = ABSENT;
        }
        return now == expected;
    case G_CELL:
        now = PyCell_GET(holder);
        return (now == NULL ? ABSENT : now) == expected;
    case G_DEFAULTS:
        now = PyFunction_GET_DEFAULTS(holder);
        return (now == NULL ? Py_None : now) == expected;
    case G_KWDEFAULTS:
        now = PyFunction_GET_KW_DEFAULTS(holder);
        return (now == NULL ? Py_None : now) == expected;
    case G_LENGTH: {
        Py_ssize_t n = PyList_CheckExact(holder) ? PyList_GET_SIZE(holder)
                                                 : PyDict_GET_SIZE(holder);
        if (!PyLong_CheckExact(expected)) return 0;
        Py_ssize_t want = PyLong_AsSsize_t(expected);
        if (want == -1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        return want == n;
    }
    case G_ITEMS: {
        Py_ssize_t n = PyList_GET_SIZE(holder);
        if (!PyTuple_CheckExact(expected) || PyTuple_GET_SIZE(expected) != n) return 0;
        for (Py_ssize_t k = 0; k < n; k++)
            if (PyList_GET_ITEM(holder, k) != PyTuple_GET_ITEM(expected, k)) return 0;
        return 1;
    }
    case G_BYTES: {
        PyArrayObject *a = (PyArrayObject *)holder;
        return PyBytes_CheckExact(expected) && PyArray_IS_C_CONTIGUOUS(a) &&
               PyArray_NBYTES(a) == PyBytes_GET_SIZE(expected) &&
               memcmp(PyArray_DATA(a), PyBytes_AS_STRING(expected),
                      (size_t)PyArray_NBYTES(a)) == 0;
    }
    case G_SET: {
        int same = PyObject_RichCompareBool(holder, expected, Py_EQ);
        if (same < 0) PyErr_Clear();
        return same == 1;
    }
    case G_ATTR:
        now = PyObject_GetAttr(holder, key);
        if (now == NULL) { PyErr_Clear(); now = Py_NewRef(ABSENT); }
        Py_DECREF(now);
        return now == expected;
    }
    return 0;
}

/* Return 1 when every parsed guard holds. */
static int guards_hold(const Guard *g, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (!guard_holds(g[i].kind, g[i].holder, g[i].key, PyList_GET_ITEM(g[i].list, 3)))
            return 0;
    return 1;
}

/* Return a new array of the parsed guards of a checked tuple (NULL: no memory, or n 0). */
static Guard *parse_guards(PyObject *guards) {
    Py_ssize_t n = PyTuple_GET_SIZE(guards);
    Guard *g = n ? PyMem_Calloc((size_t)n, sizeof(Guard)) : NULL;
    if (n && g == NULL) { PyErr_NoMemory(); return NULL; }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *list = PyTuple_GET_ITEM(guards, i);
        g[i].kind = (int)PyLong_AsLong(PyList_GET_ITEM(list, 0));
        g[i].holder = PyList_GET_ITEM(list, 1);
        g[i].key = PyList_GET_ITEM(list, 2);
        g[i].list = list;
    }
    return g;
}

/* Parse (code, constants, addresses, guards) into a new Spec, or set ValueError. */
static Spec *parse_spec(PyObject *item, PyObject *keep) {
    PyObject *code, *consts, *addresses, *guards;
    int version;
    if (!PyArg_ParseTuple(item, "iO!O!O!O!", &version, &PyTuple_Type, &code, &PyTuple_Type,
                          &consts, &PyTuple_Type, &addresses, &PyTuple_Type, &guards))
        return NULL;
    if (version != SPEC_VERSION) {
        PyErr_Format(PyExc_ValueError, "fast-path spec version %d, this extension reads %d",
                     version, SPEC_VERSION);
        return NULL;
    }
    if (check_guards(guards) < 0) {
        PyErr_SetString(PyExc_ValueError, "malformed fast-path guards");
        return NULL;
    }
    Spec *s = PyMem_Calloc(1, sizeof(Spec));
    if (s == NULL) { PyErr_NoMemory(); return NULL; }
    Reader r = {code, 0, PyTuple_GET_SIZE(code), 0};
    s->nargs = next_count(&r, MAX_ARGS);
    s->nsym = next_count(&r, MAX_SYMS);
    s->single = (int)next_int(&r);
    s->nalloc = next_count(&r, MAX_ALLOC);
    s->nconst = next_count(&r, MAX_BUFS);
    s->ncalls = next_count(&r, MAX_CALLS);
    s->nout = next_count(&r, MAX_OUT);
    s->out_tuple = (int)next_int(&r);
    int bad = r.failed || s->single >= s->nsym || s->nconst != PyTuple_GET_SIZE(consts) ||
              s->ncalls != PyTuple_GET_SIZE(addresses) || s->nout == 0 ||
              (!s->out_tuple && s->nout != 1);
    for (int i = 0; !bad && i < s->ncalls; i++) {
        unsigned long long address = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(addresses, i));
        if (address == 0 || PyErr_Occurred()) { PyErr_Clear(); bad = 1; break; }
        s->calls[i].kernel = (kernel_fn)(uintptr_t)address;
    }
    bad = bad || parse_args(&r, s) || r.failed || parse_syms(&r, s) || r.failed ||
          parse_rest(&r, s) || r.failed || r.at != r.n;
    for (int i = 0; !bad && i < s->nconst; i++) {
        PyObject *c = PyTuple_GET_ITEM(consts, i);
        if (!PyArray_CheckExact(c)) { bad = 1; break; }
        s->consts[i] = (PyArrayObject *)c;
        if (PyList_Append(keep, c) < 0) { PyMem_Free(s); return NULL; }
    }
    if (bad) {
        PyMem_Free(s);
        PyErr_SetString(PyExc_ValueError, "malformed fast-path spec");
        return NULL;
    }
    s->nguards = PyTuple_GET_SIZE(guards);
    s->guards = parse_guards(guards);
    if ((s->nguards && s->guards == NULL) || PyList_Append(keep, guards) < 0) {
        PyMem_Free(s->guards);
        PyMem_Free(s);
        return NULL;
    }
    return s;
}

/* ---- calling ------------------------------------------------------------------------ */

/* Store integer v as type t at out; -1 when NumPy would not convert it exactly. */
static int store_int(int t, long long v, void *out) {
    switch (t) {
    case NPY_BOOL: *(npy_bool *)out = (npy_bool)(v != 0); return 0;
    case NPY_BYTE: if (v < -128 || v > 127) return -1; *(int8_t *)out = (int8_t)v; return 0;
    case NPY_UBYTE: if (v < 0 || v > 255) return -1; *(uint8_t *)out = (uint8_t)v; return 0;
    case NPY_SHORT: if (v < -32768 || v > 32767) return -1;
        *(int16_t *)out = (int16_t)v; return 0;
    case NPY_USHORT: if (v < 0 || v > 65535) return -1; *(uint16_t *)out = (uint16_t)v; return 0;
    case NPY_INT: if (v < INT32_MIN || v > INT32_MAX) return -1;
        *(int32_t *)out = (int32_t)v; return 0;
    case NPY_UINT: if (v < 0 || v > (long long)UINT32_MAX) return -1;
        *(uint32_t *)out = (uint32_t)v; return 0;
    case NPY_LONG: case NPY_LONGLONG: *(int64_t *)out = (int64_t)v; return 0;
    case NPY_ULONG: case NPY_ULONGLONG: if (v < 0) return -1;
        *(uint64_t *)out = (uint64_t)v; return 0;
    case NPY_FLOAT: if (v > (1LL << 24) || v < -(1LL << 24)) return -1;
        *(float *)out = (float)v; return 0;
    case NPY_DOUBLE: if (v > (1LL << 53) || v < -(1LL << 53)) return -1;
        *(double *)out = (double)v; return 0;
    }
    return -1;
}

/* Store the kernel scalar c for this call at out; -1: MISS. */
static int store_scalar(const Spec *s, const ScalSpec *c, PyObject *args,
                        const long long *sizes, void *out) {
    if (c->from_sizes) {
        long long v = 1;
        for (int k = 0; k < c->count; k++)
            if (__builtin_mul_overflow(v, sizes[c->syms[k]], &v)) return -1;
        return store_int(c->type_num, v, out);
    }
    PyObject *o = PyTuple_GET_ITEM(args, c->arg);
    const ArgSpec *a = &s->args[c->arg];
    if (a->kind == ARG_PYFLOAT) {
        double d = PyFloat_AS_DOUBLE(o);
        if (c->type_num == NPY_DOUBLE) { *(double *)out = d; return 0; }
        float f = (float)d;
        if (isinf(f) && !isinf(d)) return -1;   /* NumPy warns on this overflow */
        *(float *)out = f;
        return 0;
    }
    if (a->kind == ARG_PYBOOL) return store_int(c->type_num, o == Py_True, out);
    if (a->kind == ARG_PYINT) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) { PyErr_Clear(); return -1; }
        return store_int(c->type_num, v, out);
    }
    PyArray_ScalarAsCtype(o, out);   /* a NumPy scalar of the parameter's own dtype */
    return 0;
}

/* signature.py's c_ordered_strided: every axis longer than 1 has a nonzero stride and
   |strides| do not grow along them (NumPy reduces such arrays in C index order). */
static int c_ordered_strided(PyArrayObject *x) {
    const npy_intp *shape = PyArray_DIMS(x), *strides = PyArray_STRIDES(x);
    npy_intp last = -1;
    for (int k = 0; k < PyArray_NDIM(x); k++) {
        if (shape[k] == 1) continue;
        npy_intp step = strides[k] < 0 ? -strides[k] : strides[k];
        if (step == 0 || (last >= 0 && step > last)) return 0;
        last = step;
    }
    return 1;
}

/* Return 0 when argument o matches a; -1: MISS. */
static int match_arg(const ArgSpec *a, PyObject *o) {
    switch (a->kind) {
    case ARG_PYFLOAT: return PyFloat_CheckExact(o) ? 0 : -1;
    case ARG_PYBOOL: return PyBool_Check(o) ? 0 : -1;
    case ARG_NPSCALAR: return Py_TYPE(o) == a->scalar_type ? 0 : -1;
    case ARG_PYINT: {
        if (!PyLong_CheckExact(o)) return -1;
        if (!a->has_range) return 0;
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) { PyErr_Clear(); return -1; }
        return (v < a->lo || v > a->hi) ? -1 : 0;
    }
    case ARG_ARRAY: {
        if (!PyArray_CheckExact(o)) return -1;
        PyArrayObject *x = (PyArrayObject *)o;
        PyArray_Descr *d = PyArray_DESCR(x);
        if (d->type_num != a->type_num || !PyArray_ISNBO(d->byteorder) ||
            PyArray_NDIM(x) != a->ndim || !PyArray_ISALIGNED(x) ||
            (PyArray_IS_C_CONTIGUOUS(x) ? 1 : 0) != a->c_contig)
            return -1;
        if (!a->c_contig && c_ordered_strided(x) != a->c_strided) return -1;
        npy_intp *shape = PyArray_DIMS(x), *strides = PyArray_STRIDES(x);
        npy_intp item = PyArray_ITEMSIZE(x);
        for (int k = 0; k < a->ndim; k++) {
            if (((shape[k] == 1) ? 1u : 0u) != ((a->ones >> k) & 1u)) return -1;
            if (strides[k] % item != 0) return -1;   /* the signature rejects these */
        }
        return 0;
    }
    }
    return -1;
}

/* Bind every size symbol; return n (the router's element count) or -1: MISS. */
static long long bind(const Spec *s, PyObject *args, long long *sizes) {
    long long product = 1;
    for (int i = 0; i < s->nsym; i++) {
        const SymSpec *y = &s->syms[i];
        long long v;
        if (y->nsrc) {
            v = PyArray_DIMS((PyArrayObject *)PyTuple_GET_ITEM(args, y->src_arg[0]))
                [y->src_axis[0]];
            for (int k = 1; k < y->nsrc; k++)
                if (PyArray_DIMS((PyArrayObject *)PyTuple_GET_ITEM(args, y->src_arg[k]))
                    [y->src_axis[k]] != v) return -1;
            if (y->has_guard && v != y->guard) return -1;
        } else {
            v = y->guard;
        }
        if (y->nonempty && v == 0) return -1;
        sizes[i] = v;
        if (__builtin_mul_overflow(product, v, &product)) return -1;  /* NumPy's sizes */
    }
    return s->single >= 0 ? sizes[s->single] : product;
}

/* Return the loop iterations of call c, filling its loop sizes into meta. */
static long long loop_work(const CallSpec *c, const long long *sizes, int64_t *meta) {
    long long work = 1;
    for (int i = 0; i < c->nloop; i++) {
        long long v = 1;
        for (int k = 0; k < c->loops[i].count; k++)
            if (__builtin_mul_overflow(v, sizes[c->loops[i].syms[k]], &v)) return LLONG_MAX;
        meta[i] = v;
        if (__builtin_mul_overflow(work, v, &work)) return LLONG_MAX;
    }
    return work;
}

/* Pack call c's (data, meta) and launch its kernel (its scalars are in holders). */
static void launch(const Spec *s, const CallSpec *c, PyObject *args, PyArrayObject **allocs,
                   int64_t *holders, int64_t *meta) {
    void *data[MAX_BUFS + MAX_SCAL];
    PyArrayObject *bufs[MAX_BUFS];
    for (int i = 0; i < c->nbuf; i++) {
        int j = c->buf_index[i];
        bufs[i] = c->buf_kind[i] == BUF_ARG ? (PyArrayObject *)PyTuple_GET_ITEM(args, j)
                : c->buf_kind[i] == BUF_ALLOC ? allocs[j] : s->consts[j];
        data[i] = PyArray_DATA(bufs[i]);
    }
    for (int i = 0; i < c->nscal; i++) data[c->nbuf + i] = &holders[i];
    for (int i = 0; i < c->nstride; i++) {
        PyArrayObject *b = bufs[c->stride_buf[i]];
        int axis = c->stride_axis[i];
        meta[c->nloop + i] = (axis < 0 || axis >= PyArray_NDIM(b)) ? 0 :
            (int64_t)(PyArray_STRIDES(b)[axis] / PyArray_ITEMSIZE(b));
    }
    c->kernel(data, meta);
}

static PyObject *run_spec(Table *t, const Spec *s, PyObject *args) {
    if (PyTuple_GET_SIZE(args) != s->nargs) return MISS;
    for (int i = 0; i < s->nargs; i++)
        if (match_arg(&s->args[i], PyTuple_GET_ITEM(args, i))) return MISS;
    if (s->nguards && !guards_hold(s->guards, s->nguards)) return MISS;
    long long sizes[MAX_SYMS];
    long long n = bind(s, args, sizes);
    if (n < 0 || n >= t->n_limit) return MISS;
    /* every check before any allocation or launch: a MISS leaves nothing half done */
    int64_t meta[MAX_CALLS][MAX_LOOP + MAX_STRIDES];
    int64_t holders[MAX_CALLS][MAX_SCAL];
    long long work = 0;
    for (int c = 0; c < s->ncalls; c++) {
        const CallSpec *call = &s->calls[c];
        long long calls_work = loop_work(call, sizes, meta[c]);
        if (calls_work > t->work_limit) return MISS;
        work += calls_work;
        for (int i = 0; i < call->nscal; i++)
            if (store_scalar(s, &call->scal[i], args, sizes, &holders[c][i])) return MISS;
    }
    if (work > t->work_limit) return MISS;
    int64_t started = now_ns();
    PyArrayObject *allocs[MAX_ALLOC];
    for (int i = 0; i < s->nalloc; i++) {
        npy_intp dims[MAX_ND];
        for (int d = 0; d < s->allocs[i].ndim; d++) {
            int sym = s->allocs[i].dims[d];
            dims[d] = sym >= 0 ? (npy_intp)sizes[sym] : (npy_intp)(-sym - 1);
        }
        allocs[i] = (PyArrayObject *)PyArray_SimpleNew(s->allocs[i].ndim, dims,
                                                       s->allocs[i].type_num);
        if (allocs[i] == NULL) {
            for (int k = 0; k < i; k++) Py_DECREF(allocs[k]);
            return NULL;
        }
    }
    for (int c = 0; c < s->ncalls; c++)
        launch(s, &s->calls[c], args, allocs, holders[c], meta[c]);
    /* results: the outputs in order; allocations that are not outputs are dropped */
    PyObject *results[MAX_OUT];
    for (int i = 0; i < s->nout; i++) {
        PyArrayObject *a = allocs[s->out_alloc[i]];
        Py_INCREF(a);
        results[i] = (s->out_scalar[i] && PyArray_NDIM(a) == 0) ? PyArray_Return(a)
                                                                : (PyObject *)a;
    }
    for (int i = 0; i < s->nalloc; i++) Py_DECREF(allocs[i]);
    for (int i = 0; i < s->nout; i++) {
        if (results[i] == NULL) {
            for (int k = 0; k < s->nout; k++) Py_XDECREF(results[k]);
            return NULL;
        }
    }
    int64_t ns = now_ns() - started;   /* the device time, as the full path measures it */
    t->count[3 + t->count[1] % t->ring] = ns;
    t->count[1] += 1;
    t->count[2] += ns;
    if (!s->out_tuple) return results[0];
    PyObject *tuple = PyTuple_New(s->nout);
    if (tuple == NULL) {
        for (int k = 0; k < s->nout; k++) Py_DECREF(results[k]);
        return NULL;
    }
    for (int i = 0; i < s->nout; i++) PyTuple_SET_ITEM(tuple, i, results[i]);
    return tuple;
}

/* Return 1 when the settings generation and this context's config() overrides are those
   the table was armed under (and NumPy's error policy is one that only ignores or warns). */
static int gate_open(Table *t) {
    if (g_generation == NULL || *g_generation != t->generation) return 0;
    PyObject *overrides;
    if (PyContextVar_Get(g_ctxvar, NULL, &overrides) < 0) { PyErr_Clear(); return 0; }
    int same = overrides == t->overrides;
    Py_XDECREF(overrides);
    if (!same) return 0;
    if (g_fp_ctxvar != NULL) {   /* np.errstate/np.seterr made a new policy: is it one that
                                    raises, calls, prints or logs (then Python runs)? */
        PyObject *policy;
        if (PyContextVar_Get(g_fp_ctxvar, NULL, &policy) < 0) { PyErr_Clear(); return 0; }
        if (policy == t->fp_policy) {
            Py_XDECREF(policy);
            return 1;
        }
        PyObject *reports = PyObject_CallNoArgs(g_fp_reports);
        if (reports == NULL || reports != Py_False) {
            PyErr_Clear();
            Py_XDECREF(reports);
            Py_XDECREF(policy);
            return 0;
        }
        Py_DECREF(reports);
        Py_XSETREF(t->fp_policy, policy);   /* the verdict for this policy object: keep it */
    }
    return 1;
}

static PyObject *table_vectorcall(PyObject *self, PyObject *const *argv, size_t nargsf,
                                  PyObject *kwnames) {
    Table *t = (Table *)self;
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL ||
        !PyTuple_CheckExact(argv[0])) {
        PyErr_SetString(PyExc_TypeError, "Table(args: tuple)");
        return NULL;
    }
    if ((++t->tick & t->sample_mask) == 0 || !gate_open(t)) return Py_NewRef(MISS);
    for (int i = 0; i < t->nspecs; i++) {
        PyObject *result = run_spec(t, t->specs[i], argv[0]);
        if (result != MISS) {
            if (result != NULL) t->count[0] += 1;
            return result;
        }
    }
    return Py_NewRef(MISS);
}

/* ---- the Table type ----------------------------------------------------------------- */

static void table_dealloc(Table *t) {
    for (int i = 0; i < t->nspecs; i++) {
        PyMem_Free(t->specs[i]->guards);
        PyMem_Free(t->specs[i]);
    }
    Py_XDECREF(t->overrides);
    Py_XDECREF(t->counter); Py_XDECREF(t->keep); Py_XDECREF(t->fp_policy);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyObject *table_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *names[] = {"overrides", "generation", "counter", "specs", "n_limit",
                            "work_limit", "sample_mask", NULL};
    PyObject *overrides, *counter, *specs;
    long long generation, n_limit, work_limit;
    unsigned long sample_mask;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OLOO!LLk", names, &overrides, &generation,
                                     &counter, &PyTuple_Type, &specs, &n_limit, &work_limit,
                                     &sample_mask))
        return NULL;
    if (!PyArray_CheckExact(counter) || PyArray_TYPE((PyArrayObject *)counter) != NPY_INT64 ||
        PyArray_SIZE((PyArrayObject *)counter) < 4 ||
        !PyArray_ISCARRAY((PyArrayObject *)counter)) {
        PyErr_SetString(PyExc_ValueError, "counter must be a writeable C int64 array of 4 or more");
        return NULL;
    }
    if (PyTuple_GET_SIZE(specs) > MAX_SPECS) {
        PyErr_SetString(PyExc_ValueError, "too many specs");
        return NULL;
    }
    Table *t = (Table *)type->tp_alloc(type, 0);
    if (t == NULL) return NULL;
    t->vectorcall = table_vectorcall;
    t->fp_policy = NULL;    /* armed after a compiled call: the policy then reports nothing */
    if (g_fp_ctxvar != NULL && PyContextVar_Get(g_fp_ctxvar, NULL, &t->fp_policy) < 0)
        PyErr_Clear();
    t->overrides = Py_NewRef(overrides); t->generation = (int64_t)generation;
    t->counter = Py_NewRef(counter);
    t->count = (int64_t *)PyArray_DATA((PyArrayObject *)counter);
    t->ring = (long long)PyArray_SIZE((PyArrayObject *)counter) - 3;
    t->n_limit = n_limit; t->work_limit = work_limit; t->sample_mask = sample_mask;
    t->keep = PyList_New(0);
    if (t->keep == NULL) { Py_DECREF(t); return NULL; }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(specs); i++) {
        Spec *s = parse_spec(PyTuple_GET_ITEM(specs, i), t->keep);
        if (s == NULL) { Py_DECREF(t); return NULL; }
        t->specs[t->nspecs++] = s;
    }
    return (PyObject *)t;
}

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "autojit._native.fastcall.Table",
    .tp_basicsize = sizeof(Table),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Native warm-call entry: Table(overrides, generation, counter, specs, "
              "n_limit, work_limit, sample_mask)(args) -> result or MISS",
    .tp_new = table_new,
    .tp_dealloc = (destructor)table_dealloc,
    .tp_vectorcall_offset = offsetof(Table, vectorcall),
    .tp_call = PyVectorcall_Call,
};

static PyObject *configure(PyObject *mod, PyObject *args) {
    PyObject *ctxvar, *cell, *fp_ctxvar = NULL;
    PyObject *fp_reports = NULL;
    if (!PyArg_ParseTuple(args, "OO|OO", &ctxvar, &cell, &fp_ctxvar, &fp_reports))
        return NULL;
    if (!PyArray_CheckExact(cell) || PyArray_TYPE((PyArrayObject *)cell) != NPY_INT64 ||
        PyArray_SIZE((PyArrayObject *)cell) != 1 || !PyArray_ISCARRAY((PyArrayObject *)cell)) {
        PyErr_SetString(PyExc_TypeError, "the generation must be a C int64 array of one");
        return NULL;
    }
    if (!PyContextVar_CheckExact(ctxvar) || (fp_ctxvar != NULL && (
            !PyContextVar_CheckExact(fp_ctxvar) || fp_reports == NULL ||
            !PyCallable_Check(fp_reports)))) {
        PyErr_SetString(PyExc_TypeError, "expected a ContextVar");
        return NULL;
    }
    Py_XSETREF(g_ctxvar, Py_NewRef(ctxvar));
    Py_XSETREF(g_generation_cell, Py_NewRef(cell));
    g_generation = (const volatile int64_t *)PyArray_DATA((PyArrayObject *)cell);
    Py_XSETREF(g_fp_ctxvar, Py_XNewRef(fp_ctxvar));
    Py_XSETREF(g_fp_reports, Py_XNewRef(fp_reports));
    Py_RETURN_NONE;
}

static PyObject *py_guards_hold(PyObject *mod, PyObject *guards) {
    if (!PyTuple_CheckExact(guards) || check_guards(guards) < 0) {
        PyErr_SetString(PyExc_TypeError, "guards_hold(a tuple of [kind, holder, key, "
                        "expected] lists)");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(guards); i++) {
        PyObject *g = PyTuple_GET_ITEM(guards, i);
        if (!guard_holds((int)PyLong_AsLong(PyList_GET_ITEM(g, 0)), PyList_GET_ITEM(g, 1),
                         PyList_GET_ITEM(g, 2), PyList_GET_ITEM(g, 3)))
            Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* The full Python path's kernel call (lower_cpu/program.py, runtime/targets.py): what
 * ctypes did for it (an array of pointers, one of int64 sizes, the call with the GIL
 * released) at a tenth of the cost. */
#define CALL_STACK 64

/* Store the data address of ``o`` (an ndarray, or an int address) in *out; -1 and an
 * exception for anything else. */
static int address_of(PyObject *o, void **out) {
    if (PyArray_Check(o)) {
        *out = PyArray_DATA((PyArrayObject *)o);
        return 0;
    }
    if (PyLong_Check(o)) {
        *out = PyLong_AsVoidPtr(o);
        return (*out == NULL && PyErr_Occurred()) ? -1 : 0;
    }
    if (PyIndex_Check(o)) {   /* a NumPy integer */
        PyObject *i = PyNumber_Index(o);
        if (i == NULL) return -1;
        *out = PyLong_AsVoidPtr(i);
        Py_DECREF(i);
        return (*out == NULL && PyErr_Occurred()) ? -1 : 0;
    }
    PyErr_Format(PyExc_TypeError, "a kernel argument must be an ndarray or an address, "
                 "not %.100s", Py_TYPE(o)->tp_name);
    return -1;
}

static PyObject *py_addresses(PyObject *mod, PyObject *arrays) {
    PyObject *seq = PySequence_Fast(arrays, "addresses(a sequence of ndarrays)");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        void *p;
        PyObject *v = address_of(PySequence_Fast_GET_ITEM(seq, i), &p) < 0 ? NULL
                    : PyLong_FromVoidPtr(p);
        if (v == NULL) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, v);
    }
    Py_DECREF(seq);
    return out;
}

static PyObject *py_call(PyObject *mod, PyObject *args) {
    PyObject *address, *data, *meta;
    if (!PyArg_ParseTuple(args, "O!OO", &PyLong_Type, &address, &data, &meta)) return NULL;
    kernel_fn fn = (kernel_fn)PyLong_AsVoidPtr(address);
    if (fn == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a null kernel address");
        return NULL;
    }
    PyObject *d = PySequence_Fast(data, "call(address, data, meta): data is a sequence");
    if (d == NULL) return NULL;
    PyObject *m = PySequence_Fast(meta, "call(address, data, meta): meta is a sequence");
    if (m == NULL) { Py_DECREF(d); return NULL; }
    Py_ssize_t nd = PySequence_Fast_GET_SIZE(d), nm = PySequence_Fast_GET_SIZE(m);
    void *pointers_stack[CALL_STACK];
    int64_t sizes_stack[CALL_STACK];
    void **pointers = nd <= CALL_STACK ? pointers_stack : PyMem_Malloc(nd * sizeof(void *));
    int64_t *sizes = nm <= CALL_STACK ? sizes_stack : PyMem_Malloc(nm * sizeof(int64_t));
    PyObject *result = NULL;
    if (pointers == NULL || sizes == NULL) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < nd; i++)
        if (address_of(PySequence_Fast_GET_ITEM(d, i), &pointers[i]) < 0) goto done;
    for (Py_ssize_t i = 0; i < nm; i++) {
        sizes[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(m, i));
        if (sizes[i] == -1 && PyErr_Occurred()) goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    fn(pointers, sizes);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    if (pointers != pointers_stack) PyMem_Free(pointers);
    if (sizes != sizes_stack) PyMem_Free(sizes);
    Py_DECREF(d);
    Py_DECREF(m);
    return result;
}

static PyObject *set_absent(PyObject *mod, PyObject *absent) {
    Py_XSETREF(ABSENT, Py_NewRef(absent));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"addresses", py_addresses, METH_O,
     "addresses(arrays): each ndarray's data address (an int passes as it is), as a list"},
    {"call", py_call, METH_VARARGS,
     "call(address, data, meta): call the kernel at address with void *data[] (ndarrays or "
     "int addresses) and int64 meta[], the GIL released"},
    {"guards_hold", py_guards_hold, METH_O,
     "guards_hold(guards): True when every guard reads its expected object (identity)"},
    {"set_absent", set_absent, METH_O,
     "set_absent(obj): the object guards expect where a dict key or cell is missing"},
    {"configure", configure, METH_VARARGS,
     "configure(overrides_var, generation[, fp_policy_var, fp_reports]): where the gate "
     "reads the config() overrides (by identity), the settings generation (an int64 array "
     "of one) and NumPy's error policy (fp_reports() -> bool on a new one)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "autojit._native.fastcall",
    "Native warm-call entry of autojit dispatchers (see autojit/dispatch/fastpath.py).", -1,
    methods,
};

PyMODINIT_FUNC PyInit_fastcall(void) {
    import_array();
    if (PyType_Ready(&TableType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    MISS = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    ABSENT = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);   /* until set_absent */
    if (MISS == NULL || ABSENT == NULL ||
        PyModule_AddIntConstant(m, "SPEC_VERSION", SPEC_VERSION) < 0 ||
        PyModule_AddObjectRef(m, "MISS", MISS) < 0 ||
        PyModule_AddObjectRef(m, "Table", (PyObject *)&TableType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
