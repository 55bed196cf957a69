/* gpuscope._groupstats: per-group sums, means and variances of float64 values, computed the
 * way pandas' groupby computes them (its cython group_sum / group_mean: Kahan-compensated
 * sums in row order; group_var: Welford's running mean and sum of squared deviations), so
 * `analyze --json` gives the same figures, to the last bit, without importing pandas; and the
 * order statistics of each group (medians, quantiles) without sorting or copying every value.
 * gpuscope/analysis/evidence/log/groupstats.py falls back to pandas itself where this is not built.
 *
 *   sums, counts = kahan_sums(labels, values, k)        labels: int64 in [0, k) (-1: no group)
 *   means, variances = welford(labels, values, k, ddof)
 *   sums, counts, variances, rows, monotonic = moments(labels, values, k, ddof)
 *   picked, mixed_zeros = select_ranks(labels, values, k, ranks)
 *
 * moments and select_ranks take labels of any signed integer width (a parser's int8 / int32
 * codes as they are: no int64 copy of a million labels); select_ranks also None (one group)
 * and values of any stride (a column of a grid). Other arguments are contiguous buffers
 * (numpy arrays); results are bytearrays of float64 / int64.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static int get(PyObject *o, Py_buffer *b, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (b->itemsize != itemsize) {
        PyBuffer_Release(b);
        PyErr_Format(PyExc_TypeError, "%s: expected items of %zd bytes", what, itemsize);
        return -1;
    }
    return 0;
}

/* labels and values of one call: 0 and the buffers (released by the caller), -1 on error */
static int groups(PyObject *lo, PyObject *vo, Py_ssize_t k, Py_buffer *lb, Py_buffer *vb, Py_ssize_t *n) {
    if (k < 0) { PyErr_SetString(PyExc_ValueError, "k < 0"); return -1; }
    if (get(lo, lb, 8, "labels") < 0) return -1;
    if (get(vo, vb, 8, "values") < 0) { PyBuffer_Release(lb); return -1; }
    *n = lb->len / 8;
    if (vb->len / 8 != *n) {
        PyBuffer_Release(lb); PyBuffer_Release(vb);
        PyErr_SetString(PyExc_ValueError, "labels and values differ in length");
        return -1;
    }
    return 0;
}

/* two float64 / int64 results of k items */
static int results(Py_ssize_t k, PyObject **a, PyObject **b) {
    *a = PyByteArray_FromStringAndSize(NULL, k * 8);
    *b = PyByteArray_FromStringAndSize(NULL, k * 8);
    if (!*a || !*b) { Py_XDECREF(*a); Py_XDECREF(*b); return -1; }
    memset(PyByteArray_AS_STRING(*a), 0, (size_t)k * 8);
    memset(PyByteArray_AS_STRING(*b), 0, (size_t)k * 8);
    return 0;
}

static PyObject *kahan_sums(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *lo, *vo, *so, *co;
    Py_ssize_t k, n;
    Py_buffer lb, vb;
    if (!PyArg_ParseTuple(args, "OOn", &lo, &vo, &k) || groups(lo, vo, k, &lb, &vb, &n) < 0) return NULL;
    double *comp = (double *)PyMem_Calloc((size_t)(k ? k : 1), sizeof(double));
    if (!comp || results(k, &so, &co) < 0) {
        PyMem_Free(comp); PyBuffer_Release(&lb); PyBuffer_Release(&vb);
        return PyErr_NoMemory();
    }
    double *sum = (double *)PyByteArray_AS_STRING(so);
    int64_t *cnt = (int64_t *)PyByteArray_AS_STRING(co);
    const int64_t *lab = (const int64_t *)lb.buf;
    const double *val = (const double *)vb.buf;
    int bad = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t g = lab[i];
        if (g < 0) continue;
        if (g >= k) { bad = 1; break; }
        double v = val[i];
        if (v != v) continue; /* NaN: skipped, as pandas does */
        cnt[g]++;
        double y = v - comp[g];
        double t = sum[g] + y;
        comp[g] = t - sum[g] - y;
        if (comp[g] != comp[g]) comp[g] = 0.0; /* inf - inf */
        sum[g] = t;
    }
    PyMem_Free(comp);
    PyBuffer_Release(&lb); PyBuffer_Release(&vb);
    if (bad) {
        Py_DECREF(so); Py_DECREF(co);
        PyErr_SetString(PyExc_ValueError, "a label >= k");
        return NULL;
    }
    return Py_BuildValue("NN", so, co);
}

static PyObject *welford(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *lo, *vo, *mo, *wo;
    Py_ssize_t k, n;
    int ddof;
    Py_buffer lb, vb;
    if (!PyArg_ParseTuple(args, "OOni", &lo, &vo, &k, &ddof) || groups(lo, vo, k, &lb, &vb, &n) < 0) return NULL;
    double *m2 = (double *)PyMem_Calloc((size_t)(k ? k : 1), sizeof(double));
    int64_t *nobs = (int64_t *)PyMem_Calloc((size_t)(k ? k : 1), sizeof(int64_t));
    if (!m2 || !nobs || results(k, &mo, &wo) < 0) {
        PyMem_Free(m2); PyMem_Free(nobs); PyBuffer_Release(&lb); PyBuffer_Release(&vb);
        return PyErr_NoMemory();
    }
    double *mean = (double *)PyByteArray_AS_STRING(mo);
    double *var = (double *)PyByteArray_AS_STRING(wo);
    const int64_t *lab = (const int64_t *)lb.buf;
    const double *val = (const double *)vb.buf;
    int bad = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t g = lab[i];
        if (g < 0) continue;
        if (g >= k) { bad = 1; break; }
        double v = val[i];
        if (v != v) continue;
        nobs[g]++;
        double old = mean[g];
        mean[g] += (v - old) / (double)nobs[g];
        m2[g] += (v - mean[g]) * (v - old);
    }
    for (Py_ssize_t g = 0; g < k; g++) {
        int64_t ct = nobs[g];
        var[g] = ct <= ddof ? NAN : m2[g] / (double)(ct - ddof);
        if (ct == 0) mean[g] = NAN;
    }
    PyMem_Free(m2); PyMem_Free(nobs);
    PyBuffer_Release(&lb); PyBuffer_Release(&vb);
    if (bad) {
        Py_DECREF(mo); Py_DECREF(wo);
        PyErr_SetString(PyExc_ValueError, "a label >= k");
        return NULL;
    }
    return Py_BuildValue("NN", mo, wo);
}

/* ---- labels of any signed integer width: a parser's int8 / int16 / int32 codes as they are ---- */

typedef struct {
    Py_buffer b;
    int size;        /* bytes per label: 1, 2, 4 or 8 */
    Py_ssize_t n;
} Labels;

static void release_labels(Labels *L) {
    if (L->size) PyBuffer_Release(&L->b);
}

/* None: every row in group 0 (size 0; n set from the values) */
static int get_labels(PyObject *o, Labels *L) {
    if (o == Py_None) {
        L->size = 0;
        L->n = -1;
        L->b.buf = NULL;
        return 0;
    }
    if (PyObject_GetBuffer(o, &L->b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    const char *f = L->b.format ? L->b.format : "B";
    char c = f[0] ? f[strlen(f) - 1] : 'B';   /* (a byte-order prefix such as '<' before it) */
    Py_ssize_t sz = L->b.itemsize;
    if (!strchr("bhilqn", c) || !(sz == 1 || sz == 2 || sz == 4 || sz == 8)) {
        PyBuffer_Release(&L->b);
        PyErr_SetString(PyExc_TypeError, "labels: expected signed integers");
        return -1;
    }
    L->size = (int)sz;
    L->n = L->b.len / sz;
    return 0;
}

/* run BODY for i in [0, n) with g = the i-th label (int64_t), one loop per label width */
#define FOR_LABELS(L, i, g, BODY)                                                              \
    switch ((L).size) {                                                                        \
    case 0: { for (Py_ssize_t i = 0; i < (L).n; i++) { int64_t g = 0; BODY } } break;            \
    case 1: { const int8_t *lp_ = (const int8_t *)(L).b.buf;                                   \
              for (Py_ssize_t i = 0; i < (L).n; i++) { int64_t g = lp_[i]; BODY } } break;      \
    case 2: { const int16_t *lp_ = (const int16_t *)(L).b.buf;                                 \
              for (Py_ssize_t i = 0; i < (L).n; i++) { int64_t g = lp_[i]; BODY } } break;      \
    case 4: { const int32_t *lp_ = (const int32_t *)(L).b.buf;                                 \
              for (Py_ssize_t i = 0; i < (L).n; i++) { int64_t g = lp_[i]; BODY } } break;      \
    default: { const int64_t *lp_ = (const int64_t *)(L).b.buf;                                \
              for (Py_ssize_t i = 0; i < (L).n; i++) { int64_t g = lp_[i]; BODY } } break;      \
    }

/* labels and float64 values; `strided`: the values may be a 1-d view with any stride (a
 * column of a records x components grid), else contiguous. *stride: bytes between values. */
static int labels_values(PyObject *lo, PyObject *vo, Py_ssize_t k, Labels *L, Py_buffer *vb, int strided,
                         Py_ssize_t *stride) {
    if (k < 0) { PyErr_SetString(PyExc_ValueError, "k < 0"); return -1; }
    if (get_labels(lo, L) < 0) return -1;
    Py_ssize_t nv;
    if (strided) {
        if (PyObject_GetBuffer(vo, vb, PyBUF_STRIDES | PyBUF_FORMAT) < 0) { release_labels(L); return -1; }
        if (vb->ndim != 1 || vb->itemsize != 8 || !vb->format || strcmp(vb->format, "d") != 0) {
            PyBuffer_Release(vb); release_labels(L);
            PyErr_SetString(PyExc_TypeError, "values: expected a 1-d float64 array");
            return -1;
        }
        nv = vb->shape[0];
        *stride = vb->strides[0];
    } else {
        if (get(vo, vb, 8, "values") < 0) { release_labels(L); return -1; }
        nv = vb->len / 8;
        *stride = 8;
    }
    if (L->size == 0) L->n = nv;
    if (nv != L->n) {
        release_labels(L); PyBuffer_Release(vb);
        PyErr_SetString(PyExc_ValueError, "labels and values differ in length");
        return -1;
    }
    return 0;
}

static PyObject *new_bytes(Py_ssize_t nbytes) {
    PyObject *o = PyByteArray_FromStringAndSize(NULL, nbytes);
    if (o) memset(PyByteArray_AS_STRING(o), 0, (size_t)nbytes);
    return o;
}

/* moments(labels, values, k, ddof) -> (sums, counts, variances, rows, monotonic): kahan_sums'
 * sums and counts and welford's variances in one pass, each with the same operations in the
 * same order as those two; rows counts every label in [0, k) (NaN values too: which groups
 * are present at all); monotonic: whether the labels never decrease (then pandas sums another
 * way, and the caller does too). */
static PyObject *moments(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *lo, *vo;
    Py_ssize_t k;
    int ddof;
    Labels L;
    Py_buffer vb;
    Py_ssize_t stride;
    if (!PyArg_ParseTuple(args, "OOni", &lo, &vo, &k, &ddof) || labels_values(lo, vo, k, &L, &vb, 0, &stride) < 0)
        return NULL;
    size_t kk = (size_t)(k ? k : 1);
    double *comp = (double *)PyMem_Calloc(kk, sizeof(double));
    double *mean = (double *)PyMem_Calloc(kk, sizeof(double));
    double *m2 = (double *)PyMem_Calloc(kk, sizeof(double));
    PyObject *so = new_bytes(k * 8), *co = new_bytes(k * 8), *wo = new_bytes(k * 8), *ro = new_bytes(k * 8);
    if (!comp || !mean || !m2 || !so || !co || !wo || !ro) {
        PyMem_Free(comp); PyMem_Free(mean); PyMem_Free(m2);
        Py_XDECREF(so); Py_XDECREF(co); Py_XDECREF(wo); Py_XDECREF(ro);
        release_labels(&L); PyBuffer_Release(&vb);
        return PyErr_NoMemory();
    }
    double *sum = (double *)PyByteArray_AS_STRING(so);
    int64_t *cnt = (int64_t *)PyByteArray_AS_STRING(co);
    double *var = (double *)PyByteArray_AS_STRING(wo);
    int64_t *rows = (int64_t *)PyByteArray_AS_STRING(ro);
    const double *val = (const double *)vb.buf;
    int bad = 0, mono = 1;
    int64_t prev = INT64_MIN;
    FOR_LABELS(L, i, g, {
        if (g < prev) mono = 0;
        prev = g;
        if (g < 0) continue;
        if (g >= k) { bad = 1; break; }
        rows[g]++;
        double v = val[i];
        if (v != v) continue; /* NaN: skipped, as pandas does */
        cnt[g]++;
        double y = v - comp[g];          /* kahan_sums */
        double t = sum[g] + y;
        comp[g] = t - sum[g] - y;
        if (comp[g] != comp[g]) comp[g] = 0.0;
        sum[g] = t;
        double old = mean[g];            /* welford */
        mean[g] += (v - old) / (double)cnt[g];
        m2[g] += (v - mean[g]) * (v - old);
    })
    for (Py_ssize_t g = 0; g < k; g++) {
        int64_t ct = cnt[g];
        var[g] = ct <= ddof ? NAN : m2[g] / (double)(ct - ddof);
    }
    PyMem_Free(comp); PyMem_Free(mean); PyMem_Free(m2);
    release_labels(&L); PyBuffer_Release(&vb);
    if (bad) {
        Py_DECREF(so); Py_DECREF(co); Py_DECREF(wo); Py_DECREF(ro);
        PyErr_SetString(PyExc_ValueError, "a label >= k");
        return NULL;
    }
    return Py_BuildValue("NNNNi", so, co, wo, ro, mono);
}

/* ---- order statistics per group without sorting every value ---------------------------------
 * A double's bits made an unsigned key that orders as the doubles do (-0.0 just below +0.0).
 * Per group: the keys' range; a histogram of HIST_BINS bins over it (one pass over all rows,
 * every group at once); the bins that hold the wanted ranks; one more pass gathers the values
 * of those bins alone, and a quickselect in each small gathered bin finds the ranks. A bin of
 * one key needs no gathering: its key is its value. The values at a rank are the same values
 * whatever the method; only where a group holds both -0.0 and +0.0 (equal, so a selection may
 * give either) does the caller's own partition decide, as before: such groups are flagged. */

#define HIST_CELLS (1 << 20)   /* at most this many histogram cells (4 MiB) in all */
#define MAX_RANKS 16

static inline uint64_t key_of(double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    return (u >> 63) ? ~u : (u | 0x8000000000000000ULL);
}

static inline double value_of(uint64_t key) {
    uint64_t u = (key >> 63) ? (key & 0x7FFFFFFFFFFFFFFFULL) : ~key;
    double v;
    memcpy(&v, &u, 8);
    return v;
}

static inline uint64_t next_random(uint64_t *s) {   /* xorshift64: pivots, not statistics */
    uint64_t x = *s;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    return *s = x;
}

static inline void swap_d(double *a, double *b) { double t = *a; *a = *b; *b = t; }

/* x[r] becomes the element of rank r among x[lo, hi); afterwards x[lo, r) <= x[r] <= x(r, hi)
 * (no NaN in x) */
static void select_rank(double *x, Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t r, uint64_t *rng) {
    while (hi - lo > 16) {
        Py_ssize_t len = hi - lo;
        double a = x[lo + (Py_ssize_t)(next_random(rng) % (uint64_t)len)];
        double b = x[lo + (Py_ssize_t)(next_random(rng) % (uint64_t)len)];
        double c = x[lo + (Py_ssize_t)(next_random(rng) % (uint64_t)len)];
        double p = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        Py_ssize_t lt = lo, i = lo, gt = hi - 1;   /* [lo, lt) < p, [lt, i) == p, (gt, hi) > p */
        while (i <= gt) {
            double v = x[i];
            if (v < p) { swap_d(&x[lt], &x[i]); lt++; i++; }
            else if (v > p) { swap_d(&x[i], &x[gt]); gt--; }
            else i++;
        }
        if (r < lt) hi = lt;
        else if (r > gt) lo = gt + 1;
        else return;
    }
    for (Py_ssize_t i = lo + 1; i < hi; i++) {   /* a short window: sorted */
        double v = x[i];
        Py_ssize_t j = i;
        while (j > lo && x[j - 1] > v) { x[j] = x[j - 1]; j--; }
        x[j] = v;
    }
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* select_ranks(labels, values, k, ranks) -> (picked, mixed_zeros): ranks holds m int64 ranks
 * per group (k * m, row-major; -1 or a rank >= the group's count: none); picked[g * m + j] is
 * the value of rank ranks[g * m + j] among the group's values that are not NaN (NaN for
 * none); mixed_zeros[g] is 1 where the group holds both -0.0 and +0.0 (its picks left NaN). */
static PyObject *select_ranks(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *lo, *vo, *rko;
    Py_ssize_t k;
    Labels L;
    Py_buffer vb, rb;
    Py_ssize_t stride;
    if (!PyArg_ParseTuple(args, "OOnO", &lo, &vo, &k, &rko) || labels_values(lo, vo, k, &L, &vb, 1, &stride) < 0)
        return NULL;
    if (get(rko, &rb, 8, "ranks") < 0) { release_labels(&L); PyBuffer_Release(&vb); return NULL; }
    Py_ssize_t m = k ? (rb.len / 8) / k : 0;
    if ((k && (rb.len / 8) % k) || m > MAX_RANKS || (L.size == 0 && k != 1)) {
        release_labels(&L); PyBuffer_Release(&vb); PyBuffer_Release(&rb);
        PyErr_SetString(PyExc_ValueError, "ranks: k rows of at most 16 (k = 1 without labels)");
        return NULL;
    }
    const char *vbase = (const char *)vb.buf;
#define VAL(i) (*(const double *)(vbase + (i) * stride))
    const int64_t *rank = (const int64_t *)rb.buf;
    size_t kk = (size_t)(k ? k : 1);
    PyObject *po = PyByteArray_FromStringAndSize(NULL, k * m * 8), *zo = new_bytes(k);
    uint64_t *kmin = (uint64_t *)PyMem_Malloc(kk * 8), *kmax = (uint64_t *)PyMem_Malloc(kk * 8);
    int64_t *cnt = (int64_t *)PyMem_Calloc(kk, 8), *slot = (int64_t *)PyMem_Malloc(kk * 8);
    unsigned char *zeros = (unsigned char *)PyMem_Calloc(kk, 1);  /* bit 1: -0.0 seen, bit 2: +0.0 */
    int *shift = (int *)PyMem_Calloc(kk, sizeof(int));
    uint32_t *hist = NULL;
    int64_t *toff = NULL, *tfill = NULL;
    double *buf = NULL;
    PyObject *result = NULL;
    int bad = 0;
    if (!po || !zo || !kmin || !kmax || !cnt || !slot || !zeros || !shift) { PyErr_NoMemory(); goto done; }
    double *picked = (double *)PyByteArray_AS_STRING(po);
    unsigned char *mixed = (unsigned char *)PyByteArray_AS_STRING(zo);
    for (Py_ssize_t i = 0; i < k * m; i++) picked[i] = NAN;
    for (Py_ssize_t g = 0; g < k; g++) { kmin[g] = UINT64_MAX; kmax[g] = 0; slot[g] = -1; }
    /* pass 1: each group's count, key range, signed zeros */
    FOR_LABELS(L, i, g, {
        if (g < 0) continue;
        if (g >= k) { bad = 1; break; }
        double v = VAL(i);
        if (v != v) continue;
        uint64_t key = key_of(v);
        cnt[g]++;
        if (key < kmin[g]) kmin[g] = key;
        if (key > kmax[g]) kmax[g] = key;
        if (v == 0.0) zeros[g] |= (key >> 63) ? 2 : 1;
    })
    if (bad) { PyErr_SetString(PyExc_ValueError, "a label >= k"); goto done; }
    /* the groups that need a histogram: a wanted rank, more than one key */
    Py_ssize_t nslots = 0;
    for (Py_ssize_t g = 0; g < k; g++) {
        int want = 0;
        for (Py_ssize_t j = 0; j < m; j++) {
            int64_t r = rank[g * m + j];
            if (r >= 0 && r < cnt[g]) want = 1;
        }
        if (!want) continue;
        if (zeros[g] == 3) { mixed[g] = 1; continue; }
        if (kmin[g] == kmax[g]) {   /* one value: every rank is it */
            for (Py_ssize_t j = 0; j < m; j++) {
                int64_t r = rank[g * m + j];
                if (r >= 0 && r < cnt[g]) picked[g * m + j] = value_of(kmin[g]);
            }
            continue;
        }
        slot[g] = nslots++;
    }
    if (nslots) {
        Py_ssize_t bins = HIST_CELLS / nslots;
        if (bins > 4096) bins = 4096;
        if (bins < 2) bins = 2;
        for (Py_ssize_t g = 0; g < k; g++) {
            if (slot[g] < 0) continue;
            uint64_t span = kmax[g] - kmin[g];
            int s = 0;
            while ((span >> s) >= (uint64_t)bins) s++;
            shift[g] = s;
        }
        hist = (uint32_t *)PyMem_Calloc((size_t)(nslots * bins), sizeof(uint32_t));
        if (!hist) { PyErr_NoMemory(); goto done; }
        /* pass 2: the histograms */
        FOR_LABELS(L, i, g, {
            if (g < 0 || slot[g] < 0) continue;
            double v = VAL(i);
            if (v != v) continue;
            hist[slot[g] * bins + (Py_ssize_t)((key_of(v) - kmin[g]) >> shift[g])]++;
        })
        /* the bins of the wanted ranks: one target per (group, bin) to gather; the histogram
         * row becomes bin -> target + 1 (0: not gathered) */
        Py_ssize_t ntargets = 0, total = 0;
        toff = (int64_t *)PyMem_Malloc((size_t)(nslots * m + 1) * 8);
        tfill = (int64_t *)PyMem_Calloc((size_t)(nslots * m + 1), 8);
        int64_t *tbase = (int64_t *)PyMem_Malloc((size_t)(nslots * m + 1) * 8);  /* ranks below the bin */
        int64_t *tgroup = (int64_t *)PyMem_Malloc((size_t)(nslots * m + 1) * 8);
        int64_t *tbin = (int64_t *)PyMem_Malloc((size_t)(nslots * m + 1) * 8);
        int64_t *tcount = (int64_t *)PyMem_Malloc((size_t)(nslots * m + 1) * 8);
        int64_t *rank_target = (int64_t *)PyMem_Malloc((size_t)(k * m + 1) * 8);   /* -1: none */
        if (!toff || !tfill || !tbase || !tgroup || !tbin || !tcount || !rank_target) {
            PyMem_Free(tbase); PyMem_Free(tgroup); PyMem_Free(tbin); PyMem_Free(tcount); PyMem_Free(rank_target);
            PyErr_NoMemory(); goto done;
        }
        for (Py_ssize_t i = 0; i < k * m; i++) rank_target[i] = -1;
        for (Py_ssize_t g = 0; g < k; g++) {
            if (slot[g] < 0) continue;
            uint32_t *h = hist + slot[g] * bins;
            int64_t want[MAX_RANKS];
            Py_ssize_t nw = 0;
            for (Py_ssize_t j = 0; j < m; j++) {
                int64_t r = rank[g * m + j];
                if (r >= 0 && r < cnt[g]) want[nw++] = r;
            }
            qsort(want, (size_t)nw, sizeof(int64_t), cmp_i64);
            int64_t below = 0;
            Py_ssize_t b = 0, w = 0, first_target = ntargets;
            for (; b < bins && w < nw; b++) {
                int64_t c = h[b];
                if (want[w] >= below + c) { below += c; continue; }
                /* bin b holds ranks [below, below + c): a target (gathered unless one key) */
                tgroup[ntargets] = g; tbin[ntargets] = b; tbase[ntargets] = below; tcount[ntargets] = c;
                toff[ntargets] = total;
                if (shift[g]) total += c;
                ntargets++;
                while (w < nw && want[w] < below + c) w++;
                below += c;
            }
            for (Py_ssize_t j = 0; j < m; j++) {   /* each wanted rank's target */
                int64_t r = rank[g * m + j];
                if (r < 0 || r >= cnt[g]) continue;
                for (Py_ssize_t t = first_target; t < ntargets; t++)
                    if (r >= tbase[t] && r < tbase[t] + tcount[t]) { rank_target[g * m + j] = t; break; }
            }
            memset(h, 0, (size_t)bins * sizeof(uint32_t));
            for (Py_ssize_t t = first_target; t < ntargets; t++) {
                if (shift[g] == 0) continue;   /* a bin of one key: its value, nothing gathered */
                h[tbin[t]] = (uint32_t)(t + 1);
            }
        }
        if (total) {
            buf = (double *)PyMem_Malloc((size_t)total * sizeof(double));
            if (!buf) {
                PyMem_Free(tbase); PyMem_Free(tgroup); PyMem_Free(tbin); PyMem_Free(tcount); PyMem_Free(rank_target);
                PyErr_NoMemory(); goto done;
            }
            /* pass 3: gather the wanted bins' values */
            FOR_LABELS(L, i, g, {
                if (g < 0 || slot[g] < 0 || shift[g] == 0) continue;
                double v = VAL(i);
                if (v != v) continue;
                uint32_t t = hist[slot[g] * bins + (Py_ssize_t)((key_of(v) - kmin[g]) >> shift[g])];
                if (t) buf[toff[t - 1] + tfill[t - 1]++] = v;
            })
        }
        /* each rank within its bin */
        uint64_t rng = 0x9E3779B97F4A7C15ULL;
        for (Py_ssize_t t = 0; t < ntargets; t++) {
            int64_t g = tgroup[t];
            Py_ssize_t size = (Py_ssize_t)tcount[t];
            int64_t want[MAX_RANKS];
            Py_ssize_t nw = 0;
            for (Py_ssize_t j = 0; j < m; j++)
                if (rank_target[g * m + j] == t) want[nw++] = rank[g * m + j] - tbase[t];
            qsort(want, (size_t)nw, sizeof(int64_t), cmp_i64);
            if (shift[g] == 0) {   /* the bin is one key */
                for (Py_ssize_t j = 0; j < m; j++)
                    if (rank_target[g * m + j] == t) picked[g * m + j] = value_of(kmin[g] + (uint64_t)tbin[t]);
                continue;
            }
            double *x = buf + toff[t];
            Py_ssize_t from = 0;
            for (Py_ssize_t w = 0; w < nw; w++) {
                if (w && want[w] == want[w - 1]) continue;
                select_rank(x, from, size, (Py_ssize_t)want[w], &rng);
                from = (Py_ssize_t)want[w] + 1;
            }
            for (Py_ssize_t j = 0; j < m; j++)
                if (rank_target[g * m + j] == t) picked[g * m + j] = x[rank[g * m + j] - tbase[t]];
        }
        PyMem_Free(tbase); PyMem_Free(tgroup); PyMem_Free(tbin); PyMem_Free(tcount); PyMem_Free(rank_target);
    }
    result = Py_BuildValue("OO", po, zo);
done:
    Py_XDECREF(po); Py_XDECREF(zo);
    PyMem_Free(kmin); PyMem_Free(kmax); PyMem_Free(cnt); PyMem_Free(slot); PyMem_Free(zeros);
    PyMem_Free(shift); PyMem_Free(hist); PyMem_Free(toff); PyMem_Free(tfill); PyMem_Free(buf);
    release_labels(&L); PyBuffer_Release(&vb); PyBuffer_Release(&rb);
    return result;
#undef VAL
}

static PyMethodDef methods[] = {
    {"kahan_sums", kahan_sums, METH_VARARGS, "kahan_sums(labels, values, k) -> (sums, counts) as bytearrays"},
    {"welford", welford, METH_VARARGS, "welford(labels, values, k, ddof) -> (means, variances) as bytearrays"},
    {"moments", moments, METH_VARARGS,
     "moments(labels, values, k, ddof) -> (sums, counts, variances, rows, monotonic): bytearrays and an int"},
    {"select_ranks", select_ranks, METH_VARARGS,
     "select_ranks(labels, values, k, ranks) -> (picked, mixed_zeros) as bytearrays"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "gpuscope._groupstats", "pandas' groupby sums and variances, and per-group order statistics, in C (gpuscope/_groupstats.c).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__groupstats(void) { return PyModule_Create(&module); }
