/* gpuscope.parsers._samples: the compiled reader of gpuscope's samples.csv (parsers/samples/samples_csv.py).
 *
 * One pass over whole lines: each line's fields counted (a line with the wrong number is
 * dropped and counted, a blank one skipped), each numeric field read by the rules of the
 * Python reader (the same whitespace stripped, nvidia-smi's not-available spellings as
 * missing, the formats' numerals only, the column's bounds, whole numbers for the integer
 * columns), a row without a readable time or GPU index dropped, any other unreadable value
 * missing and counted by column. Values are correctly rounded (as pandas' parser and
 * float() round them), so both paths give the same floats bit for bit.
 *
 *   r = scan(data, spec, flags, bounds, out, codes, cats, catlist, cap)
 *
 * data: whole lines, the last ending with \n; spec: one byte per field of the header (a
 * numeric slot 0..K-1, 0xFE the string column, 0xFF a field not read); flags: one byte per
 * slot (1 integer column, 2 required, 4 wrap_suspect: unreadable reads as 1, 8 gpu: missing is
 * unreadable); bounds: 2K doubles (lo, hi); out: K x cap doubles (slot-major), codes: cap
 * int32 (the string column's code per row), cats/catlist: the string column's distinct raw
 * values (dict bytes -> code, list by code), grown here. Stops at cap rows or the end.
 *
 * r = (bytes consumed, rows kept, lines of the wrong shape, rows dropped, lone CR seen,
 *      unreadable per slot (K int64), slot has a value float32 cannot hold (K bytes),
 *      slot has a value at all (K bytes)). A lone carriage return (one not before \n) stops
 * the scan at once: pandas splits lines there, and the Python reader reads such a file.
 * Pure C99 + the CPython API; no numpy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAX_SLOTS 64
#define MAX_FIELDS 4096

enum { ST_NA = 0, ST_OK = 1, ST_BAD = 2 };
enum { FL_INT = 1, FL_REQ = 2, FL_WRAP = 4, FL_GPU = 8 };
enum { SP_STR = 0xFE, SP_SKIP = 0xFF };

static const double E10[309] = {
1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31, 1e32, 1e33, 1e34, 1e35, 1e36, 1e37, 1e38, 1e39, 1e40, 1e41, 1e42, 1e43, 1e44, 1e45, 1e46, 1e47, 1e48, 1e49, 1e50, 1e51, 1e52, 1e53, 1e54, 1e55, 1e56, 1e57, 1e58, 1e59, 1e60, 1e61, 1e62, 1e63, 1e64, 1e65, 1e66, 1e67, 1e68, 1e69, 1e70, 1e71, 1e72, 1e73, 1e74, 1e75, 1e76, 1e77, 1e78, 1e79, 1e80, 1e81, 1e82, 1e83, 1e84, 1e85, 1e86, 1e87, 1e88, 1e89, 1e90, 1e91, 1e92, 1e93, 1e94, 1e95, 1e96, 1e97, 1e98, 1e99, 1e100, 1e101, 1e102, 1e103, 1e104, 1e105, 1e106, 1e107, 1e108, 1e109, 1e110, 1e111, 1e112, 1e113, 1e114, 1e115, 1e116, 1e117, 1e118, 1e119, 1e120, 1e121, 1e122, 1e123, 1e124, 1e125, 1e126, 1e127, 1e128, 1e129, 1e130, 1e131, 1e132, 1e133, 1e134, 1e135, 1e136, 1e137, 1e138, 1e139, 1e140, 1e141, 1e142, 1e143, 1e144, 1e145, 1e146, 1e147, 1e148, 1e149, 1e150, 1e151, 1e152, 1e153, 1e154, 1e155, 1e156, 1e157, 1e158, 1e159, 1e160, 1e161, 1e162, 1e163, 1e164, 1e165, 1e166, 1e167, 1e168, 1e169, 1e170, 1e171, 1e172, 1e173, 1e174, 1e175, 1e176, 1e177, 1e178, 1e179, 1e180, 1e181, 1e182, 1e183, 1e184, 1e185, 1e186, 1e187, 1e188, 1e189, 1e190, 1e191, 1e192, 1e193, 1e194, 1e195, 1e196, 1e197, 1e198, 1e199, 1e200, 1e201, 1e202, 1e203, 1e204, 1e205, 1e206, 1e207, 1e208, 1e209, 1e210, 1e211, 1e212, 1e213, 1e214, 1e215, 1e216, 1e217, 1e218, 1e219, 1e220, 1e221, 1e222, 1e223, 1e224, 1e225, 1e226, 1e227, 1e228, 1e229, 1e230, 1e231, 1e232, 1e233, 1e234, 1e235, 1e236, 1e237, 1e238, 1e239, 1e240, 1e241, 1e242, 1e243, 1e244, 1e245, 1e246, 1e247, 1e248, 1e249, 1e250, 1e251, 1e252, 1e253, 1e254, 1e255, 1e256, 1e257, 1e258, 1e259, 1e260, 1e261, 1e262, 1e263, 1e264, 1e265, 1e266, 1e267, 1e268, 1e269, 1e270, 1e271, 1e272, 1e273, 1e274, 1e275, 1e276, 1e277, 1e278, 1e279, 1e280, 1e281, 1e282, 1e283, 1e284, 1e285, 1e286, 1e287, 1e288, 1e289, 1e290, 1e291, 1e292, 1e293, 1e294, 1e295, 1e296, 1e297, 1e298, 1e299, 1e300, 1e301, 1e302, 1e303, 1e304, 1e305, 1e306, 1e307, 1e308
};

/* what Python's str.strip() removes, in ASCII */
static int ascii_ws(unsigned char c) { return c == ' ' || (c >= 9 && c <= 13) || (c >= 28 && c <= 31); }

/* the length of a UTF-8 encoded Unicode space (str.isspace) at s (before e), else 0 */
static int uni_ws_at(const unsigned char *s, const unsigned char *e) {
    Py_ssize_t n = e - s;
    if (n >= 2 && s[0] == 0xC2 && (s[1] == 0x85 || s[1] == 0xA0)) return 2;
    if (n < 3) return 0;
    if (s[0] == 0xE1 && s[1] == 0x9A && s[2] == 0x80) return 3;
    if (s[0] == 0xE2 && s[1] == 0x80 && ((s[2] >= 0x80 && s[2] <= 0x8A) || s[2] == 0xA8 || s[2] == 0xA9 || s[2] == 0xAF))
        return 3;
    if (s[0] == 0xE2 && s[1] == 0x81 && s[2] == 0x9F) return 3;
    if (s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x80) return 3;
    return 0;
}

/* the same, ending at e */
static int uni_ws_before(const unsigned char *s, const unsigned char *e) {
    if (e - s >= 2 && uni_ws_at(e - 2, e) == 2) return 2;
    if (e - s >= 3 && uni_ws_at(e - 3, e) == 3) return 3;
    return 0;
}

static void strip(const unsigned char **ps, const unsigned char **pe) {
    const unsigned char *s = *ps, *e = *pe;
    for (;;) {
        int k;
        if (s < e && ascii_ws(*s)) s++;
        else if (s < e && *s >= 0x80 && (k = uni_ws_at(s, e)) > 0) s += k;
        else break;
    }
    for (;;) {
        int k;
        if (e > s && ascii_ws(e[-1])) e--;
        else if (e > s && e[-1] >= 0x80 && (k = uni_ws_before(s, e)) > 0) e -= k;
        else break;
    }
    *ps = s;
    *pe = e;
}

static const char *NA_WORDS[] = {"-", "N/A", "[N/A]", "[Not Supported]", "Not Supported", "[Unknown Error]",
                                 "[Insufficient Permissions]", "nan", NULL};

static int is_na(const unsigned char *s, Py_ssize_t n) {
    if (n == 0) return 1;
    if (s[0] != '-' && s[0] != 'N' && s[0] != '[' && s[0] != 'n') return 0;
    for (int i = 0; NA_WORDS[i]; i++)
        if ((Py_ssize_t)strlen(NA_WORDS[i]) == n && memcmp(NA_WORDS[i], s, (size_t)n) == 0) return 1;
    return 0;
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* s..e a numeral of the formats ([+-]?(D+(.D*)?|.D+)([eE][+-]?D+)?): ST_OK with its value in
 * *v (pandas' conversion), ST_BAD when it is no numeral or out of double range */
static int numeral(const unsigned char *s, const unsigned char *e, double *v) {
    const unsigned char *p = s;
    int neg = 0;
    if (p < e && (*p == '+' || *p == '-')) { neg = *p == '-'; p++; }
    const unsigned char *d0 = p;
    while (p < e && is_digit(*p)) p++;
    const unsigned char *d1 = p, *f0 = p, *f1 = p;
    int point = 0;
    if (p < e && *p == '.') { point = 1; p++; f0 = p; while (p < e && is_digit(*p)) p++; f1 = p; }
    if (d1 == d0 && f1 == f0) return ST_BAD;
    const unsigned char *x0 = p, *x1 = p;
    int xneg = 0, sci = 0;
    if (p < e && (*p == 'e' || *p == 'E')) {
        sci = 1;
        p++;
        if (p < e && (*p == '+' || *p == '-')) { xneg = *p == '-'; p++; }
        x0 = p;
        while (p < e && is_digit(*p)) p++;
        x1 = p;
        if (x1 == x0) return ST_BAD;
    }
    if (p != e) return ST_BAD;
    if (!point && !sci) { /* an integer: exact (pandas reads an integer column as integers) */
        const unsigned char *q = d0;
        while (q < d1 - 1 && *q == '0') q++;
        if (d1 - q <= 19) {
            uint64_t u = 0;
            for (; q < d1; q++) u = u * 10u + (uint64_t)(*q - '0');
            double x = (double)u;
            *v = neg ? -x + 0.0 : x; /* (no negative zero: "-0" reads as 0, as in an integer column) */
            return ST_OK;
        }
    }
    /* m x 10^e with m < 2^53 and |e| <= 22: one correctly rounded operation; else Python's
     * correctly rounded conversion (as pandas' parser and float() convert) */
    uint64_t m = 0;
    int sig = 0;
    long e10 = 0;
    for (const unsigned char *q = d0; q < d1; q++) {
        if (sig == 0 && *q == '0') continue;
        if (sig < 19) { m = m * 10u + (uint64_t)(*q - '0'); sig++; }
        else { sig = 99; break; }
    }
    for (const unsigned char *q = f0; q < f1 && sig < 99; q++) {
        e10--;
        if (sig == 0 && *q == '0') continue;
        if (sig < 19) { m = m * 10u + (uint64_t)(*q - '0'); sig++; }
        else sig = 99;
    }
    if (sci && sig < 99) {
        long n = 0;
        for (const unsigned char *q = x0; q < x1; q++) {
            n = n * 10 + (*q - '0');
            if (n > 100000) { sig = 99; break; }
        }
        e10 += xneg ? -n : n;
    }
    double number;
    if (sig < 99 && m <= (1ull << 53) && e10 >= -22 && e10 <= 22) {
        number = (double)m;
        number = e10 >= 0 ? number * E10[e10] : number / E10[-e10];
        if (neg) number = -number;
    } else {
        char tmp[512];
        Py_ssize_t n = e - s;
        if (n >= (Py_ssize_t)sizeof(tmp)) return ST_BAD;
        memcpy(tmp, s, (size_t)n);
        tmp[n] = 0;
        number = PyOS_string_to_double(tmp, NULL, NULL);
        if (number == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return ST_BAD; }
    }
    if (isinf(number)) return ST_BAD;
    *v = number + 0.0; /* (-0.0 + 0.0 is 0.0: no negative zero) */
    return ST_OK;
}

static int field_value(const unsigned char *s, const unsigned char *e, double *v) {
    strip(&s, &e);
    if (is_na(s, e - s)) { *v = NAN; return ST_NA; }
    return numeral(s, e, v);
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer data, spec, flags, bounds, out, codes;
    PyObject *cats, *catlist;
    Py_ssize_t cap;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*w*O!O!n", &data, &spec, &flags, &bounds, &out, &codes, &PyDict_Type, &cats,
                          &PyList_Type, &catlist, &cap))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t nf = spec.len, K = flags.len;
    if (nf < 1 || nf > MAX_FIELDS || K > MAX_SLOTS || bounds.len != (Py_ssize_t)(2 * K * sizeof(double)) ||
        out.len < (Py_ssize_t)(K * cap * sizeof(double)) || codes.len < (Py_ssize_t)(cap * sizeof(int32_t))) {
        PyErr_SetString(PyExc_ValueError, "_samples.scan: buffers of the wrong size");
        goto done;
    }
    const unsigned char *sp = (const unsigned char *)spec.buf, *fl = (const unsigned char *)flags.buf;
    const double *bd = (const double *)bounds.buf;
    double *o = (double *)out.buf;
    int32_t *cd = (int32_t *)codes.buf;
    const unsigned char *b = (const unsigned char *)data.buf, *end = b + data.len, *p = b;
    Py_ssize_t rows = 0, bad_shape = 0, dropped = 0;
    long long badc[MAX_SLOTS] = {0};
    char not32[MAX_SLOTS] = {0}, anyv[MAX_SLOTS] = {0};
    /* per slot as bits (K <= 64): required, wrap_suspect; over the kept rows: a value seen, one
     * float32 cannot hold */
    uint64_t req_bits = 0, wrap_bits = 0, any_bits = 0, n32_bits = 0;
    for (Py_ssize_t k = 0; k < K; k++) {
        if (fl[k] & FL_REQ) req_bits |= 1ull << k;
        if (fl[k] & FL_WRAP) wrap_bits |= 1ull << k;
    }
    static const unsigned char *cut[MAX_FIELDS]; /* the line's commas (the GIL is held) */
    int lone_cr = 0;
    const unsigned char *last_s = NULL;
    Py_ssize_t last_n = -1;
    int32_t last_code = -1;
    while (p < end && rows < cap) {
        const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) break; /* (the caller hands whole lines) */
        /* the line's shape: blank, its commas, a lone CR */
        Py_ssize_t commas = 0;
        int ink = 0;
        for (const unsigned char *q = p; q < nl; q++)
            if (*q == ',') {
                if (commas < nf) cut[commas] = q;
                commas++;
            }
        if (commas) ink = 1;
        else
            for (const unsigned char *q = p; q < nl; q++)
                if (*q != ' ' && *q != '\t' && *q != '\r') { ink = 1; break; }
        const unsigned char *cr = memchr(p, '\r', (size_t)(nl - p));
        if (cr && cr + 1 != nl) lone_cr = 1;
        if (lone_cr && ink) break;
        lone_cr = 0;
        const unsigned char *line = p;
        p = nl + 1;
        if (!ink) continue;
        if (commas != nf - 1) { bad_shape++; continue; }
        /* (each slot is one field of the header: every slot is read once per line) */
        uint64_t ok_bits = 0, bad_bits = 0, row_n32 = 0;
        const unsigned char *f = line;
        for (Py_ssize_t i = 0; i < nf; i++) {
            const unsigned char *fe = i == nf - 1 ? nl : cut[i];
            unsigned char s = sp[i];
            if (s < K) {
                double v = NAN;
                int st = field_value(f, fe, &v);
                unsigned char g = fl[s];
                if (st == ST_OK) {
                    if (v < bd[2 * s] || v > bd[2 * s + 1]) st = ST_BAD;
                    else if ((g & FL_INT) && (v != floor(v) || fabs(v) >= 9223372036854775808.0)) st = ST_BAD;
                } else if (st == ST_NA && (g & FL_GPU)) st = ST_BAD;
                if (st == ST_OK) {
                    ok_bits |= 1ull << s;
                    if (!(fabs(v) <= FLT_MAX && (double)(float)v == v)) row_n32 |= 1ull << s;
                    o[s * cap + rows] = v;
                } else {
                    if (st == ST_BAD) bad_bits |= 1ull << s;
                    o[s * cap + rows] = NAN;
                }
            } else if (s == SP_STR) {
                Py_ssize_t n = fe - f;
                int32_t code;
                if (n == last_n && (n == 0 || memcmp(f, last_s, (size_t)n) == 0)) code = last_code;
                else {
                    PyObject *key = PyBytes_FromStringAndSize((const char *)f, n);
                    if (!key) goto done;
                    PyObject *have = PyDict_GetItemWithError(cats, key);
                    if (have) code = (int32_t)PyLong_AsLong(have);
                    else if (PyErr_Occurred()) { Py_DECREF(key); goto done; }
                    else {
                        code = (int32_t)PyList_GET_SIZE(catlist);
                        PyObject *num = PyLong_FromLong(code);
                        int bad = !num || PyDict_SetItem(cats, key, num) < 0 || PyList_Append(catlist, key) < 0;
                        Py_XDECREF(num);
                        if (bad) { Py_DECREF(key); goto done; }
                    }
                    Py_DECREF(key);
                    last_s = f;
                    last_n = n;
                    last_code = code;
                }
                cd[rows] = code;
            }
            f = fe + 1;
        }
        if ((ok_bits & req_bits) != req_bits) { dropped++; continue; }
        if (bad_bits) /* unreadable: counted; wrap_suspect reads as 1 (a value float32 holds) */
            for (Py_ssize_t k = 0; k < K; k++)
                if (bad_bits >> k & 1u) {
                    badc[k]++;
                    if (wrap_bits >> k & 1u) o[k * cap + rows] = 1.0;
                }
        any_bits |= ok_bits | (bad_bits & wrap_bits);
        n32_bits |= row_n32;
        rows++;
    }
    for (Py_ssize_t k = 0; k < K; k++) {
        anyv[k] = (char)(any_bits >> k & 1u);
        not32[k] = (char)(n32_bits >> k & 1u);
    }
    {
        PyObject *bc = PyBytes_FromStringAndSize((const char *)badc, (Py_ssize_t)(K * sizeof(long long)));
        PyObject *n32 = PyBytes_FromStringAndSize(not32, K);
        PyObject *av = PyBytes_FromStringAndSize(anyv, K);
        if (bc && n32 && av)
            result = Py_BuildValue("(nnnnOOOO)", (Py_ssize_t)(p - b), rows, bad_shape, dropped,
                                   lone_cr ? Py_True : Py_False, bc, n32, av);
        Py_XDECREF(bc);
        Py_XDECREF(n32);
        Py_XDECREF(av);
    }
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&spec);
    PyBuffer_Release(&flags);
    PyBuffer_Release(&bounds);
    PyBuffer_Release(&out);
    PyBuffer_Release(&codes);
    return result;
}

static PyMethodDef module_methods[] = {
    {"scan", scan, METH_VARARGS, "Read whole lines of a samples.csv into columns (parsers/_samples.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "gpuscope.parsers._samples", "The compiled samples.csv reader (parsers/_samples.c).", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__samples(void) { return PyModule_Create(&module); }
