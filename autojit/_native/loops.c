/*
 * autojit._native.loops: the native driver of a CPU loop region (runtime/native_region.py).
 *
 * A loop call's body is turned, once per call of the loop, into a flat program of int64
 * words (``code``) over a work area of int64 words (``work``: the kernels' data pointer
 * arrays, their meta arrays, the int64 scalars they read by address, the dot products'
 * operands). ``run`` executes it for the whole trip range with no Python per iteration.
 *
 * An affine value is ``base, c[0], ..., c[D-1]``: base + sum c[k] * index[k] over the
 * enclosing loops' indices (D: the nest's depth). Records, each starting with its opcode:
 *
 *   LOOP   depth, start(affine), stop(affine), step, body_words, innermost, then the
 *          body's records (innermost: the body holds no loop; a dry run visits only
 *          its first and last iteration: a check affine in its index is smallest at
 *          one of them, for the enclosing indices it is visited at)
 *   KERNEL fn, data_word, meta_word, npatch, npatch x (word, affine): the patches set
 *          work[word] = affine, then fn((void **)&work[data_word], &work[meta_word])
 *   DOT    kind (0: f64, 1: f32), fn, npatch, patches, n_word, x_word, incx, y_word, incy,
 *          out_word: NumPy's DOUBLE_dot / FLOAT_dot on its BLAS path (sum = 0.; sum +=
 *          cblas_?dot(chunk, ...) per chunk; a length 0 gives +0.0, as matmul's loop does)
 *   COPY   dst, src, bytes: memcpy (a carried value's next version into its buffer)
 *   PCOPY  npatch, patches, dst_word, src_word, bytes: memcpy between the addresses the
 *          patches put in work[dst_word], work[src_word] (an inner loop's first value)
 *   WHILE  cond, count_word, body_words, then the body's records: run the body while the
 *          byte at address ``cond`` is nonzero (the body's last records copy its next
 *          condition there), counting iterations in work[count_word]; a dry run runs the
 *          body once (no index of a while loop moves: its checks are the enclosing ones')
 *   EXIT   flag: the first record of a ``for`` body with a break: the byte at address
 *          ``flag`` nonzero (its break flag's buffer: its first value copied in as the
 *          loop starts, each iteration's next value at its end) ends the enclosing LOOP
 *          before this iteration, i.e. after the one that set it (at any depth of the
 *          nest); a dry run skips it (it proves every iteration of the range, a superset)
 *   CHECK  affine: the value must be >= 0 (a view bound inside its array, a size that
 *          NumPy would not clamp); only a dry run (``dry`` true) evaluates checks, and
 *          only a dry run skips kernels and dots: it walks the nest to prove every
 *          iteration's views are what the affine forms say before anything runs.
 *
 * A dry run gets the program as built (affine forms MAX_DEPTH words wide after their base);
 * a run gets its run form (``native_region._run_form``: no CHECK records, affine forms as
 * wide as the nest, summed unrolled, each patch ``word, step, affine``) and walks the nest
 * with a stack of open loops (``run_fast``: no C call per iteration); in an innermost
 * loop's iterations after its first, each patched word moves by its step (the affine
 * form's coefficient of that loop's index times the loop's step) instead of being
 * evaluated again.
 *
 * ``run`` returns 0, or 1 where a dry run found a failing check (the caller then runs the
 * Python host loop, which does what NumPy does). Single-threaded; the GIL is released while
 * it runs (as fastcall.call releases it around one kernel), taken back only to look for a
 * signal every 4096 iterations of a while loop.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <limits.h>
#include <string.h>

#define MAX_DEPTH 16
#define CHUNK ((int64_t)(INT_MAX / 2 + 1))   /* NumPy's NPY_CBLAS_CHUNK */

enum { OP_LOOP = 1, OP_KERNEL = 2, OP_DOT = 3, OP_CHECK = 4, OP_COPY = 5, OP_WHILE = 6,
       OP_PCOPY = 7, OP_EXIT = 8 };

#define EXITED 4   /* run_block's answer where an EXIT record's flag is set */

typedef void (*kernel_fn)(void **data, const int64_t *meta);
typedef double (*ddot_fn)(int64_t n, const double *x, int64_t incx, const double *y,
                          int64_t incy);
typedef float (*sdot_fn)(int64_t n, const float *x, int64_t incx, const float *y,
                         int64_t incy);

typedef struct {
    const int64_t *code, *code_end;
    int64_t *work;
    int64_t index[MAX_DEPTH];
    int depth;        /* D: words per affine after its base */
    int dry;
    PyThreadState *saved;   /* the GIL released while it runs (NULL: held) */
} Machine;

static inline int64_t affine(const Machine *m, const int64_t *a) {
    const int64_t *x = m->index;
    switch (m->depth) {   /* the nest's own depth (a run program's width): unrolled */
    case 0: return a[0];
    case 1: return a[0] + a[1] * x[0];
    case 2: return a[0] + a[1] * x[0] + a[2] * x[1];
    case 3: return a[0] + a[1] * x[0] + a[2] * x[1] + a[3] * x[2];
    default: {
        int64_t value = a[0];
        for (int k = 0; k < m->depth; k++)
            value += a[1 + k] * x[k];
        return value;
    }
    }
}

static inline __attribute__((always_inline)) const int64_t *patch(Machine *m, const int64_t *p,
                                                                   int64_t count) {
    const int stepped = !m->dry;   /* a run's program: each patch carries its step */
    for (int64_t i = 0; i < count; i++) {
        m->work[p[0]] = affine(m, p + 1 + stepped);
        p += 2 + stepped + m->depth;
    }
    return p;
}

static inline __attribute__((always_inline)) void dot(Machine *m, int64_t kind, int64_t fn,
                                                       const int64_t *f) {
    int64_t n = m->work[f[0]], incx = f[2], incy = f[4];
    char *x = (char *)(intptr_t)m->work[f[1]], *y = (char *)(intptr_t)m->work[f[3]];
    double sum = 0.;   /* double for stability, as NumPy sums its chunks */
    if (kind == 0) {
        while (n > 0) {
            int64_t chunk = n < CHUNK ? n : CHUNK;
            sum += ((ddot_fn)(intptr_t)fn)(chunk, (const double *)x, incx,
                                           (const double *)y, incy);
            x += chunk * incx * (int64_t)sizeof(double);
            y += chunk * incy * (int64_t)sizeof(double);
            n -= chunk;
        }
        *(double *)(intptr_t)m->work[f[5]] = sum;
    } else {
        while (n > 0) {
            int64_t chunk = n < CHUNK ? n : CHUNK;
            sum += ((sdot_fn)(intptr_t)fn)(chunk, (const float *)x, incx,
                                           (const float *)y, incy);
            x += chunk * incx * (int64_t)sizeof(float);
            y += chunk * incy * (int64_t)sizeof(float);
            n -= chunk;
        }
        *(float *)(intptr_t)m->work[f[5]] = (float)sum;
    }
}

/* Run the records in [p, end); return 1 where a dry run's check fails. */
static int run_block(Machine *m, const int64_t *p, const int64_t *end) {
    const int width = 1 + m->depth;
    while (p < end) {
        switch (p[0]) {
        case OP_LOOP: {
            int d = (int)p[1];
            int64_t start = affine(m, p + 2), stop = affine(m, p + 2 + width);
            int64_t step = p[2 + 2 * width], words = p[3 + 2 * width];
            const int64_t *body = p + 5 + 2 * width;
            if (m->dry && p[4 + 2 * width]) {   /* innermost: its two ends */
                int64_t count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                                         : (stop < start ? (start - stop - step - 1) / -step : 0);
                if (count > 0) {
                    m->index[d] = start;
                    if (run_block(m, body, body + words)) return 1;
                    m->index[d] = start + (count - 1) * step;
                    if (count > 1 && run_block(m, body, body + words)) return 1;
                }
            } else if (step > 0) {
                for (int64_t i = start; i < stop; i += step) {
                    m->index[d] = i;
                    int r = run_block(m, body, body + words);
                    if (r == EXITED) break;
                    if (r) return r;
                }
            } else {
                for (int64_t i = start; i > stop; i += step) {
                    m->index[d] = i;
                    int r = run_block(m, body, body + words);
                    if (r == EXITED) break;
                    if (r) return r;
                }
            }
            m->index[d] = 0;
            p = body + words;
            break;
        }
        case OP_KERNEL: {
            int64_t fn = p[1], data = p[2], meta = p[3], count = p[4];
            if (m->dry) {
                p += 5 + count * (2 + m->depth);
                break;
            }
            p = patch(m, p + 5, count);
            ((kernel_fn)(intptr_t)fn)((void **)&m->work[data], &m->work[meta]);
            break;
        }
        case OP_DOT: {
            int64_t kind = p[1], fn = p[2], count = p[3];
            if (m->dry) {
                p += 4 + count * (2 + m->depth) + 6;
                break;
            }
            p = patch(m, p + 4, count);
            dot(m, kind, fn, p);
            p += 6;
            break;
        }
        case OP_COPY:
            if (!m->dry)
                memcpy((void *)(intptr_t)p[1], (const void *)(intptr_t)p[2], (size_t)p[3]);
            p += 4;
            break;
        case OP_PCOPY: {
            int64_t count = p[1];
            if (m->dry) {
                p += 2 + count * (2 + m->depth) + 3;
                break;
            }
            p = patch(m, p + 2, count);
            memcpy((void *)(intptr_t)m->work[p[0]], (const void *)(intptr_t)m->work[p[1]],
                   (size_t)p[2]);
            p += 3;
            break;
        }
        case OP_WHILE: {
            const unsigned char *cond = (const unsigned char *)(intptr_t)p[1];
            int64_t count_word = p[2], words = p[3];
            const int64_t *body = p + 4;
            if (m->dry) {
                if (run_block(m, body, body + words)) return 1;
            } else {
                int64_t count = 0;
                while (*cond) {
                    int r = run_block(m, body, body + words);
                    if (r) return r;
                    count++;
                    if ((count & 4095) == 0) {
                        int raised;
                        if (m->saved) PyEval_RestoreThread(m->saved);
                        raised = PyErr_CheckSignals() < 0;
                        if (m->saved) m->saved = PyEval_SaveThread();
                        if (raised) {
                            m->work[count_word] = count;
                            return 3;
                        }
                    }
                }
                m->work[count_word] = count;
            }
            p = body + words;
            break;
        }
        case OP_EXIT:
            if (!m->dry && *(const unsigned char *)(intptr_t)p[1]) return EXITED;
            p += 2;
            break;
        case OP_CHECK:
            if (m->dry && affine(m, p + 1) < 0) return 1;
            p += 1 + width;
            break;
        default:
            return 2;
        }
    }
    return 0;
}

/* A run (not a dry one) of the records in [p, end): the loop nest walked with a stack of
 * its open loops, not a call per iteration (a while loop, only ever the outermost record,
 * is run_block's). Returns as run_block does. */
typedef struct {
    const int64_t *body, *end;   /* the loop's body, and the record after the loop */
    int64_t i, stop, step;
    int d, innermost;
} Frame;

/* The affine forms of a run: D index terms (a constant: each depth's copy of run_fast has
 * its sums unrolled), the indices in the run's own array (no store into the work area
 * can change them). */
static inline __attribute__((always_inline)) int64_t affine_d(const int64_t *a,
                                                             const int64_t *x, int D) {
    int64_t value = a[0];
    for (int k = 0; k < D; k++)
        value += a[1 + k] * x[k];
    return value;
}

/* A run's patches: ``word, step, affine`` each; ``moved``: an innermost loop's iteration
 * after its first, where each word moves by its step (the affine form's value). */
static inline __attribute__((always_inline)) const int64_t *patch_d(
        int64_t *work, const int64_t *p, int64_t count, const int64_t *x, int D, int moved) {
    if (moved) {
        for (int64_t i = 0; i < count; i++, p += 3 + D)
            work[p[0]] += p[1];
    } else {
        for (int64_t i = 0; i < count; i++, p += 3 + D)
            work[p[0]] = affine_d(p + 2, x, D);
    }
    return p;
}

/* An innermost loop whose body is only KERNEL and DOT records (LU's, forward
 * substitution's: a dot product and a 0-d kernel) runs as a tight loop after its first
 * iteration: the body decoded once per loop entry into its calls and its patches that
 * move (each word's step), every moved word bumped first (the records' words are their
 * own: no record reads another's, and no kernel or dot writes the work area), then the
 * calls in order. What the generic walk does per iteration, without its dispatch. */
#define INNER_RECORDS 8
#define INNER_PATCHES 64

typedef struct {
    int64_t op, fn, a, b;   /* KERNEL: fn, data word, meta word; DOT: fn, kind */
    const int64_t *fields;  /* DOT: its six field words */
} Call;

typedef struct {
    Call calls[INNER_RECORDS];
    int64_t word[INNER_PATCHES], step[INNER_PATCHES];
    int ncalls, npatches;
} Inner;

static inline __attribute__((always_inline)) int decode_inner(const int64_t *p,
                                                             const int64_t *end, int D,
                                                             Inner *in) {
    in->ncalls = in->npatches = 0;
    while (p < end) {
        if (in->ncalls >= INNER_RECORDS) return 0;
        Call *c = &in->calls[in->ncalls++];
        int64_t count;
        const int64_t *q;
        if (p[0] == OP_KERNEL) {
            c->op = OP_KERNEL; c->fn = p[1]; c->a = p[2]; c->b = p[3];
            count = p[4]; q = p + 5;
        } else if (p[0] == OP_DOT) {
            c->op = OP_DOT; c->b = p[1]; c->fn = p[2]; c->a = 0;
            count = p[3]; q = p + 4;
        } else {
            return 0;
        }
        for (int64_t k = 0; k < count; k++, q += 3 + D) {
            if (q[1] == 0) continue;   /* the same at every iteration: set by the first */
            if (in->npatches >= INNER_PATCHES) return 0;
            in->word[in->npatches] = q[0];
            in->step[in->npatches++] = q[1];
        }
        if (c->op == OP_DOT) {
            c->fields = q;
            q += 6;
        }
        p = q;
    }
    return 1;
}

static inline __attribute__((always_inline)) void run_inner(Machine *m, int64_t *work,
                                                          const Inner *in, int64_t trips) {
    for (int64_t t = 0; t < trips; t++) {
        for (int k = 0; k < in->npatches; k++)
            work[in->word[k]] += in->step[k];
        for (int k = 0; k < in->ncalls; k++) {
            const Call *c = &in->calls[k];
            if (c->op == OP_KERNEL)
                ((kernel_fn)(intptr_t)c->fn)((void **)&work[c->a], &work[c->b]);
            else
                dot(m, c->b, c->fn, c->fields);
        }
    }
}

static inline __attribute__((always_inline)) int run_fast_d(Machine *m, const int64_t *p,
                                                           const int64_t *end, const int D) {
    Frame stack[MAX_DEPTH + 1];
    int64_t x[MAX_DEPTH] = {0};
    int64_t *work = m->work;
    int top = 0, moved = 0;   /* moved: in an innermost loop, past its first iteration */
    const int width = 1 + D;
    for (;;) {
        if (p >= end) {
            if (top == 0) return 0;
            Frame *f = &stack[top - 1];
            f->i += f->step;
            if (f->step > 0 ? f->i < f->stop : f->i > f->stop) {
                x[f->d] = f->i;
                p = f->body;
                moved = f->innermost;
                continue;
            }
            x[f->d] = 0;
            moved = 0;
            p = f->end;
            end = --top ? stack[top - 1].end : m->code_end;
            continue;
        }
        switch (p[0]) {
        case OP_LOOP: {
            int d = (int)p[1];
            int64_t start = affine_d(p + 2, x, D), stop = affine_d(p + 2 + width, x, D);
            int64_t step = p[2 + 2 * width], words = p[3 + 2 * width];
            const int64_t *body = p + 5 + 2 * width;
            if (top > MAX_DEPTH) return 2;
            Inner inner;
            if (p[4 + 2 * width] && (step > 0 ? start < stop : start > stop)
                    && decode_inner(body, body + words, D, &inner)) {
                int64_t trips = step > 0 ? (stop - start + step - 1) / step
                                         : (start - stop - step - 1) / -step;
                x[d] = start;   /* the first iteration: every patch evaluated */
                const int64_t *q = body;
                while (q < body + words) {
                    if (q[0] == OP_KERNEL) {
                        int64_t count = q[4];
                        const int64_t *r = patch_d(work, q + 5, count, x, D, 0);
                        ((kernel_fn)(intptr_t)q[1])((void **)&m->work[q[2]], &m->work[q[3]]);
                        q = r;
                    } else {   /* OP_DOT (decode_inner took nothing else) */
                        int64_t kind = q[1], fn = q[2], count = q[3];
                        const int64_t *r = patch_d(work, q + 4, count, x, D, 0);
                        dot(m, kind, fn, r);
                        q = r + 6;
                    }
                }
                run_inner(m, work, &inner, trips - 1);
                x[d] = 0;
                p = body + words;
                break;
            }
            if (step > 0 ? start < stop : start > stop) {
                Frame *f = &stack[top++];
                f->body = body;
                f->end = body + words;
                f->i = start;
                f->stop = stop;
                f->step = step;
                f->d = d;
                f->innermost = p[4 + 2 * width] != 0;
                moved = 0;
                x[d] = start;
                p = body;
                end = body + words;
            } else {
                p = body + words;
            }
            break;
        }
        case OP_KERNEL: {
            int64_t fn = p[1], data = p[2], meta = p[3], count = p[4];
            p = patch_d(work, p + 5, count, x, D, moved);
            ((kernel_fn)(intptr_t)fn)((void **)&m->work[data], &m->work[meta]);
            break;
        }
        case OP_DOT: {
            int64_t kind = p[1], fn = p[2], count = p[3];
            p = patch_d(work, p + 4, count, x, D, moved);
            dot(m, kind, fn, p);
            p += 6;
            break;
        }
        case OP_COPY:
            memcpy((void *)(intptr_t)p[1], (const void *)(intptr_t)p[2], (size_t)p[3]);
            p += 4;
            break;
        case OP_PCOPY: {
            int64_t count = p[1];
            p = patch_d(work, p + 2, count, x, D, moved);
            memcpy((void *)(intptr_t)m->work[p[0]], (const void *)(intptr_t)m->work[p[1]],
                   (size_t)p[2]);
            p += 3;
            break;
        }
        case OP_WHILE: {   /* only ever the outermost record: no index is set */
            const int64_t *next = p + 4 + p[3];
            int r = run_block(m, p, next);
            if (r) return r;
            p = next;
            break;
        }
        case OP_EXIT:   /* the flag set: the innermost open loop ends here */
            if (*(const unsigned char *)(intptr_t)p[1]) {
                if (top == 0) return 2;
                Frame *f = &stack[top - 1];
                x[f->d] = 0;
                moved = 0;
                p = f->end;
                end = --top ? stack[top - 1].end : m->code_end;
                break;
            }
            p += 2;
            break;
        case OP_CHECK:
            p += 1 + width;
            break;
        default:
            return 2;
        }
    }
}

static int run_fast(Machine *m, const int64_t *p, const int64_t *end) {
    switch (m->depth) {
    case 1: return run_fast_d(m, p, end, 1);
    case 2: return run_fast_d(m, p, end, 2);
    case 3: return run_fast_d(m, p, end, 3);
    case 4: return run_fast_d(m, p, end, 4);
    default: return 2;
    }
}

static PyObject *py_run(PyObject *mod, PyObject *args) {
    PyObject *code_obj, *work_obj;
    int depth, dry;
    if (!PyArg_ParseTuple(args, "OOii", &code_obj, &work_obj, &depth, &dry))
        return NULL;
    if (depth < 0 || depth > MAX_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "loop nest too deep");
        return NULL;
    }
    Py_buffer code, work;
    if (PyObject_GetBuffer(code_obj, &code, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(work_obj, &work, PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&code);
        return NULL;
    }
    Machine m;
    m.code = (const int64_t *)code.buf;
    m.work = (int64_t *)work.buf;
    m.depth = depth;
    m.dry = dry;
    for (int k = 0; k < MAX_DEPTH; k++) m.index[k] = 0;
    const int64_t *p = m.code;
    m.saved = dry ? NULL : PyEval_SaveThread();
    m.code_end = p + code.len / (Py_ssize_t)sizeof(int64_t);
    int result = dry ? run_block(&m, p, m.code_end) : run_fast(&m, p, m.code_end);
    if (m.saved) PyEval_RestoreThread(m.saved);
    PyBuffer_Release(&code);
    PyBuffer_Release(&work);
    if (result == 2) {
        PyErr_SetString(PyExc_ValueError, "bad loop program");
        return NULL;
    }
    if (result == 3)   /* a signal's handler raised (KeyboardInterrupt in a while loop) */
        return NULL;
    return PyLong_FromLong(result);
}

/* The per-call part of a kept program (native_region.Compiled.bind, _layout): what a
 * warm call of a loop would otherwise pay in Python for every argument. */

/* An array's memory extents [low, high) in bytes, as np.may_share_memory bounds them
 * (an empty array: low == high). */
static void extents(PyArrayObject *a, char **low, char **high) {
    char *lo = PyArray_BYTES(a), *hi = lo;
    int nd = PyArray_NDIM(a);
    npy_intp *shape = PyArray_DIMS(a), *strides = PyArray_STRIDES(a);
    for (int d = 0; d < nd; d++) {
        if (shape[d] == 0) {
            *low = *high = lo;
            return;
        }
        if (strides[d] > 0) hi += strides[d] * (shape[d] - 1);
        else lo += strides[d] * (shape[d] - 1);
    }
    *low = lo;
    *high = hi + PyArray_ITEMSIZE(a);
}

static int may_share(PyObject *a, PyObject *b) {
    if (!PyArray_Check(a) || !PyArray_Check(b)) return 0;
    char *al, *ah, *bl, *bh;
    extents((PyArrayObject *)a, &al, &ah);
    extents((PyArrayObject *)b, &bl, &bh);
    if (al == ah || bl == bh) return 0;
    return al < bh && bl < ah;
}

static int64_t *words_of(PyObject *obj, Py_ssize_t *count) {
    if (!PyArray_Check(obj) || PyArray_TYPE((PyArrayObject *)obj) != NPY_INT64
            || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)obj)) {
        PyErr_SetString(PyExc_TypeError, "bind: int64 C-contiguous arrays expected");
        return NULL;
    }
    *count = PyArray_SIZE((PyArrayObject *)obj);
    return (int64_t *)PyArray_DATA((PyArrayObject *)obj);
}

/* bind(current, overlaps, patches) -> bool: False where a pair (a, b) of ``overlaps``
 * (a tuple of int pairs) may share memory (np.may_share_memory's bounds), else, for each
 * (dst, base, words, froms) of ``patches`` (int64 arrays), dst[w] = base[w] + the data
 * address of current[f] (0: not an array) for w, f in zip(words, froms); True. */
static PyObject *py_bind(PyObject *mod, PyObject *args) {
    PyObject *current, *overlaps, *patches;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyTuple_Type, &current, &PyTuple_Type, &overlaps,
                          &PyTuple_Type, &patches))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(current);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(overlaps); k++) {
        PyObject *pair = PyTuple_GET_ITEM(overlaps, k);
        Py_ssize_t a, b;
        if (!PyArg_ParseTuple(pair, "nn", &a, &b)) return NULL;
        if (a < 0 || b < 0 || a >= n || b >= n) {
            PyErr_SetString(PyExc_IndexError, "bind: an overlap pair out of range");
            return NULL;
        }
        if (may_share(PyTuple_GET_ITEM(current, a), PyTuple_GET_ITEM(current, b)))
            Py_RETURN_FALSE;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(patches); k++) {
        PyObject *patch;
        PyObject *dst_obj, *base_obj, *words_obj, *froms_obj;
        patch = PyTuple_GET_ITEM(patches, k);
        if (!PyArg_ParseTuple(patch, "OOOO", &dst_obj, &base_obj, &words_obj, &froms_obj))
            return NULL;
        Py_ssize_t nd, nb, nw, nf;
        int64_t *dst = words_of(dst_obj, &nd), *base = words_of(base_obj, &nb);
        int64_t *words = words_of(words_obj, &nw), *froms = words_of(froms_obj, &nf);
        if (!dst || !base || !words || !froms) return NULL;
        if (nw != nf || nb != nd) {
            PyErr_SetString(PyExc_ValueError, "bind: mismatched patch arrays");
            return NULL;
        }
        for (Py_ssize_t i = 0; i < nw; i++) {
            int64_t w = words[i], f = froms[i];
            if (w < 0 || w >= nd || f < 0 || f >= n) {
                PyErr_SetString(PyExc_IndexError, "bind: a patch out of range");
                return NULL;
            }
            PyObject *v = PyTuple_GET_ITEM(current, f);
            int64_t address = PyArray_Check(v)
                ? (int64_t)(intptr_t)PyArray_DATA((PyArrayObject *)v) : 0;
            dst[w] = base[w] + address;
        }
    }
    Py_RETURN_TRUE;
}

/* layout(current) -> tuple: per value what a kept program depends on
 * (native_region._layout): an array's (shape, strides, dtype, writeable, type), an int's
 * (type, value), anything else its type. */
static PyObject *py_layout(PyObject *mod, PyObject *current) {
    if (!PyTuple_Check(current)) {
        PyErr_SetString(PyExc_TypeError, "layout: a tuple expected");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(current);
    PyObject *out = PyTuple_New(n);
    if (!out) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *v = PyTuple_GET_ITEM(current, k), *part;
        if (PyArray_Check(v)) {
            PyArrayObject *a = (PyArrayObject *)v;
            int nd = PyArray_NDIM(a);
            PyObject *shape = PyTuple_New(nd), *strides = PyTuple_New(nd);
            if (!shape || !strides) {
                Py_XDECREF(shape);
                Py_XDECREF(strides);
                Py_DECREF(out);
                return NULL;
            }
            for (int d = 0; d < nd; d++) {
                PyTuple_SET_ITEM(shape, d, PyLong_FromSsize_t(PyArray_DIM(a, d)));
                PyTuple_SET_ITEM(strides, d, PyLong_FromSsize_t(PyArray_STRIDE(a, d)));
            }
            part = Py_BuildValue("(NNOOO)", shape, strides, (PyObject *)PyArray_DESCR(a),
                                 PyArray_ISWRITEABLE(a) ? Py_True : Py_False,
                                 (PyObject *)Py_TYPE(v));
        } else if (PyLong_CheckExact(v) || PyArray_IsScalar(v, Integer)) {
            PyObject *value = PyNumber_Index(v);
            part = value ? Py_BuildValue("(ON)", (PyObject *)Py_TYPE(v), value) : NULL;
        } else {
            part = (PyObject *)Py_TYPE(v);
            Py_INCREF(part);
        }
        if (!part) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, k, part);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"run", py_run, METH_VARARGS,
     "run(code, work, depth, dry) -> 0, or 1 where a dry run's check fails"},
    {"bind", py_bind, METH_VARARGS,
     "bind(current, overlaps, patches) -> False where a pair may share memory, else "
     "puts each argument's address into the patched words"},
    {"layout", py_layout, METH_O, "layout(current) -> each value's layout key"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "loops", NULL, -1, methods};

PyMODINIT_FUNC PyInit_loops(void) {
    import_array();
    return PyModule_Create(&module);
}
