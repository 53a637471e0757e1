/*
 * autojit._native.pool: a NumPy data allocator (NEP 49) that recycles the pages of big
 * results, so the arrays autojit returns are ordinary NumPy arrays that own their data
 * (flags.owndata, base None, resize works) and still skip the first touch of fresh memory.
 *
 * Why (autojit/policy/output_pool.py has the figures): above glibc's mmap threshold every
 * allocation is a fresh mmap whose pages fault in (and are zeroed by the kernel) on first
 * touch; refilling memory already mapped is about twice as fast.
 *
 * A pool is a PyCapsule named "mem_handler" holding a PyDataMem_Handler whose ctx is a
 * Pool. ``empty(pool, shape, dtype)`` makes that handler current around one PyArray_Empty
 * only (the handler is per context in NumPy, so nothing else, in this thread or another,
 * allocates from it); NumPy stores the capsule in the array and calls our free (or
 * realloc, for resize) through it whatever handler is current later, and the capsule (so
 * the Pool) lives as long as any array allocated from it.
 *
 * Every block carries a header just below the data: big blocks (>= min_bytes) are their
 * own anonymous mapping, data page-aligned after one header page, recycled on free (the
 * idle ones bounded by ``limit`` bytes, least recently freed unmapped first); smaller
 * ones (only a resize can ask for them) are malloc'd. The header says which, so free and
 * realloc never guess from NumPy's size argument.
 *
 * Locking: one process-wide mutex around the idle lists (a few operations per 32 MiB
 * block), taken across fork by pthread_atfork so a child never inherits it held or a
 * list half-updated. No Python is called with it held; free never calls Python at all,
 * so arrays dying at interpreter shutdown are safe.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HEADER 64                      /* data alignment of the small (malloc'd) blocks */
#define MAGIC 0x6175746f6a6974ULL      /* "autojit" */
enum { KIND_MALLOC = 1, KIND_MAP = 2 };

typedef struct Block {
    uint64_t magic;
    int kind;
    size_t size;                       /* bytes asked for (what realloc copies) */
    size_t mapped;                     /* KIND_MAP: length of the mapping */
    struct Block *prev, *next;         /* idle list links (KIND_MAP, idle only) */
} Block;                               /* lies at data - HEADER */

typedef struct {
    size_t min_bytes, limit, idle_bytes;
    Block *oldest, *newest;            /* idle blocks, least recently freed first */
    unsigned long long reused, mapped, refused;
    long long refuse;                  /* maps still to refuse as ENOMEM (refuse_maps) */
} Pool;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t page;

static void fork_prepare(void) { pthread_mutex_lock(&lock); }
static void fork_release(void) { pthread_mutex_unlock(&lock); }

static Block *header(void *data) { return (Block *)((char *)data - HEADER); }
static void *data_of(Block *b, size_t offset) { return (char *)b + offset; }

static void unlink_idle(Pool *p, Block *b) {
    if (b->prev) b->prev->next = b->next; else p->oldest = b->next;
    if (b->next) b->next->prev = b->prev; else p->newest = b->prev;
    b->prev = b->next = NULL;
    p->idle_bytes -= b->mapped;
}

static void unmap(Block *b) {
    munmap((char *)b + HEADER - page, b->mapped);
}

/* A mapped block of at least `size` data bytes: an idle one of the same length, most
   recently freed first, else a fresh mapping (NULL when the system refuses). */
static void *take_mapped(Pool *p, size_t size, int *fresh) {
    size_t mapped = page + (size + page - 1) / page * page;
    if (mapped < size) return NULL;    /* overflow */
    pthread_mutex_lock(&lock);
    for (Block *b = p->newest; b; b = b->prev) {
        if (b->mapped == mapped) {
            unlink_idle(p, b);
            p->reused++;
            pthread_mutex_unlock(&lock);
            b->size = size;
            *fresh = 0;
            return data_of(b, HEADER);
        }
    }
    int refuse = p->refuse > 0;
    if (refuse) p->refuse--;
    pthread_mutex_unlock(&lock);
    char *base = refuse ? MAP_FAILED
                        : mmap(NULL, mapped, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        pthread_mutex_lock(&lock);
        p->refused++;
        pthread_mutex_unlock(&lock);
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    madvise(base, mapped, MADV_HUGEPAGE);     /* as NumPy's own allocator does above 4 MiB */
#endif
    Block *b = (Block *)(base + page - HEADER);
    b->magic = MAGIC;
    b->kind = KIND_MAP;
    b->size = size;
    b->mapped = mapped;
    b->prev = b->next = NULL;
    pthread_mutex_lock(&lock);
    p->mapped++;
    pthread_mutex_unlock(&lock);
    *fresh = 1;
    return base + page;
}

static void *take_malloc(size_t size, int zero) {
    if (size > SIZE_MAX - HEADER) return NULL;
    void *base = NULL;
    if (posix_memalign(&base, HEADER, HEADER + (size ? size : 1))) return NULL;
    Block *b = base;
    b->magic = MAGIC;
    b->kind = KIND_MALLOC;
    b->size = size;
    b->mapped = 0;
    b->prev = b->next = NULL;
    if (zero) memset(data_of(b, HEADER), 0, size);
    return data_of(b, HEADER);
}

static void *take(Pool *p, size_t size, int zero) {
    if (size >= p->min_bytes) {
        int fresh = 0;
        void *data = take_mapped(p, size, &fresh);
        if (data == NULL)   /* not mapped: malloc's, as NumPy's own allocator would (when */
            return take_malloc(size, zero);  /* that fails too NumPy raises MemoryError) */
        if (zero && !fresh) memset(data, 0, size);
        return data;
    }
    return take_malloc(size, zero);
}

static void give_back(Pool *p, void *data) {
    if (data == NULL) return;
    Block *b = header(data);
    if (b->kind == KIND_MALLOC) {
        free(b);
        return;
    }
    Block *evict = NULL;
    pthread_mutex_lock(&lock);
    b->prev = b->next = NULL;
    if (b->mapped > p->limit) {
        evict = b;
    } else {
        b->prev = p->newest;
        b->next = NULL;
        if (p->newest) p->newest->next = b; else p->oldest = b;
        p->newest = b;
        p->idle_bytes += b->mapped;
    }
    /* unmapping outside the lock: the evicted blocks are chained through `next` */
    while (p->idle_bytes > p->limit && p->oldest) {
        Block *old = p->oldest;
        unlink_idle(p, old);
        old->next = evict;
        evict = old;
    }
    pthread_mutex_unlock(&lock);
    while (evict) {
        Block *next = evict->next;
        unmap(evict);
        evict = next;
    }
}

static void *h_malloc(void *ctx, size_t size) { return take(ctx, size, 0); }

static void *h_calloc(void *ctx, size_t n, size_t elsize) {
    if (elsize && n > SIZE_MAX / elsize) return NULL;
    return take(ctx, n * elsize, 1);
}

static void h_free(void *ctx, void *data, size_t size) {
    (void)size;
    give_back(ctx, data);
}

static void *h_realloc(void *ctx, void *data, size_t size) {
    Pool *p = ctx;
    if (data == NULL) return take(p, size, 0);
    Block *b = header(data);
    if (b->kind == KIND_MAP && size >= p->min_bytes && page + size <= b->mapped) {
        b->size = size;                /* still fits its mapping: stays where it is */
        return data;
    }
    void *moved = take(p, size, 0);
    if (moved == NULL) return NULL;    /* the old block stays valid, as realloc's does */
    memcpy(moved, data, b->size < size ? b->size : size);
    give_back(p, data);
    return moved;
}

static void clear_idle(Pool *p) {
    pthread_mutex_lock(&lock);
    Block *list = p->oldest;
    p->oldest = p->newest = NULL;
    p->idle_bytes = 0;
    pthread_mutex_unlock(&lock);
    while (list) {
        Block *next = list->next;
        unmap(list);
        list = next;
    }
}

static void destroy(PyObject *capsule) {
    /* the last array from this pool is gone (each holds the capsule) and so is the pool */
    PyDataMem_Handler *handler = PyCapsule_GetPointer(capsule, "mem_handler");
    if (handler == NULL) return;
    Pool *p = handler->allocator.ctx;
    clear_idle(p);
    free(p);
    free(handler);
}

static Pool *pool_of(PyObject *capsule) {
    PyDataMem_Handler *handler = PyCapsule_GetPointer(capsule, "mem_handler");
    if (handler == NULL) return NULL;
    if (handler->allocator.free != h_free) {
        PyErr_SetString(PyExc_TypeError, "not an autojit output pool");
        return NULL;
    }
    return handler->allocator.ctx;
}

static PyObject *new_pool(PyObject *self, PyObject *args) {
    Py_ssize_t min_bytes;
    if (!PyArg_ParseTuple(args, "n", &min_bytes)) return NULL;
    if (min_bytes < (Py_ssize_t)page) {
        PyErr_SetString(PyExc_ValueError, "min_bytes must be at least a page");
        return NULL;
    }
    PyDataMem_Handler *handler = calloc(1, sizeof *handler);
    Pool *p = calloc(1, sizeof *p);
    if (handler == NULL || p == NULL) {
        free(handler);
        free(p);
        return PyErr_NoMemory();
    }
    p->min_bytes = (size_t)min_bytes;
    strcpy(handler->name, "autojit_output_pool");
    handler->version = 1;
    handler->allocator = (PyDataMemAllocator){p, h_malloc, h_calloc, h_realloc, h_free};
    PyObject *capsule = PyCapsule_New(handler, "mem_handler", destroy);
    if (capsule == NULL) {
        free(handler);
        free(p);
    }
    return capsule;
}

/* empty(pool, shape, dtype, limit): np.empty(shape, dtype) with the pool's handler current
   for that one allocation; idle blocks are bounded by `limit` bytes from now on. */
static PyObject *pool_empty(PyObject *self, PyObject *args) {
    PyObject *capsule, *shape_obj, *dtype_obj;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "OOOn", &capsule, &shape_obj, &dtype_obj, &limit)) return NULL;
    Pool *p = pool_of(capsule);
    if (p == NULL) return NULL;
    npy_intp dims[NPY_MAXDIMS];
    Py_ssize_t ndim = PyArray_IntpFromSequence(shape_obj, dims, NPY_MAXDIMS);
    if (ndim < 0) return NULL;
    PyArray_Descr *dtype = NULL;
    if (!PyArray_DescrConverter(dtype_obj, &dtype)) return NULL;
    pthread_mutex_lock(&lock);
    p->limit = limit > 0 ? (size_t)limit : 0;
    pthread_mutex_unlock(&lock);
    PyObject *previous = PyDataMem_SetHandler(capsule);
    PyObject *array = NULL;
    if (previous != NULL) {
        array = PyArray_Empty((int)ndim, dims, dtype, 0);   /* steals dtype */
        dtype = NULL;
        PyObject *restored = PyDataMem_SetHandler(previous);
        Py_DECREF(previous);
        if (restored == NULL) Py_CLEAR(array);
        else Py_DECREF(restored);
    }
    Py_XDECREF(dtype);
    return array;
}

/* clear(pool[, limit_bytes]): unmap every idle block; with a limit, bound them from now on
   (0: every block still in use is unmapped when its array dies) */
static PyObject *pool_clear(PyObject *self, PyObject *args) {
    PyObject *capsule;
    Py_ssize_t limit = -1;
    if (!PyArg_ParseTuple(args, "O|n", &capsule, &limit)) return NULL;
    Pool *p = pool_of(capsule);
    if (p == NULL) return NULL;
    if (limit >= 0) {
        pthread_mutex_lock(&lock);
        p->limit = (size_t)limit;
        pthread_mutex_unlock(&lock);
    }
    clear_idle(p);
    Py_RETURN_NONE;
}

/* stats(pool) -> (reused, mapped, refused, idle_bytes) */
static PyObject *pool_stats(PyObject *self, PyObject *capsule) {
    Pool *p = pool_of(capsule);
    if (p == NULL) return NULL;
    pthread_mutex_lock(&lock);
    unsigned long long reused = p->reused, mapped = p->mapped, refused = p->refused;
    size_t idle = p->idle_bytes;
    pthread_mutex_unlock(&lock);
    return Py_BuildValue("KKKn", reused, mapped, refused, (Py_ssize_t)idle);
}

/* refuse_maps(pool, count): the next `count` mappings fail as if the system refused them
   (ENOMEM), for the fault catalogue (tests/faults) */
static PyObject *pool_refuse_maps(PyObject *self, PyObject *args) {
    PyObject *capsule;
    long long count;
    if (!PyArg_ParseTuple(args, "OL", &capsule, &count)) return NULL;
    Pool *p = pool_of(capsule);
    if (p == NULL) return NULL;
    pthread_mutex_lock(&lock);
    p->refuse = count;
    pthread_mutex_unlock(&lock);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"new_pool", new_pool, METH_VARARGS,
     "new_pool(min_bytes) -> a NumPy mem_handler capsule recycling blocks >= min_bytes"},
    {"empty", pool_empty, METH_VARARGS,
     "empty(pool, shape, dtype, limit_bytes) -> np.empty(shape, dtype) from the pool"},
    {"clear", pool_clear, METH_VARARGS,
     "clear(pool[, limit_bytes]): unmap every idle block (and bound them from now on)"},
    {"refuse_maps", pool_refuse_maps, METH_VARARGS,
     "refuse_maps(pool, count): fail the next count mappings (fault tests)"},
    {"stats", pool_stats, METH_O, "stats(pool) -> (reused, mapped, refused, idle_bytes)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "autojit._native.pool",
                                    "NumPy allocator recycling big result blocks", -1,
                                    methods};

PyMODINIT_FUNC PyInit_pool(void) {
    import_array();
    page = (size_t)sysconf(_SC_PAGESIZE);
    static int registered = 0;
    if (!registered) {
        if (pthread_atfork(fork_prepare, fork_release, fork_release)) {
            PyErr_SetString(PyExc_OSError, "pthread_atfork failed");
            return NULL;
        }
        registered = 1;
    }
    return PyModule_Create(&module);
}
