/* gpuscope.analysis.evidence.samples._gridsums: the sums a samples grid's figures take over the
 * intervals a mask selects, without the copy numpy's x[mask] makes (issue 21).
 *
 * numpy sums a float64 array by pairwise summation (its DOUBLE_pairwise_sum: under 8 values
 * one by one, up to 128 in eight running sums, beyond that the halves, cut at a multiple of 8,
 * summed apart), starting from 0.0. The same sum is taken here over the selected values in
 * their order, each read where it lies: the same additions in the same order, so the result is
 * numpy's x[mask].sum() (or (x[mask] * w[mask]).sum()) to the bit. samplegrid checks that on
 * its first use and falls back to numpy if it ever differs (tests/test_samples_scale.py too).
 *
 *   s = masked_sum(x, mask, count)        x: float64, mask: bool (count: its True values)
 *   s = masked_dot(x, w, mask, count)     the sum of x * w over the mask
 *   fill(x, out, how)                     pandas' bfill ('b'), ffill ('f'), or both ('fb')
 *
 * Arguments are C-contiguous buffers of equal length (numpy arrays). The GIL is released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stddef.h>

typedef struct {
    const double *x, *w;
    const unsigned char *m;
    Py_ssize_t i, n;
} cursor;

/* the next n selected values (x[i] or x[i] * w[i]) into buf, n <= PW_BLOCKSIZE: each value is
 * written and the slot kept only where the mask is set (no branch on the mask) */
#define PW_BLOCKSIZE 128

static inline void gather(cursor *c, double *buf, Py_ssize_t n) {
    Py_ssize_t j = 0, i = c->i;
    const double *x = c->x, *w = c->w;
    const unsigned char *m = c->m;
    if (w)
        while (j < n && i < c->n) { buf[j] = x[i] * w[i]; j += m[i] != 0; i++; }
    else
        while (j < n && i < c->n) { buf[j] = x[i]; j += m[i] != 0; i++; }
    for (; j < n; j++) buf[j] = 0.0; /* (count above the mask's: the caller checks) */
    c->i = i;
}

/* numpy's DOUBLE_pairwise_sum over the next n selected values */
static double pairwise(cursor *c, Py_ssize_t n) {
    if (n <= PW_BLOCKSIZE) {
        double a[PW_BLOCKSIZE];
        gather(c, a, n);
        if (n < 8) {
            double res = 0.;
            for (Py_ssize_t i = 0; i < n; i++) res += a[i];
            return res;
        }
        double r[8], res;
        Py_ssize_t i;
        for (int j = 0; j < 8; j++) r[j] = a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    Py_ssize_t n2 = n / 2;
    n2 -= n2 % 8;
    double left = pairwise(c, n2); /* (left before right: the values in order) */
    return left + pairwise(c, n - n2);
}

static int get(PyObject *o, Py_buffer *b, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (b->itemsize != itemsize) {
        PyBuffer_Release(b);
        PyErr_Format(PyExc_TypeError, "%s: expected items of %zd bytes", what, itemsize);
        return -1;
    }
    return 0;
}

static PyObject *sum_over(PyObject *xo, PyObject *wo, PyObject *mo, Py_ssize_t count) {
    Py_buffer xb, wb, mb;
    int have_w = wo != NULL;
    if (get(xo, &xb, sizeof(double), "x") < 0) return NULL;
    if (have_w && get(wo, &wb, sizeof(double), "w") < 0) { PyBuffer_Release(&xb); return NULL; }
    if (get(mo, &mb, 1, "mask") < 0) {
        PyBuffer_Release(&xb);
        if (have_w) PyBuffer_Release(&wb);
        return NULL;
    }
    Py_ssize_t n = xb.len / (Py_ssize_t)sizeof(double);
    PyObject *out = NULL;
    if (mb.len != n || (have_w && wb.len != xb.len) || count < 0 || count > n) {
        PyErr_SetString(PyExc_ValueError, "_gridsums: buffers of unequal length, or a count beyond them");
        goto done;
    }
    cursor c = {(const double *)xb.buf, have_w ? (const double *)wb.buf : NULL, (const unsigned char *)mb.buf, 0, n};
    double s;
    Py_BEGIN_ALLOW_THREADS
    s = 0.0 + pairwise(&c, count);
    Py_END_ALLOW_THREADS
    out = PyFloat_FromDouble(s);
done:
    PyBuffer_Release(&xb);
    if (have_w) PyBuffer_Release(&wb);
    PyBuffer_Release(&mb);
    return out;
}

static PyObject *masked_sum(PyObject *self, PyObject *args) {
    PyObject *x, *m;
    Py_ssize_t count;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOn", &x, &m, &count)) return NULL;
    return sum_over(x, NULL, m, count);
}

static PyObject *masked_dot(PyObject *self, PyObject *args) {
    PyObject *x, *w, *m;
    Py_ssize_t count;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOn", &x, &w, &m, &count)) return NULL;
    return sum_over(x, w, m, count);
}

/* fill(x, out, how): out = x with each NaN replaced by the next value that is not (how 'b': pandas'
 * bfill), by the previous one ('f': ffill), or forwards then backwards before the first ('fb');
 * x and out float64 or float32 alike (out may be x). NaN stays where nothing fills it. */
#define FILL_LOOP(T)                                                                                  \
    do {                                                                                              \
        const T *x = (const T *)xb.buf;                                                               \
        T *o = (T *)ob.buf;                                                                           \
        if (fwd) {                                                                                    \
            T carry = (T)NAN;                                                                         \
            for (Py_ssize_t i = 0; i < n; i++) {                                                      \
                T v = x[i];                                                                           \
                if (v != v) o[i] = carry;                                                             \
                else o[i] = carry = v;                                                                \
            }                                                                                         \
            x = o;                                                                                    \
        }                                                                                             \
        if (back) {                                                                                   \
            T carry = (T)NAN;                                                                         \
            for (Py_ssize_t i = n - 1; i >= 0; i--) {                                                 \
                T v = x[i];                                                                           \
                if (v != v) o[i] = carry;                                                             \
                else o[i] = carry = v;                                                                \
            }                                                                                         \
        }                                                                                             \
    } while (0)

static PyObject *fill(PyObject *self, PyObject *args) {
    PyObject *xo, *oo;
    const char *how;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOs", &xo, &oo, &how)) return NULL;
    int fwd = how[0] == 'f', back = how[0] == 'b' || (how[0] == 'f' && how[1] == 'b');
    if (!(fwd || back)) { PyErr_SetString(PyExc_ValueError, "fill: how is 'b', 'f' or 'fb'"); return NULL; }
    Py_buffer xb, ob;
    if (PyObject_GetBuffer(xo, &xb, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (PyObject_GetBuffer(oo, &ob, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) { PyBuffer_Release(&xb); return NULL; }
    PyObject *out = NULL;
    if (xb.itemsize != ob.itemsize || xb.len != ob.len || (xb.itemsize != 8 && xb.itemsize != 4)) {
        PyErr_SetString(PyExc_ValueError, "fill: x and out of one float type and length");
        goto done;
    }
    Py_ssize_t n = xb.len / xb.itemsize;
    Py_BEGIN_ALLOW_THREADS
    if (xb.itemsize == 8) FILL_LOOP(double);
    else FILL_LOOP(float);
    Py_END_ALLOW_THREADS
    out = Py_None;
    Py_INCREF(out);
done:
    PyBuffer_Release(&xb);
    PyBuffer_Release(&ob);
    return out;
}

static PyMethodDef methods[] = {
    {"fill", fill, METH_VARARGS, "pandas' bfill / ffill of a float64 or float32 array into out."},
    {"masked_sum", masked_sum, METH_VARARGS, "numpy's x[mask].sum(), without the copy."},
    {"masked_dot", masked_dot, METH_VARARGS, "numpy's (x[mask] * w[mask]).sum(), without the copies."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "gpuscope.analysis.evidence.samples._gridsums",
    "Masked sums of a samples grid, numpy's to the bit (_gridsums.c).", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__gridsums(void) { return PyModule_Create(&module); }
