/* gpuscope._groupstats: per-group sums, means and variances of float64 values, computed the
 * way pandas' groupby computes them (its cython group_sum / group_mean: Kahan-compensated
 * sums in row order; group_var: Welford's running mean and sum of squared deviations), so
 * `analyze --json` gives the same figures, to the last bit, without importing pandas.
 * gpuscope/analysis/evidence/log/groupstats.py falls back to pandas itself where this is not built.
 *
 *   sums, counts = kahan_sums(labels, values, k)        labels: int64 in [0, k) (-1: no group)
 *   means, variances = welford(labels, values, k, ddof)
 *
 * Arguments are contiguous buffers (numpy arrays); results are bytearrays of float64 / int64.
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

static PyMethodDef methods[] = {
    {"kahan_sums", kahan_sums, METH_VARARGS, "kahan_sums(labels, values, k) -> (sums, counts) as bytearrays"},
    {"welford", welford, METH_VARARGS, "welford(labels, values, k, ddof) -> (means, variances) as bytearrays"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "gpuscope._groupstats", "pandas' groupby sums and variances, in C (gpuscope/_groupstats.c).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__groupstats(void) { return PyModule_Create(&module); }
