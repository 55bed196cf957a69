/* gpuscope.parsers._scan: the compiled line scanner of the cuzk, condensed and kv formats.
 *
 * It reads the lines whose meaning it is certain of, exactly as the Python scanners read
 * them (parsers/log/cuzk.py, kv.py, tracing.py, timeline_events.py, linetime.py), and hands every
 * other line back to Python ("punts" it): damage (whose reason strings Python words), non-
 * ASCII or control characters, values that are not plain numbers, odd keys, unusual time
 * prefixes. A line it reads gives the same row, values, names and time as the Python
 * scanner's; tests/test_scanner_paths.py runs both on random and real logs.
 *
 *   s = Scanner(fmt, held)          fmt: 0 cuzk, 1 condensed, 2 kv; held: the held name (bytes)
 *   d = s.feed(buf, first_line)     buf: whole lines, each ending with \n; returns a dict of
 *                                   bytearrays (int64 / int32 / float64 arrays) for this buffer
 *                                   and the names first seen in it
 *
 * Rows, slots and codes follow parsers/log/scan.py's Scan: meta has 8 int64 per row (line, slot,
 * kind, gpu, worker, partition, n values, source); a name's code is its position in the
 * scanner's table (first seen first); `punt` holds (line, start, end) of the lines Python
 * reads, `pyts` (slot, kind, start, end) of the times Python computes (kind 0: the clock's
 * reading of the line, 1: the ISO token at its start). Pure C99 + the CPython API; no numpy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAX_LINE 65536

/* line kinds and sources (parsers/log/scan.py) */
enum { K_FREE = 0, K_OPEN = 1, K_HELD = 2, K_GPU = 3, K_NTT = 4 };
enum { S_TIMING = 0, S_NTT = 1, S_GPU = 2, S_FIN = 3, S_CONDENSED = 4, S_KV = 5 };
enum { F_CUZK = 0, F_CONDENSED = 1, F_KV = 2 };
/* which first characters mean "no prefix" (NaN) without the clock: linetime.py */
enum { V_GENERIC = 0, V_CUZK = 1, V_TIMELINE = 2 };

/* -- growable arrays ---------------------------------------------------------------------- */

#define VEC(name, type)                                                                     \
    typedef struct { type *p; Py_ssize_t n, cap; } name;                                    \
    static int name##_grow(name *v, Py_ssize_t need) {                                      \
        if (v->n + need <= v->cap) return 0;                                                \
        Py_ssize_t cap = v->cap ? v->cap : 1024;                                            \
        while (cap < v->n + need) cap *= 2;                                                 \
        type *p = (type *)PyMem_Realloc(v->p, (size_t)cap * sizeof(type));                  \
        if (!p) { PyErr_NoMemory(); return -1; }                                            \
        v->p = p; v->cap = cap; return 0;                                                   \
    }                                                                                       \
    static inline int name##_push(name *v, type x) {                                        \
        if (v->n == v->cap && name##_grow(v, 1) < 0) return -1;                             \
        v->p[v->n++] = x; return 0;                                                         \
    }                                                                                       \
    static void name##_free(name *v) { PyMem_Free(v->p); v->p = NULL; v->n = v->cap = 0; }

VEC(VI64, int64_t)
VEC(VI32, int32_t)
VEC(VF64, double)
VEC(VU32, uint32_t)

static PyObject *vec_bytes(const void *p, Py_ssize_t n, size_t size) {
    return PyByteArray_FromStringAndSize((const char *)p, n * (Py_ssize_t)size);
}

/* -- a table of byte strings -> codes (first seen first) ----------------------------------- */

typedef struct {
    char *arena; Py_ssize_t alen, acap;
    Py_ssize_t *off, *len; Py_ssize_t n, cap;
    int32_t *slots; Py_ssize_t nslots;
    Py_ssize_t reported; /* entries already handed to Python */
} STab;

/* eight bytes a step, each word's multiply independent of the others' (a byte-wise hash's
 * chain of multiplies cost the shape splitter more than its reading of the bytes); a word is
 * mixed with its place first, so words in another order hash apart; the final mix spreads
 * every byte into the low bits the slots use (the table compares the bytes: a collision costs
 * a compare, never a wrong code) */
static uint64_t hash_bytes(const char *s, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n, place = 0;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        place += 0xD6E8FEB86659FD93ULL;
        h += (w ^ place) * 0xff51afd7ed558ccdULL;
    }
    if (i < n) {
        uint64_t w = 0;
        memcpy(&w, s + i, (size_t)(n - i));
        place += 0xD6E8FEB86659FD93ULL;
        h += (w ^ place) * 0xff51afd7ed558ccdULL;
    }
    h ^= h >> 29;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 32;
    return h;
}

static int stab_rehash(STab *t, Py_ssize_t nslots) {
    int32_t *slots = (int32_t *)PyMem_Malloc((size_t)nslots * sizeof(int32_t));
    if (!slots) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < nslots; i++) slots[i] = -1;
    for (Py_ssize_t e = 0; e < t->n; e++) {
        uint64_t h = hash_bytes(t->arena + t->off[e], t->len[e]);
        Py_ssize_t i = (Py_ssize_t)(h & (uint64_t)(nslots - 1));
        while (slots[i] >= 0) i = (i + 1) & (nslots - 1);
        slots[i] = (int32_t)e;
    }
    PyMem_Free(t->slots);
    t->slots = slots; t->nslots = nslots;
    return 0;
}

static int32_t stab_code_h(STab *t, const char *s, Py_ssize_t n, uint64_t h);

/* the code of s (added when new); -1 on a memory error */
static int32_t stab_code(STab *t, const char *s, Py_ssize_t n) { return stab_code_h(t, s, n, hash_bytes(s, n)); }

/* the same, given hash_bytes(s, n) */
static int32_t stab_code_h(STab *t, const char *s, Py_ssize_t n, uint64_t h) {
    if (t->nslots == 0 && stab_rehash(t, 64) < 0) return -1;
    Py_ssize_t i = (Py_ssize_t)(h & (uint64_t)(t->nslots - 1));
    for (;;) {
        int32_t e = t->slots[i];
        if (e < 0) break;
        if (t->len[e] == n && memcmp(t->arena + t->off[e], s, (size_t)n) == 0) return e;
        i = (i + 1) & (t->nslots - 1);
    }
    if (t->n >= INT32_MAX - 1) { PyErr_SetString(PyExc_OverflowError, "too many distinct names"); return -1; }
    if (t->n == t->cap) {
        Py_ssize_t cap = t->cap ? 2 * t->cap : 64;
        Py_ssize_t *off = (Py_ssize_t *)PyMem_Realloc(t->off, (size_t)cap * sizeof(Py_ssize_t));
        if (!off) { PyErr_NoMemory(); return -1; }
        t->off = off;
        Py_ssize_t *len = (Py_ssize_t *)PyMem_Realloc(t->len, (size_t)cap * sizeof(Py_ssize_t));
        if (!len) { PyErr_NoMemory(); return -1; }
        t->len = len; t->cap = cap;
    }
    if (t->alen + n > t->acap) {
        Py_ssize_t cap = t->acap ? t->acap : 4096;
        while (cap < t->alen + n) cap *= 2;
        char *a = (char *)PyMem_Realloc(t->arena, (size_t)cap);
        if (!a) { PyErr_NoMemory(); return -1; }
        t->arena = a; t->acap = cap;
    }
    memcpy(t->arena + t->alen, s, (size_t)n);
    int32_t e = (int32_t)t->n;
    t->off[e] = t->alen; t->len[e] = n; t->alen += n; t->n++;
    t->slots[i] = e;
    if (2 * t->n > t->nslots && stab_rehash(t, 2 * t->nslots) < 0) return -1;
    return e;
}

/* the entries added since the last call, as a list of str */
static PyObject *stab_new(STab *t) {
    PyObject *out = PyList_New(t->n - t->reported);
    if (!out) return NULL;
    for (Py_ssize_t e = t->reported; e < t->n; e++) {
        PyObject *s = PyUnicode_DecodeASCII(t->arena + t->off[e], t->len[e], "strict");
        if (!s) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, e - t->reported, s);
    }
    t->reported = t->n;
    return out;
}

static void stab_free(STab *t) {
    PyMem_Free(t->arena); PyMem_Free(t->off); PyMem_Free(t->len); PyMem_Free(t->slots);
    memset(t, 0, sizeof(*t));
}

/* -- characters and numbers ---------------------------------------------------------------- */

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }
static inline int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static inline int is_alnum(char c) { return is_digit(c) || is_alpha(c); }
static inline int is_ident_char(char c) { return is_alnum(c) || c == '_'; }

static int is_identifier(const char *s, Py_ssize_t n) {
    if (n <= 0 || is_digit(s[0])) return 0;
    for (Py_ssize_t i = 0; i < n; i++) if (!is_ident_char(s[i])) return 0;
    return 1;
}

static inline int ends_with(const char *s, Py_ssize_t n, const char *suf, Py_ssize_t m) {
    return n >= m && memcmp(s + n - m, suf, (size_t)m) == 0;
}

static inline int eq(const char *s, Py_ssize_t n, const char *lit) {
    Py_ssize_t m = (Py_ssize_t)strlen(lit);
    return n == m && memcmp(s, lit, (size_t)m) == 0;
}

/* could Python's float() read it (as a finite number)? Only text that starts, after a sign,
 * with a digit or a '.' (else it fails, or gives inf / nan, which number() refuses) */
static int maybe_float(const char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) i = 1;
    return i < n && (is_digit(s[i]) || s[i] == '.');
}

/* A plain finite number, as Python's float() reads it: [+-]?(d+(.d*)?|.d+)([eE][+-]?d+)?.
 * 1 and *x when s[0:n] is exactly one; 0 otherwise (the caller hands the line to Python,
 * which decides: float() also takes forms this does not, `1_000`, ` 5`). */
static int parse_number(const char *s, Py_ssize_t n, double *x) {
    Py_ssize_t i = 0;
    int neg = 0;
    if (n <= 0 || n > 300) return 0;
    if (s[0] == '+' || s[0] == '-') { neg = s[0] == '-'; i = 1; }
    Py_ssize_t d0 = i;
    while (i < n && is_digit(s[i])) i++;
    Py_ssize_t intd = i - d0, fracd = 0;
    int plain = 1;
    if (i < n && s[i] == '.') {
        plain = 0;
        i++;
        Py_ssize_t f0 = i;
        while (i < n && is_digit(s[i])) i++;
        fracd = i - f0;
    }
    if (intd + fracd == 0) return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        plain = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        Py_ssize_t e0 = i;
        while (i < n && is_digit(s[i])) i++;
        if (i == e0) return 0;
    }
    if (i != n) return 0;
    if (plain && intd <= 15) { /* exact: below 2**53 */
        int64_t v = 0;
        for (Py_ssize_t k = d0; k < n; k++) v = v * 10 + (s[k] - '0');
        *x = neg ? -(double)v : (double)v;
        return 1;
    }
    if (intd + fracd <= 15 && i == d0 + intd + 1 + fracd) { /* d.d without an exponent */
        /* the digits as an integer (exact below 2**53) over 10**fracd (exact up to 10**22): one
         * correctly rounded division, so the double float() gives (Clinger's fast path) */
        static const double P10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
        int64_t v = 0;
        for (Py_ssize_t k = d0; k < n; k++) if (s[k] != '.') v = v * 10 + (s[k] - '0');
        double q = (double)v / P10[fracd];
        *x = neg ? -q : q;
        return 1;
    }
    char buf[304];
    memcpy(buf, s, (size_t)n);
    buf[n] = 0;
    char *end = NULL;
    double v = PyOS_string_to_double(buf, &end, NULL);
    if (PyErr_Occurred()) { PyErr_Clear(); return 0; }
    if (end != buf + n || !isfinite(v)) return 0;
    *x = v;
    return 1;
}

/* [+-]?d{1,18} -> 1 and *x */
static int parse_int(const char *s, Py_ssize_t n, int64_t *x) {
    Py_ssize_t i = 0;
    int neg = 0;
    if (n <= 0) return 0;
    if (s[0] == '+' || s[0] == '-') { neg = s[0] == '-'; i = 1; }
    if (n - i < 1 || n - i > 18) return 0;
    int64_t v = 0;
    for (; i < n; i++) {
        if (!is_digit(s[i])) return 0;
        v = v * 10 + (s[i] - '0');
    }
    *x = neg ? -v : v;
    return 1;
}

/* -- ISO-8601 prefixes (linetime.py / prefix.py PrefixClock._iso_at) ----------------------- */

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m) {
    static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
    return dm[m - 1];
}

static inline int dig2(const char *s) { return (s[0] - '0') * 10 + (s[1] - '0'); }

/* The epoch seconds of an ISO token (`2026-11-30T14:00:00.123456Z`, `...+01:00`, no zone:
 * UTC): the minute's seconds + the printed seconds, as linetime.py adds them. 1 and *ts for
 * the forms read here; 0 for any other (Python reads it). */
static int iso_token(const char *t, Py_ssize_t n, double *ts) {
    if (n < 19 || n > 57 || t[16] != ':') return 0;
    static const int dpos[] = {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15};
    for (int k = 0; k < 12; k++) if (!is_digit(t[dpos[k]])) return 0;
    const char *tail = t + 17;
    Py_ssize_t tn = n - 17;
    int off_min = 0;
    Py_ssize_t numn;
    if (tail[tn - 1] == 'Z' || tail[tn - 1] == 'z') {
        numn = tn - 1;
    } else {
        Py_ssize_t i = tn - 1;
        while (i > 0 && tail[i] != '+' && tail[i] != '-') i--;
        if (i > 0) {
            const char *z = tail + i;
            Py_ssize_t zn = tn - i;
            int hh, mm;
            if (zn == 6 && z[3] == ':' && is_digit(z[1]) && is_digit(z[2]) && is_digit(z[4]) && is_digit(z[5])) {
                hh = dig2(z + 1); mm = dig2(z + 4);
            } else if (zn == 5 && is_digit(z[1]) && is_digit(z[2]) && is_digit(z[3]) && is_digit(z[4])) {
                hh = dig2(z + 1); mm = dig2(z + 3);
            } else {
                return 0;
            }
            if (hh * 60 + mm >= 1440) return 0;
            off_min = (z[0] == '-' ? -1 : 1) * (hh * 60 + mm);
            numn = i;
        } else {
            numn = tn;
        }
    }
    /* the seconds: dd or dd.d+ */
    if (numn < 2 || !is_digit(tail[0]) || !is_digit(tail[1])) return 0;
    if (numn > 2) {
        if (tail[2] != '.' || numn == 3) return 0;
        for (Py_ssize_t k = 3; k < numn; k++) if (!is_digit(tail[k])) return 0;
    }
    double secs;
    if (!parse_number(tail, numn, &secs)) return 0;
    if (!(secs >= 0.0 && secs < 61.0)) return 0;
    int y = dig2(t) * 100 + dig2(t + 2), mo = dig2(t + 5), d = dig2(t + 8), hh = dig2(t + 11), mi = dig2(t + 14);
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || hh > 23 || mi > 59) return 0;
    int64_t base = days_from_civil(y, mo, d) * 86400 + (int64_t)hh * 3600 + (int64_t)mi * 60 - (int64_t)off_min * 60;
    *ts = (double)base + secs;
    return 1;
}

/* -- the scanner ------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    int fmt;
    char *held; Py_ssize_t held_len;
    VI64 meta; VI32 codes; VF64 vals; VI64 hrow; VF64 hval; VI64 qrow; VI32 qcode; VF64 qval;
    VI64 tl_line, tl_slot, tl_part, tl_worker; VF64 tl_off, tl_synth, tl_gpu; VI32 tl_event, tl_job;
    VF64 ts; VI64 punt, pyts;
    int64_t timing;
    STab names, qnames, strs;
    /* one line's fields before they are kept (a line may still be handed to Python) */
    VI32 lc; VF64 lv; VI32 qc; VF64 qv;
    VU32 seen_n, seen_q; uint32_t gen;
    char *scratch; Py_ssize_t scratch_cap;
} Scanner;

/* the row's time slot; 0 ok, -1 memory error */
static int add_slot(Scanner *s, const char *l, Py_ssize_t n, Py_ssize_t start, int variant, int64_t *slot) {
    *slot = s->ts.n;
    double ts = NAN;
    if (n > 10 && l[10] == 'T' && l[4] == '-') {
        const char *sp = memchr(l, ' ', (size_t)n);
        Py_ssize_t tn = sp ? (Py_ssize_t)(sp - l) : n;
        if (sp == l) tn = n; /* (line.find(" ") == 0: the whole line) */
        if (!iso_token(l, tn, &ts)) {
            int64_t e[4] = {*slot, 1, start, start + n};
            if (VI64_grow(&s->pyts, 4) < 0) return -1;
            memcpy(s->pyts.p + s->pyts.n, e, sizeof(e)); s->pyts.n += 4;
            ts = NAN;
        }
    } else {
        char c = n ? l[0] : 0;
        int none = n == 0 || c == ' ' || (c == 'C' && variant != V_TIMELINE) || (c == 'T' && variant != V_CUZK);
        if (!none) {
            int64_t e[4] = {*slot, 0, start, start + n};
            if (VI64_grow(&s->pyts, 4) < 0) return -1;
            memcpy(s->pyts.p + s->pyts.n, e, sizeof(e)); s->pyts.n += 4;
        }
    }
    return VF64_push(&s->ts, ts);
}

static int punt(Scanner *s, int64_t ln, Py_ssize_t start, Py_ssize_t n) {
    int64_t e[3] = {ln, start, start + n};
    if (VI64_grow(&s->punt, 3) < 0) return -1;
    memcpy(s->punt.p + s->punt.n, e, sizeof(e));
    s->punt.n += 3;
    return 0;
}

/* a new line's repeat check: 0 fine, 1 the code was seen on this line */
static int seen(VU32 *v, int32_t code, uint32_t gen) {
    if (code >= v->n) {
        Py_ssize_t need = code + 1 - v->n;
        if (VU32_grow(v, need) < 0) return -1;
        memset(v->p + v->n, 0, (size_t)need * sizeof(uint32_t));
        v->n = code + 1;
    }
    if (v->p[code] == gen) return 1;
    v->p[code] = gen;
    return 0;
}

static void next_gen(Scanner *s) {
    s->gen++;
    if (s->gen == 0) { /* wrapped: clear the stamps */
        if (s->seen_n.n) memset(s->seen_n.p, 0, (size_t)s->seen_n.n * sizeof(uint32_t));
        if (s->seen_q.n) memset(s->seen_q.p, 0, (size_t)s->seen_q.n * sizeof(uint32_t));
        s->gen = 1;
    }
    s->lc.n = s->lv.n = s->qc.n = s->qv.n = 0;
}

/* result of one field reader: */
enum { L_READ = 0, L_PUNT = 1, L_ERR = -1, L_IGNORE = 2 };

/* add a name's value to the line's fields; L_PUNT when printed twice */
/* parsers/numbers.py LIMITS: a time beyond MAX_MS, a quantity beyond an exact count, is
 * handed to Python, which calls it damage (a size up to 2**64 it reads) */
#define MAX_MS 1e11
#define MAX_COUNT 9007199254740992.0

static int field(Scanner *s, STab *t, VU32 *st, VI32 *c, VF64 *v, const char *name, Py_ssize_t nn, double x) {
    if (x > (t == &s->names ? MAX_MS : MAX_COUNT)) return L_PUNT;
    int32_t code = stab_code(t, name, nn);
    if (code < 0) return L_ERR;
    int r = seen(st, code, s->gen);
    if (r < 0) return L_ERR;
    if (r) return L_PUNT;
    if (VI32_push(c, code) < 0 || VF64_push(v, x) < 0) return L_ERR;
    return L_READ;
}

/* keep the line's fields as one meta row */
static int keep_row(Scanner *s, int64_t ln, int64_t slot, int kind, int64_t gpu, int64_t worker, int64_t part, int src) {
    int64_t row = s->meta.n / 8;
    int64_t m[8] = {ln, slot, kind, gpu, worker, part, s->lc.n, src};
    if (VI64_grow(&s->meta, 8) < 0) return -1;
    memcpy(s->meta.p + s->meta.n, m, sizeof(m)); s->meta.n += 8;
    if (VI32_grow(&s->codes, s->lc.n) < 0 || VF64_grow(&s->vals, s->lv.n) < 0) return -1;
    memcpy(s->codes.p + s->codes.n, s->lc.p, (size_t)s->lc.n * sizeof(int32_t)); s->codes.n += s->lc.n;
    memcpy(s->vals.p + s->vals.n, s->lv.p, (size_t)s->lv.n * sizeof(double)); s->vals.n += s->lv.n;
    for (Py_ssize_t i = 0; i < s->qc.n; i++)
        if (VI64_push(&s->qrow, row) < 0 || VI32_push(&s->qcode, s->qc.p[i]) < 0 || VF64_push(&s->qval, s->qv.p[i]) < 0)
            return -1;
    s->timing++;
    return 0;
}

/* the next token of l[*i:n] split on whitespace (and `seps`); 0 at the end */
static inline int next_tok(const char *l, Py_ssize_t n, Py_ssize_t *i, int kv, const char **t, Py_ssize_t *tn) {
    Py_ssize_t k = *i;
    while (k < n && (l[k] == ' ' || l[k] == '\t' || (kv && (l[k] == '|' || l[k] == ',')))) k++;
    if (k >= n) { *i = k; return 0; }
    Py_ssize_t b = k;
    while (k < n && !(l[k] == ' ' || l[k] == '\t' || (kv && (l[k] == '|' || l[k] == ',')))) k++;
    *t = l + b; *tn = k - b; *i = k;
    return 1;
}

static inline const char *find_eq(const char *t, Py_ssize_t n) { return (const char *)memchr(t, '=', (size_t)n); }

/* a marker's rest without '=': informational (3+ words: not a timing line) or a cut marker
 * (damage, Python words it) */
static int without_fields(const char *r, Py_ssize_t rn) {
    Py_ssize_t i = 0, cnt = 0, tn;
    const char *t;
    while (cnt < 3 && next_tok(r, rn, &i, 0, &t, &tn)) cnt++;
    return cnt >= 3 ? L_IGNORE : L_PUNT;
}

/* CUZK_TIMING: the fields after "CUZK_TIMING: " (read_fields(ntt=False)) */
static int cuzk_timing(Scanner *s, const char *l, Py_ssize_t n, Py_ssize_t rest, int64_t ln, Py_ssize_t start) {
    const char *r = l + rest;
    Py_ssize_t rn = n - rest;
    next_gen(s);
    if (!memchr(r, '=', (size_t)rn)) return without_fields(r, rn);
    int64_t tid = -1;
    Py_ssize_t i = 0, tn; const char *t;
    while (next_tok(r, rn, &i, 0, &t, &tn)) {
        const char *e = find_eq(t, tn);
        if (!e || e == t) return L_PUNT;
        Py_ssize_t kn = e - t;
        const char *v = e + 1;
        Py_ssize_t vn = tn - kn - 1;
        if (memchr(v, '=', (size_t)vn)) return L_PUNT;
        double x;
        if (!parse_number(v, vn, &x)) return L_PUNT;
        if (kn > 3 && ends_with(t, kn, "_ms", 3)) {
            if (!is_identifier(t, kn - 3) || x < 0) return L_PUNT;
            int rr = field(s, &s->names, &s->seen_n, &s->lc, &s->lv, t, kn - 3, x);
            if (rr != L_READ) return rr;
        } else if (eq(t, kn, "gpu_tid")) {
            if (x < 0 || x != floor(x) || x > 1048576.0 || tid >= 0) return L_PUNT;
            tid = (int64_t)x;
        } else if ((kn > 6 && ends_with(t, kn, "_bytes", 6) && is_identifier(t, kn)) || eq(t, kn, "num_circuits")) {
            if (x < 0) return L_PUNT;
            int rr = field(s, &s->qnames, &s->seen_q, &s->qc, &s->qv, t, kn, x);
            if (rr != L_READ) return rr;
        } else if (!is_identifier(t, kn)) {
            return L_PUNT;
        }
    }
    if (s->lc.n == 0 && s->qc.n == 0) return L_PUNT;
    int kind;
    Py_ssize_t held_at = -1;
    if (s->lc.n == 0) {
        kind = tid >= 0 ? K_GPU : K_FREE;
    } else {
        Py_ssize_t e0 = s->names.off[s->lc.p[0]], l0 = s->names.len[s->lc.p[0]];
        const char *n0 = s->names.arena + e0;
        if (eq(n0, l0, "mutex_wait") || eq(n0, l0, "pre_lock_cpu")) {
            kind = K_OPEN;
        } else {
            kind = tid >= 0 ? K_GPU : K_FREE;
            for (Py_ssize_t k = 0; k < s->lc.n; k++) {
                int32_t c = s->lc.p[k];
                if (s->names.len[c] == s->held_len && memcmp(s->names.arena + s->names.off[c], s->held, (size_t)s->held_len) == 0) {
                    kind = K_HELD; held_at = k; break;
                }
            }
        }
    }
    int64_t slot;
    if (add_slot(s, l, n, start, V_CUZK, &slot) < 0) return L_ERR;
    if (held_at >= 0 && (VI64_push(&s->hrow, s->meta.n / 8) < 0 || VF64_push(&s->hval, s->lv.p[held_at]) < 0)) return L_ERR;
    if (keep_row(s, ln, slot, kind, tid, -1, -1, S_TIMING) < 0) return L_ERR;
    return L_READ;
}

/* CUZK_NTT_H: every field `name=<number>ms` (read_fields(ntt=True)) */
static int cuzk_ntt(Scanner *s, const char *l, Py_ssize_t n, Py_ssize_t rest, int64_t ln, Py_ssize_t start) {
    const char *r = l + rest;
    Py_ssize_t rn = n - rest;
    next_gen(s);
    if (!memchr(r, '=', (size_t)rn)) return without_fields(r, rn);
    Py_ssize_t i = 0, tn; const char *t;
    while (next_tok(r, rn, &i, 0, &t, &tn)) {
        const char *e = find_eq(t, tn);
        if (!e || e == t) return L_PUNT;
        Py_ssize_t kn = e - t;
        const char *v = e + 1;
        Py_ssize_t vn = tn - kn - 1;
        double x;
        if (!ends_with(v, vn, "ms", 2) || !parse_number(v, vn - 2, &x) || x < 0) return L_PUNT;
        int rr = field(s, &s->names, &s->seen_n, &s->lc, &s->lv, t, kn, x);
        if (rr != L_READ) return rr;
    }
    int64_t slot;
    if (add_slot(s, l, n, start, V_CUZK, &slot) < 0) return L_ERR;
    if (keep_row(s, ln, slot, K_NTT, -1, -1, -1, S_NTT) < 0) return L_ERR;
    return L_READ;
}

/* TIMELINE,<offset>,<event>,<job>,<detail>... (timeline_events.read_timeline) */
static int timeline(Scanner *s, const char *l, Py_ssize_t n, Py_ssize_t rest, int64_t ln, Py_ssize_t start, int variant) {
    const char *r = l + rest;
    Py_ssize_t rn = n - rest;
    while (rn > 0 && (r[rn - 1] == ' ' || r[rn - 1] == '\t')) rn--; /* rstrip */
    const char *part[64];
    Py_ssize_t plen[64];
    int np = 0;
    Py_ssize_t b = 0;
    for (Py_ssize_t k = 0; k <= rn; k++) {
        if (k == rn || r[k] == ',') {
            if (np == 64) return L_PUNT;
            part[np] = r + b; plen[np] = k - b; np++;
            b = k + 1;
        }
    }
    if (np < 3) return L_PUNT;
    double off;
    if (!parse_number(part[0], plen[0], &off)) return L_PUNT;
    if (!is_identifier(part[1], plen[1])) return L_PUNT;
    const char *job = part[2];
    Py_ssize_t jn = plen[2];
    while (jn > 0 && (job[0] == ' ' || job[0] == '\t')) { job++; jn--; }
    while (jn > 0 && (job[jn - 1] == ' ' || job[jn - 1] == '\t')) jn--;
    int64_t partition = -1, worker = -1;
    double synth = NAN, gpu = NAN;
    for (int k = 3; k < np; k++) {
        const char *it = part[k];
        Py_ssize_t in = plen[k];
        const char *e = (const char *)memchr(it, '=', (size_t)in);
        if (!e) {
            const char *a = it; Py_ssize_t an = in;
            while (an > 0 && (a[0] == ' ' || a[0] == '\t')) { a++; an--; }
            while (an > 0 && (a[an - 1] == ' ' || a[an - 1] == '\t')) an--;
            if (an == 0 || eq(a, an, "monolithic")) continue;
            return L_PUNT;
        }
        Py_ssize_t kn = e - it;
        for (int j = 3; j < k; j++) { /* a detail key printed twice: Python says so */
            const char *e2 = (const char *)memchr(part[j], '=', (size_t)plen[j]);
            if (e2 && e2 - part[j] == kn && memcmp(part[j], it, (size_t)kn) == 0) return L_PUNT;
        }
        const char *v = e + 1;
        Py_ssize_t vn = in - kn - 1;
        if (eq(it, kn, "partition") || eq(it, kn, "worker")) {
            int64_t x;
            if (!parse_int(v, vn, &x)) return L_PUNT;
            if (it[0] == 'p') partition = x; else worker = x;
        } else {
            double x;
            if (!parse_number(v, vn, &x)) return L_PUNT;
            if (eq(it, kn, "synth_ms")) synth = x;
            else if (eq(it, kn, "gpu_ms")) gpu = x;
        }
    }
    if (synth < 0 || gpu < 0 || synth > MAX_MS || gpu > MAX_MS || fabs(off) > MAX_MS) return L_PUNT;
    int32_t ev = stab_code(&s->strs, part[1], plen[1]);
    int32_t jb = ev < 0 ? -1 : stab_code(&s->strs, job, jn);
    if (jb < 0) return L_ERR;
    int64_t slot;
    if (add_slot(s, l, n, start, variant, &slot) < 0) return L_ERR;
    if (VI64_push(&s->tl_line, ln) < 0 || VI64_push(&s->tl_slot, slot) < 0 || VF64_push(&s->tl_off, off) < 0 ||
        VI32_push(&s->tl_event, ev) < 0 || VI32_push(&s->tl_job, jb) < 0 || VI64_push(&s->tl_part, partition) < 0 ||
        VI64_push(&s->tl_worker, worker) < 0 || VF64_push(&s->tl_synth, synth) < 0 || VF64_push(&s->tl_gpu, gpu) < 0)
        return L_ERR;
    s->timing++;
    return L_READ;
}

/* tracing.find_tag: the offset of `GPU_TIMING ` / `FIN_TIMING ` or -1 */
static Py_ssize_t find_tag(const char *l, Py_ssize_t n) {
    for (Py_ssize_t i = 3; i + 8 <= n; i++) {
        if (l[i] == '_' && memcmp(l + i, "_TIMING ", 8) == 0) {
            if ((memcmp(l + i - 3, "GPU", 3) == 0 || memcmp(l + i - 3, "FIN", 3) == 0) && (i == 3 || !is_alnum(l[i - 4])))
                return i - 3;
        }
    }
    return -1;
}

/* Some(3) / 3 / None -> 1 and *x */
static int id_value(const char *v, Py_ssize_t vn, int64_t *x) {
    if (vn >= 6 && memcmp(v, "Some(", 5) == 0 && v[vn - 1] == ')') {
        v += 5; vn -= 6;
    } else if (eq(v, vn, "None")) {
        *x = -1; return 1;
    }
    if (vn > 15) return 0;
    return parse_int(v, vn, x);
}

/* a tracing line (tracing.read_tracing): L_READ, L_IGNORE (no times: not a timing line), L_PUNT */
static int tracing(Scanner *s, const char *l, Py_ssize_t n, Py_ssize_t at, int64_t ln, Py_ssize_t start) {
    int gpu_tag = l[at] == 'G';
    const char *prefix = gpu_tag ? "gpu_timing." : "fin_timing.";
    const Py_ssize_t pn = 11;
    const char *r = l + at + 11;
    Py_ssize_t rn = n - at - 11;
    next_gen(s);
    int64_t worker = -1, partition = -1;
    int have_w = 0, have_p = 0;
    Py_ssize_t i = 0, tn; const char *t;
    while (next_tok(r, rn, &i, 0, &t, &tn)) {
        const char *e = find_eq(t, tn);
        if (!e) continue;
        Py_ssize_t kn = e - t;
        const char *v = e + 1;
        Py_ssize_t vn = tn - kn - 1;
        if (kn >= 3 && ends_with(t, kn, "_ms", 3)) {
            double x;
            if (kn == 3 || !parse_number(v, vn, &x) || x < 0) return L_PUNT;
            Py_ssize_t nn = pn + kn - 3;
            if (nn > s->scratch_cap) {
                char *p = (char *)PyMem_Realloc(s->scratch, (size_t)nn);
                if (!p) { PyErr_NoMemory(); return L_ERR; }
                s->scratch = p; s->scratch_cap = nn;
            }
            memcpy(s->scratch, prefix, (size_t)pn);
            memcpy(s->scratch + pn, t, (size_t)(kn - 3));
            int rr = field(s, &s->names, &s->seen_n, &s->lc, &s->lv, s->scratch, nn, x);
            if (rr != L_READ) return rr;
        } else if (eq(t, kn, "worker_id") || eq(t, kn, "partition")) {
            int64_t x;
            if (!id_value(v, vn, &x)) return L_PUNT;
            if (t[0] == 'w') { if (have_w) return L_PUNT; worker = x; have_w = 1; }
            else { if (have_p) return L_PUNT; partition = x; have_p = 1; }
        }
    }
    if (s->lc.n == 0) return L_IGNORE;
    int64_t slot;
    if (add_slot(s, l, n, start, V_GENERIC, &slot) < 0) return L_ERR;
    if (keep_row(s, ln, slot, K_FREE, -1, worker, partition, gpu_tag ? S_GPU : S_FIN) < 0) return L_ERR;
    return L_READ;
}

/* whether a word (lower-cased, n bytes) is one of a NULL-ended list */
static int in_words(const char *w, Py_ssize_t n, const char *const *list) {
    for (; *list; list++)
        if ((Py_ssize_t)strlen(*list) == n && memcmp(w, *list, (size_t)n) == 0) return 1;
    return 0;
}

static const char *const NOT_TIME_W[] = {
    /* counters */ "step", "steps", "global_step", "epoch", "iter", "iteration", "batch", "round", "cycle", "loop",
    "microbatch", "micro_step",
    /* metrics */ "loss", "acc", "accuracy", "lr", "learning_rate", "ppl", "perplexity", "grad_norm", "norm", "score",
    "reward", "top1", "top5", "f1", "bleu", "mae", "mse", "rmse", "auc", "map", "temp", "temperature", "mem",
    "memory", "util", "utilization", "power",
    /* rates */ "fps", "qps", "tps", "rps", "ips", "throughput", "bandwidth", "bw", "speed", "rate", "flops",
    "tflops", "mfu", "gbs", "mbs",
    /* time stamps */ "printed_at", "logged_at", "emitted_at", "ts", "timestamp", "now", "t_wall", "unix_time", NULL};
static const char *const LAST_NOT_TIME_W[] = {"loss", "acc", "accuracy", "norm", "num", "per", "fps", "qps", "tps",
                                              "rps", "ips", "throughput", "bandwidth", "bw", "speed", "rate",
                                              "flops", "tflops", "mfu", "gbs", "mbs", "at", NULL};

/* a key that may be no duration (parsers.words.not_a_duration, or more: a time word in it does
 * not clear it, `time_per_step` is a rate): its line goes to Python, which decides */
static int maybe_not_a_duration(const char *t, Py_ssize_t kn) {
    char low[64];
    if (kn >= (Py_ssize_t)sizeof low) return 1;
    for (Py_ssize_t k = 0; k < kn; k++) {
        char c = t[k];
        low[k] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : (c == '-' ? '_' : c);
    }
    Py_ssize_t a = 0;  /* first word: [0, a) */
    while (a < kn && low[a] != '_') a++;
    Py_ssize_t b = kn;  /* last word: [b, kn) */
    while (b > 0 && low[b - 1] != '_') b--;
    if (in_words(low, kn, NOT_TIME_W) || in_words(low + b, kn - b, LAST_NOT_TIME_W) || in_words(low, a, (const char *const[]){"num", NULL})) return 1;
    for (Py_ssize_t k = 0; k + 2 < kn; k++)  /* a word `per` anywhere */
        if (low[k] == 'p' && low[k + 1] == 'e' && low[k + 2] == 'r' && (k == 0 || low[k - 1] == '_') && (k + 3 == kn || low[k + 3] == '_')) return 1;
    return 0;
}

/* a key=value line of the condensed / kv formats (kv.read_kv) */
static int kvline(Scanner *s, const char *l, Py_ssize_t n, int64_t ln, Py_ssize_t start) {
    int strict = s->fmt == F_CONDENSED;
    next_gen(s);
    Py_ssize_t i = 0, tn; const char *t;
    while (next_tok(l, n, &i, 1, &t, &tn)) {
        const char *e = find_eq(t, tn);
        if (!e) continue;
        Py_ssize_t kn = e - t;
        const char *v = e + 1;
        Py_ssize_t vn = tn - kn - 1;
        int good = kn > 0;
        for (Py_ssize_t k = 0; good && k < kn; k++) good = is_alnum(t[k]) || t[k] == '_' || t[k] == '.' || t[k] == '-';
        if (!good) {
            if (strict) return L_PUNT;
            continue;
        }
        double x;
        if ((kn > 6 && ends_with(t, kn, "_bytes", 6) && is_identifier(t, kn)) || eq(t, kn, "num_circuits")) {
            if (!parse_number(v, vn, &x) || x < 0) return L_PUNT;
            int rr = field(s, &s->qnames, &s->seen_q, &s->qc, &s->qv, t, kn, x);
            if (rr != L_READ) return rr;
            continue;
        }
        Py_ssize_t nn = kn;
        double kf = 0.0; /* 0: the key has no unit */
        if (kn > 3 && ends_with(t, kn, "_ms", 3)) { nn = kn - 3; kf = 1.0; }
        else if (kn > 3 && ends_with(t, kn, "_us", 3)) { nn = kn - 3; kf = 1e-3; }
        else if (kn > 3 && ends_with(t, kn, "_ns", 3)) { nn = kn - 3; kf = 1e-6; }
        else if (kn > 2 && ends_with(t, kn, "_s", 2)) { nn = kn - 2; kf = 1000.0; }
        double factor;
        if (parse_number(v, vn, &x)) {
            /* kv: a bare number is a time only under a time-named key or the held key (Python decides) */
            if (!strict && kf == 0.0 && !(kn == s->held_len && memcmp(t, s->held, (size_t)kn) == 0)) return L_PUNT;
            factor = kf != 0.0 ? kf : 1.0;
        } else {
            double vf = 0.0;
            Py_ssize_t un = 0;
            if (ends_with(v, vn, "ms", 2)) { vf = 1.0; un = 2; }
            else if (ends_with(v, vn, "us", 2)) { vf = 1e-3; un = 2; }
            else if (ends_with(v, vn, "ns", 2)) { vf = 1e-6; un = 2; }
            else if (ends_with(v, vn, "s", 1)) { vf = 1000.0; un = 1; }
            if (un) {
                if (!parse_number(v, vn - un, &x)) return L_PUNT;
                factor = vf;
            } else {
                if (maybe_float(v, vn)) return L_PUNT; /* float() may read what this does not */
                if (strict || kf != 0.0 || (nn == s->held_len && memcmp(t, s->held, (size_t)nn) == 0)) return L_PUNT;
                continue; /* a label (`job=abc`) */
            }
        }
        if (x < 0) return L_PUNT;
        int rr = field(s, &s->names, &s->seen_n, &s->lc, &s->lv, t, nn, x * factor);
        if (rr != L_READ) return rr;
    }
    if (s->lc.n == 0 && s->qc.n == 0) return L_IGNORE;
    Py_ssize_t held_at = -1;
    for (Py_ssize_t k = 0; k < s->lc.n; k++) {
        int32_t c = s->lc.p[k];
        if (s->names.len[c] == s->held_len && memcmp(s->names.arena + s->names.off[c], s->held, (size_t)s->held_len) == 0) {
            held_at = k; break;
        }
    }
    int64_t slot;
    if (add_slot(s, l, n, start, V_GENERIC, &slot) < 0) return L_ERR;
    if (held_at >= 0 && (VI64_push(&s->hrow, s->meta.n / 8) < 0 || VF64_push(&s->hval, s->lv.p[held_at]) < 0)) return L_ERR;
    if (keep_row(s, ln, slot, held_at >= 0 ? K_HELD : K_GPU, -1, -1, -1, strict ? S_CONDENSED : S_KV) < 0) return L_ERR;
    return L_READ;
}

/* character classes: 1 = a marker's '_' or ',', 2 = not read here (control, non-ASCII), 4 = '=' */
static unsigned char CLS[256];

static void init_cls(void) {
    for (int c = 0; c < 256; c++) CLS[c] = (c < 0x20 && c != '\t') || c >= 0x7f ? 2 : 0;
    CLS['_'] = 1; CLS[','] = 1; CLS['='] = 4;
}

/* one line (without its \n and a trailing \r); L_READ / L_IGNORE / L_PUNT / L_ERR */
static int line(Scanner *s, const char *l, Py_ssize_t n, int64_t ln, Py_ssize_t start) {
    Py_ssize_t p_ts = -1, p_ntt = -1, p_tsn = -1, p_tl = -1, p_tr = -1;
    int cuzk = 0, bad = 0, has_eq = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = CLS[(unsigned char)l[i]];
        if (!c) continue;
        if (c & 2) { bad = 1; continue; }
        if (c & 4) { has_eq = 1; continue; }
        if (l[i] == '_') {
            if (i >= 4 && l[i - 4] == 'C' && l[i - 3] == 'U' && l[i - 2] == 'Z' && l[i - 1] == 'K') {
                cuzk = 1;
                if (n - i - 1 >= 7 && memcmp(l + i + 1, "TIMING:", 7) == 0) {
                    if (n - i - 1 >= 8 && l[i + 8] == ' ') { if (p_ts < 0) p_ts = i - 4; }
                    else if (p_tsn < 0) p_tsn = i - 4;
                } else if (p_ntt < 0 && n - i - 1 >= 6 && memcmp(l + i + 1, "NTT_H:", 6) == 0) {
                    p_ntt = i - 4;
                }
            }
            if (p_tr < 0 && n - i >= 8 && memcmp(l + i, "_TIMING ", 8) == 0) p_tr = i;
        } else if (i >= 8 && p_tl < 0 && memcmp(l + i - 8, "TIMELINE", 8) == 0) {
            p_tl = i - 8;
        }
    }
    if (s->fmt == F_CUZK) {
        if (!cuzk && p_tl < 0 && p_tr < 0) return L_IGNORE; /* (not in the scan's idx) */
    } else if (!has_eq) {
        return L_IGNORE;
    }
    if (bad || n > MAX_LINE) return L_PUNT;
    if (s->fmt == F_CUZK) {
        if (p_ts >= 0) return cuzk_timing(s, l, n, p_ts + 13, ln, start);
        if (p_ntt >= 0) return cuzk_ntt(s, l, n, p_ntt + 11, ln, start);
        if (p_tsn >= 0) return L_PUNT;
        if (p_tl >= 0) return timeline(s, l, n, p_tl + 9, ln, start, V_TIMELINE);
        if (p_tr >= 0) {
            Py_ssize_t at = find_tag(l, n);
            if (at >= 0) return tracing(s, l, n, at, ln, start);
        }
        return L_IGNORE;
    }
    if (p_tl >= 0) return timeline(s, l, n, p_tl + 9, ln, start, V_GENERIC);
    if (p_tr >= 0) {
        Py_ssize_t at = find_tag(l, n);
        if (at >= 0) return tracing(s, l, n, at, ln, start);
    }
    return kvline(s, l, n, ln, start);
}

static void reset_chunk(Scanner *s) {
    s->meta.n = s->codes.n = s->vals.n = s->hrow.n = s->hval.n = s->qrow.n = s->qcode.n = s->qval.n = 0;
    s->tl_line.n = s->tl_slot.n = s->tl_part.n = s->tl_worker.n = 0;
    s->tl_off.n = s->tl_synth.n = s->tl_gpu.n = s->tl_event.n = s->tl_job.n = 0;
    s->ts.n = s->punt.n = s->pyts.n = 0;
    s->timing = 0;
}

static int put(PyObject *d, const char *key, PyObject *v) {
    if (!v) return -1;
    int r = PyDict_SetItemString(d, key, v);
    Py_DECREF(v);
    return r;
}

static PyObject *Scanner_feed(Scanner *s, PyObject *args) {
    Py_buffer view;
    long long first;
    if (!PyArg_ParseTuple(args, "y*L", &view, &first)) return NULL;
    reset_chunk(s);
    const char *b = (const char *)view.buf;
    Py_ssize_t n = view.len, pos = 0;
    int64_t ln = first;
    int err = 0;
    while (pos < n) {
        const char *nl = (const char *)memchr(b + pos, '\n', (size_t)(n - pos));
        Py_ssize_t end = nl ? (Py_ssize_t)(nl - b) : n;
        Py_ssize_t len = end - pos;
        if (len > 0 && b[end - 1] == '\r') len--;
        int r = line(s, b + pos, len, ln, pos);
        if (r == L_ERR) { err = 1; break; }
        if (r == L_PUNT && punt(s, ln, pos, len) < 0) { err = 1; break; }
        ln++;
        pos = end + 1;
    }
    PyBuffer_Release(&view);
    if (err) return NULL;
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    if (put(d, "meta", vec_bytes(s->meta.p, s->meta.n, 8)) < 0 || put(d, "codes", vec_bytes(s->codes.p, s->codes.n, 4)) < 0 ||
        put(d, "values", vec_bytes(s->vals.p, s->vals.n, 8)) < 0 || put(d, "held_row", vec_bytes(s->hrow.p, s->hrow.n, 8)) < 0 ||
        put(d, "held_val", vec_bytes(s->hval.p, s->hval.n, 8)) < 0 || put(d, "qrow", vec_bytes(s->qrow.p, s->qrow.n, 8)) < 0 ||
        put(d, "qcode", vec_bytes(s->qcode.p, s->qcode.n, 4)) < 0 || put(d, "qval", vec_bytes(s->qval.p, s->qval.n, 8)) < 0 ||
        put(d, "tl_line", vec_bytes(s->tl_line.p, s->tl_line.n, 8)) < 0 ||
        put(d, "tl_slot", vec_bytes(s->tl_slot.p, s->tl_slot.n, 8)) < 0 ||
        put(d, "tl_off", vec_bytes(s->tl_off.p, s->tl_off.n, 8)) < 0 ||
        put(d, "tl_event", vec_bytes(s->tl_event.p, s->tl_event.n, 4)) < 0 ||
        put(d, "tl_job", vec_bytes(s->tl_job.p, s->tl_job.n, 4)) < 0 ||
        put(d, "tl_part", vec_bytes(s->tl_part.p, s->tl_part.n, 8)) < 0 ||
        put(d, "tl_worker", vec_bytes(s->tl_worker.p, s->tl_worker.n, 8)) < 0 ||
        put(d, "tl_synth", vec_bytes(s->tl_synth.p, s->tl_synth.n, 8)) < 0 ||
        put(d, "tl_gpu", vec_bytes(s->tl_gpu.p, s->tl_gpu.n, 8)) < 0 || put(d, "ts", vec_bytes(s->ts.p, s->ts.n, 8)) < 0 ||
        put(d, "punt", vec_bytes(s->punt.p, s->punt.n, 8)) < 0 || put(d, "pyts", vec_bytes(s->pyts.p, s->pyts.n, 8)) < 0 ||
        put(d, "timing_lines", PyLong_FromLongLong(s->timing)) < 0 || put(d, "names", stab_new(&s->names)) < 0 ||
        put(d, "qnames", stab_new(&s->qnames)) < 0 || put(d, "strings", stab_new(&s->strs)) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static int Scanner_init(Scanner *s, PyObject *args, PyObject *kw) {
    (void)kw;
    int fmt;
    Py_buffer held;
    if (!PyArg_ParseTuple(args, "iy*", &fmt, &held)) return -1;
    if (fmt < F_CUZK || fmt > F_KV) {
        PyBuffer_Release(&held);
        PyErr_SetString(PyExc_ValueError, "fmt: 0 cuzk, 1 condensed, 2 kv");
        return -1;
    }
    s->fmt = fmt;
    PyMem_Free(s->held);
    s->held = (char *)PyMem_Malloc((size_t)held.len + 1);
    if (!s->held) { PyBuffer_Release(&held); PyErr_NoMemory(); return -1; }
    memcpy(s->held, held.buf, (size_t)held.len);
    s->held_len = held.len;
    PyBuffer_Release(&held);
    s->gen = 0;
    return 0;
}

static void Scanner_dealloc(Scanner *s) {
    VI64_free(&s->meta); VI32_free(&s->codes); VF64_free(&s->vals); VI64_free(&s->hrow); VF64_free(&s->hval);
    VI64_free(&s->qrow); VI32_free(&s->qcode); VF64_free(&s->qval);
    VI64_free(&s->tl_line); VI64_free(&s->tl_slot); VI64_free(&s->tl_part); VI64_free(&s->tl_worker);
    VF64_free(&s->tl_off); VF64_free(&s->tl_synth); VF64_free(&s->tl_gpu); VI32_free(&s->tl_event); VI32_free(&s->tl_job);
    VF64_free(&s->ts); VI64_free(&s->punt); VI64_free(&s->pyts);
    VI32_free(&s->lc); VF64_free(&s->lv); VI32_free(&s->qc); VF64_free(&s->qv);
    VU32_free(&s->seen_n); VU32_free(&s->seen_q);
    stab_free(&s->names); stab_free(&s->qnames); stab_free(&s->strs);
    PyMem_Free(s->held); PyMem_Free(s->scratch);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyMethodDef Scanner_methods[] = {
    {"feed", (PyCFunction)Scanner_feed, METH_VARARGS,
     "feed(buf, first_line) -> dict: read whole lines (each ending with \\n) numbered from first_line"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gpuscope.parsers._scan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Scanner(fmt, held): the compiled line scanner of one log (see the module's source)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
};

/* -- the lines format: each line's shape and where its message starts ------------------------
 *
 *   sh = Shapes()
 *   d = sh.feed(buf, first_line)    per line that may be a timing line (its message holds an
 *                                   ASCII digit, or Python must look): ln, start, len, msg (the
 *                                   offset of its message), shape (-1: Python reads the line
 *                                   itself), ts (its prefix's time), tsk (1: Python reads the
 *                                   time); `shapes`: the shapes first seen in this buffer;
 *                                   `marker`: whether a line holds a CuZK or condensed marker
 *                                   (detect.py's: a format chosen by the log's head is checked
 *                                   on every line as it is split, not by a pass of its own)
 *   x, ok = columns(buf, offsets, spans)   float64 / uint8, lines x spans: the number printed at
 *                                   buf[o+a:o+a+w] for each offset o and each (a, w); ok 0 where
 *                                   it is no plain number
 *   ok = spelled(buf, offsets, pos, text)  uint8 per offset o: buf[o+pos[j]] is text[j], every j
 *
 * A line's shape is its message (after the time prefix, as lineread.message_start finds it)
 * with every digit 1-9 written 0: lines of one shape have their tokens and numbers at the
 * same offsets, which parsers/log/linereplay.py replays the Python reader's plan over, in numpy.
 * Python reads a line itself (shape -1) when it holds a quote, a control or non-ASCII byte,
 * a TIMELINE / tracing / MLLOG marker or more than MAX_LINE bytes. */

typedef struct {
    PyObject_HEAD
    STab shapes;
    VI64 ln, start, len, msg; VI32 shape, tsk; VF64 ts;
    char *scratch; Py_ssize_t scratch_cap;
    int format_marker; /* a chunk's line holds a marker of detect.py's other formats */
} Shapes;

static const char *const MONTHS[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* linetime.LineTimes.ts_of(line) with the generic prefixes: 0 and *ts, or 1 (Python reads it) */
static int line_ts(const char *l, Py_ssize_t n, double *ts) {
    *ts = NAN;
    if (n > 10 && l[10] == 'T' && l[4] == '-') {
        const char *sp = memchr(l, ' ', (size_t)n);
        Py_ssize_t tn = sp ? (Py_ssize_t)(sp - l) : n;
        if (sp == l) tn = n;
        if (iso_token(l, tn, ts)) return 0;
        *ts = NAN;
        return 1;
    }
    char c = n ? l[0] : 0;
    if (n == 0 || c == ' ' || c == 'C' || c == 'T') return 0;
    if (is_digit(c)) return n > 13 && l[4] == '-' && l[13] == ':';
    if (c == '[') return 1;
    if (n > 3 && l[3] == ' ')
        for (int k = 0; k < 12; k++) if (memcmp(l, MONTHS[k], 3) == 0) return 1;
    /* a " | " or "\t| " in the first 80 bytes: each '|' found by memchr, then its neighbours */
    Py_ssize_t m = n < 80 ? n : 80;
    for (Py_ssize_t p = 1; p + 1 < m; p++) {
        const char *bar = (const char *)memchr(l + p, '|', (size_t)(m - 1 - p));
        if (!bar) return 0;
        p = (Py_ssize_t)(bar - l);
        if ((l[p - 1] == ' ' || l[p - 1] == '\t') && l[p + 1] == ' ') return 1;
    }
    return 0;
}

/* lineread.message_start */
static Py_ssize_t msg_start(const char *l, Py_ssize_t n) {
    if (!(n > 4 && is_digit(l[0]) && l[4] == '-' && n > 7 && l[7] == '-' && is_digit(l[1]) && is_digit(l[2]) && is_digit(l[3])))
        return 0;
    const char *sp = memchr(l, ' ', (size_t)n);
    if (!sp) return n;
    Py_ssize_t s1 = sp - l;
    if (n > 10 && l[10] == ' ') {
        const char *sp2 = memchr(l + s1 + 1, ' ', (size_t)(n - s1 - 1));
        return sp2 ? (Py_ssize_t)(sp2 - l) + 1 : n;
    }
    return s1 + 1;
}

/* one line: 0 kept or ignored, -1 memory error */
static unsigned char SHAPE_CLS[256]; /* 0 plain, 1 digit, 2 special byte, 3 a marker's first byte */

static void init_shape_cls(void) {
    for (int c = 0; c < 256; c++) SHAPE_CLS[c] = (c < 0x20 && c != '\t') || c >= 0x7f || c == '\'' ? 2 : 0;
    for (int c = '0'; c <= '9'; c++) SHAPE_CLS[c] = 1;
    SHAPE_CLS['T'] = SHAPE_CLS['_'] = SHAPE_CLS[':'] = 3;
}

/* Bits of shape_at: the line is Python's (a marker of the lines reader's own), and a marker of
 * another format's detection (detect.py: CuZK's or the condensed keys) is at i. */
enum { AT_SPECIAL = 1, AT_FORMAT = 2 };

static inline int at(const char *l, Py_ssize_t n, Py_ssize_t i, Py_ssize_t back, const char *lit, Py_ssize_t m) {
    return i >= back && n - (i - back) >= m && memcmp(l + i - back, lit, (size_t)m) == 0;
}

/* what the class-3 byte at l[i] starts or is part of: AT_SPECIAL | AT_FORMAT bits */
static int shape_at(const char *l, Py_ssize_t n, Py_ssize_t i) {
    char ch = l[i];
    if (ch == 'T')
        return at(l, n, i, 0, "TIMELINE,", 9) ? AT_SPECIAL | AT_FORMAT : 0;
    if (ch == ':')
        return at(l, n, i, 0, ":::MLLOG ", 9) ? AT_SPECIAL : 0;
    /* '_': the markers of detect.py holding it at the offset after the name (what follows it:
     * T for _TIMING, N for CUZK_NTT_H, h and w for mutex_held / mutex_wait, k for ntt_kernels) */
    char nx = i + 1 < n ? l[i + 1] : 0;
    if (nx != 'T' && nx != 'N' && nx != 'h' && nx != 'w' && nx != 'k') return 0;
    int r = at(l, n, i, 0, "_TIMING ", 8) ? AT_SPECIAL : 0;
    if (at(l, n, i, 4, "CUZK_TIMING:", 12) || at(l, n, i, 4, "CUZK_NTT_H:", 11) || at(l, n, i, 3, "GPU_TIMING ", 11) ||
        at(l, n, i, 3, "FIN_TIMING ", 11) || at(l, n, i, 5, "mutex_held_ms=", 14) ||
        at(l, n, i, 5, "mutex_wait_ms=", 14) || at(l, n, i, 3, "ntt_kernels=", 12))
        r |= AT_FORMAT;
    return r;
}

/* whether a line holds another format's marker anywhere (a line whose reading stopped early) */
static int has_format_marker(const char *l, Py_ssize_t n) {
    const char *p = NULL, *q = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p != l + n && (!p || p < l + i)) { p = (const char *)memchr(l + i, '_', (size_t)(n - i)); if (!p) p = l + n; }
        if (q != l + n && (!q || q < l + i)) { q = (const char *)memchr(l + i, 'T', (size_t)(n - i)); if (!q) q = l + n; }
        i = (Py_ssize_t)((p < q ? p : q) - l);
        if (i < n && (shape_at(l, n, i) & AT_FORMAT)) return 1;
    }
    return 0;
}

#if defined(__SSE2__)
#include <emmintrin.h>

/* sixteen bytes of a line classed at once: one bit a byte for its digits, its special bytes
 * (SHAPE_CLS 2: a control byte but tab, DEL, a quote, any byte >= 0x80, a signed byte below
 * 0x20) and its marker bytes (class 3: T, _ and :), and its skeleton (digits written 0) */
typedef struct { int digit, special, mark; __m128i skel; } Block16;

static inline Block16 block16(const char *p) {
    const __m128i v = _mm_loadu_si128((const __m128i *)p), zero = _mm_set1_epi8('0');
    __m128i d = _mm_cmplt_epi8(_mm_xor_si128(_mm_sub_epi8(v, zero), _mm_set1_epi8((char)0x80)),
                               _mm_set1_epi8((char)(0x80 + 10)));
    __m128i sp = _mm_andnot_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')), _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
    sp = _mm_or_si128(sp, _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)), _mm_cmpeq_epi8(v, _mm_set1_epi8('\''))));
    __m128i mk = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('T')),
                              _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('_')), _mm_cmpeq_epi8(v, _mm_set1_epi8(':'))));
    Block16 b = {_mm_movemask_epi8(d), _mm_movemask_epi8(sp), _mm_movemask_epi8(mk),
                 _mm_or_si128(_mm_and_si128(d, zero), _mm_andnot_si128(d, v))};
    return b;
}

/* whether any marker byte of `marks` (bits from l[base]) starts something shape_at knows (a ':'
 * or '_' of a key is none: those bytes read as plain) */
static inline int marks_hit(const char *l, Py_ssize_t n, Py_ssize_t base, int marks) {
    for (; marks; marks &= marks - 1)
        if (shape_at(l, n, base + __builtin_ctz((unsigned)marks))) return 1;
    return 0;
}
#endif

static int shape_line(Shapes *s, const char *l, Py_ssize_t n, int64_t ln, Py_ssize_t start) {
    int special = n > MAX_LINE;
    Py_ssize_t m0 = msg_start(l, n), mn = n - m0;
    int digit = 0, fmt = 0;
    if (!special && mn > s->scratch_cap) {
        char *p = (char *)PyMem_Realloc(s->scratch, (size_t)mn + 16);
        if (!p) { PyErr_NoMemory(); return -1; }
        s->scratch = p; s->scratch_cap = mn;
    }
    /* the prefix: its classes and markers; then the message: the same and its skeleton */
    char *sk = s->scratch;
    Py_ssize_t i = 0;
#if defined(__SSE2__)
    /* the prefix (a timestamp) sixteen bytes at a time while they hold no special byte: its
     * marker bytes checked in order, as the byte loop below checks them, i left past the one
     * that makes the line special as that loop leaves it */
    while (i + 16 <= m0 && !special) {
        Block16 b = block16(l + i);
        if (b.special) break;
        int marks = b.mark;
        Py_ssize_t next = i + 16;
        while (marks) {
            Py_ssize_t q = i + __builtin_ctz((unsigned)marks);
            int a = shape_at(l, n, q);
            fmt |= a & AT_FORMAT;
            special |= a & AT_SPECIAL;
            if (special) { next = q + 1; break; }
            marks &= marks - 1;
        }
        i = next;
    }
#endif
    for (; i < m0 && !special; i++) {
        unsigned char k = SHAPE_CLS[(unsigned char)l[i]];
        if (k == 2) special = 1;
        else if (k == 3) { int a = shape_at(l, n, i); fmt |= a & AT_FORMAT; special |= a & AT_SPECIAL; }
    }
    while (i < n && !special) {
#if defined(__SSE2__)
        /* sixteen bytes at once while they hold no special byte and no marker */
        int clean = 1;
        while (i + 16 <= n) {
            Block16 b = block16(l + i);
            if (b.special || marks_hit(l, n, i, b.mark)) { clean = 0; break; }  /* (read byte by byte below) */
            digit |= b.digit;
            _mm_storeu_si128((__m128i *)(sk + (i - m0)), b.skel);
            i += 16;
        }
        /* the last 1-15 bytes as the lanes past i of the message's last sixteen (the lanes before
         * i read again to the same skeleton bytes), where they hold no special byte and no marker */
        if (clean && i < n && n - 16 >= m0) {
            Py_ssize_t w = n - 16;
            int keep = (0xFFFF << (i - w)) & 0xFFFF;
            Block16 b = block16(l + w);
            if (!(b.special & keep) && !marks_hit(l, n, w, b.mark & keep)) {
                digit |= b.digit & keep;
                _mm_storeu_si128((__m128i *)(sk + (w - m0)), b.skel);
                i = n;
            }
        }
        Py_ssize_t stop = i + 16 < n ? i + 16 : n;
#else
        Py_ssize_t stop = n;
#endif
        for (; i < stop && !special; i++) {
            char ch = l[i];
            unsigned char k = SHAPE_CLS[(unsigned char)ch];
            if (k == 1) { digit = 1; ch = '0'; }
            else if (k == 2) special = 1;
            else if (k == 3) { int a = shape_at(l, n, i); fmt |= a & AT_FORMAT; special |= a & AT_SPECIAL; }
            sk[i - m0] = ch;
        }
    }
    if (special && !fmt && i < n) fmt = has_format_marker(l, n);  /* (read no further: the rest) */
    if (fmt) s->format_marker = 1;
    if (!special && !digit) return 0;
    int32_t code = -1;
    double ts = NAN;
    int tsk = 0;
    if (!special) {
        code = stab_code_h(&s->shapes, s->scratch, mn, hash_bytes(s->scratch, mn));
        if (code < 0) return -1;
        tsk = line_ts(l, n, &ts);
    }
    if (VI64_push(&s->ln, ln) < 0 || VI64_push(&s->start, start) < 0 || VI64_push(&s->len, n) < 0 ||
        VI64_push(&s->msg, start + m0) < 0 || VI32_push(&s->shape, code) < 0 || VI32_push(&s->tsk, tsk) < 0 ||
        VF64_push(&s->ts, ts) < 0)
        return -1;
    return 0;
}

static PyObject *Shapes_feed(Shapes *s, PyObject *args) {
    Py_buffer view;
    long long first;
    if (!PyArg_ParseTuple(args, "y*L", &view, &first)) return NULL;
    s->ln.n = s->start.n = s->len.n = s->msg.n = s->shape.n = s->tsk.n = s->ts.n = 0;
    s->format_marker = 0;
    const char *b = (const char *)view.buf;
    Py_ssize_t n = view.len, pos = 0;
    int64_t ln = first;
    int err = 0;
    while (pos < n) {
        const char *nl = (const char *)memchr(b + pos, '\n', (size_t)(n - pos));
        Py_ssize_t end = nl ? (Py_ssize_t)(nl - b) : n;
        Py_ssize_t len = end - pos;
        if (len > 0 && b[end - 1] == '\r') len--;
        if (shape_line(s, b + pos, len, ln, pos) < 0) { err = 1; break; }
        ln++;
        pos = end + 1;
    }
    PyBuffer_Release(&view);
    if (err) return NULL;
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    if (put(d, "ln", vec_bytes(s->ln.p, s->ln.n, 8)) < 0 || put(d, "start", vec_bytes(s->start.p, s->start.n, 8)) < 0 ||
        put(d, "len", vec_bytes(s->len.p, s->len.n, 8)) < 0 || put(d, "msg", vec_bytes(s->msg.p, s->msg.n, 8)) < 0 ||
        put(d, "shape", vec_bytes(s->shape.p, s->shape.n, 4)) < 0 || put(d, "tsk", vec_bytes(s->tsk.p, s->tsk.n, 4)) < 0 ||
        put(d, "ts", vec_bytes(s->ts.p, s->ts.n, 8)) < 0 || put(d, "shapes", stab_new(&s->shapes)) < 0 ||
        put(d, "marker", PyBool_FromLong(s->format_marker)) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static void Shapes_dealloc(Shapes *s) {
    VI64_free(&s->ln); VI64_free(&s->start); VI64_free(&s->len); VI64_free(&s->msg);
    VI32_free(&s->shape); VI32_free(&s->tsk); VF64_free(&s->ts);
    stab_free(&s->shapes); PyMem_Free(s->scratch);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyMethodDef Shapes_methods[] = {
    {"feed", (PyCFunction)Shapes_feed, METH_VARARGS,
     "feed(buf, first_line) -> dict: the shapes of whole lines (each ending with \\n) numbered from first_line"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ShapesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gpuscope.parsers._scan.Shapes",
    .tp_basicsize = sizeof(Shapes),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Shapes(): the shapes of a `lines` log's lines (see the module's source)",
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)Shapes_dealloc,
    .tp_methods = Shapes_methods,
};

/* columns(buf, offsets, spans) -> (float64 bytes, uint8 bytes), m x k row-major: per offset o
 * (a line's message), the numbers at buf[o+a:o+a+w] for each (a, w) of spans (int64 pairs);
 * one line's numbers read together (one pass over the lines, not one per number) */
#define COLUMNS_AHEAD 16

/* buf[q] asked for ahead where q lies inside the buffer (a no-op without GCC's builtin) */
static inline void prefetch_in(const void *buf, Py_ssize_t len, Py_ssize_t q) {
#if defined(__GNUC__)
    if (q >= 0 && q < len) __builtin_prefetch((const char *)buf + q);
#else
    (void)buf; (void)len; (void)q;
#endif
}

static PyObject *columns(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view, offs, sp;
    if (!PyArg_ParseTuple(args, "y*y*y*", &view, &offs, &sp)) return NULL;
    Py_ssize_t m = offs.len / 8, k = sp.len / 16;
    const int64_t *o = (const int64_t *)offs.buf, *aw = (const int64_t *)sp.buf;
    const char *buf = (const char *)view.buf;
    PyObject *fx = PyByteArray_FromStringAndSize(NULL, m * k * 8), *fok = PyByteArray_FromStringAndSize(NULL, m * k);
    if (!fx || !fok) {
        Py_XDECREF(fx); Py_XDECREF(fok);
        PyBuffer_Release(&view); PyBuffer_Release(&offs); PyBuffer_Release(&sp);
        return NULL;
    }
    double *x = (double *)PyByteArray_AS_STRING(fx);
    char *ok = PyByteArray_AS_STRING(fok);
    for (Py_ssize_t i = 0; i < m; i++) {
        /* the lines of one shape lie apart in the chunk, each a cache miss: asked for ahead,
         * several are on their way at once (4-10x on a 16 MB chunk's scattered lines) */
        if (i + COLUMNS_AHEAD < m && k) {
            prefetch_in(buf, view.len, (Py_ssize_t)o[i + COLUMNS_AHEAD] + (Py_ssize_t)aw[0]);
            prefetch_in(buf, view.len, (Py_ssize_t)o[i + COLUMNS_AHEAD] + (Py_ssize_t)aw[2 * (k - 1)]);
        }
        for (Py_ssize_t j = 0; j < k; j++) {
            Py_ssize_t p = (Py_ssize_t)o[i] + (Py_ssize_t)aw[2 * j], w = (Py_ssize_t)aw[2 * j + 1];
            double *xi = &x[i * k + j];
            *xi = 0.0;
            ok[i * k + j] = p >= 0 && p + w <= view.len && parse_number(buf + p, w, xi);
            if (!ok[i * k + j]) *xi = 0.0;
        }
    }
    PyBuffer_Release(&view); PyBuffer_Release(&offs); PyBuffer_Release(&sp);
    return Py_BuildValue("NN", fx, fok);
}

/* spelled(buf, offsets, pos, text) -> uint8 bytes, one per offset o (a line's message): 1 when
 * buf[o + pos[j]] == text[j] for every j (int64 pos, as many as text's bytes): the fixed
 * characters of a plan checked on every line of its shape in one pass, the lines asked for
 * ahead as in columns (numpy's gather of m x len indices missed the cache line by line) */
static PyObject *spelled(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view, offs, ps, tx;
    if (!PyArg_ParseTuple(args, "y*y*y*y*", &view, &offs, &ps, &tx)) return NULL;
    Py_ssize_t m = offs.len / 8, k = tx.len;
    const int64_t *o = (const int64_t *)offs.buf, *pos = (const int64_t *)ps.buf;
    const unsigned char *buf = (const unsigned char *)view.buf, *t = (const unsigned char *)tx.buf;
    PyObject *out = ps.len / 8 == k ? PyByteArray_FromStringAndSize(NULL, m) : NULL;
    if (out) {
        char *ok = PyByteArray_AS_STRING(out);
        for (Py_ssize_t i = 0; i < m; i++) {
            if (i + COLUMNS_AHEAD < m && k)
                prefetch_in(buf, view.len, (Py_ssize_t)o[i + COLUMNS_AHEAD] + (Py_ssize_t)pos[0]);
            int same = 1;
            for (Py_ssize_t j = 0; j < k && same; j++) {
                Py_ssize_t q = (Py_ssize_t)o[i] + (Py_ssize_t)pos[j];
                same = q >= 0 && q < view.len && buf[q] == t[j];
            }
            ok[i] = (char)same;
        }
    } else if (!PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "spelled: one position per byte of text");
    }
    PyBuffer_Release(&view); PyBuffer_Release(&offs); PyBuffer_Release(&ps); PyBuffer_Release(&tx);
    return out;
}

/* factorize(seq) -> (int64 codes bytes, list of uniques): pandas.factorize of a sequence of
 * objects (names), by first appearance; None and NaN get -1 as there. The same object is
 * found by its address (a name repeats as one str object), equal objects are merged by a
 * dict of the distinct ones, so the codes are those of pandas to the element. */
static PyObject *factorize(PyObject *self, PyObject *arg) {
    (void)self;
    PyObject *seq = PySequence_Fast(arg, "factorize: a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *codes = PyByteArray_FromStringAndSize(NULL, n * 8), *uniq = PyList_New(0), *byval = PyDict_New();
    Py_ssize_t nslots = 64;
    while (nslots < 4 * 1024) nslots *= 2;
    PyObject **keys = (PyObject **)PyMem_Calloc((size_t)nslots, sizeof(PyObject *));
    int64_t *vals = (int64_t *)PyMem_Malloc((size_t)nslots * sizeof(int64_t));
    Py_ssize_t used = 0;
    if (!codes || !uniq || !byval || !keys || !vals) goto fail;
    int64_t *out = (int64_t *)PyByteArray_AS_STRING(codes);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = items[i];
        if (o == Py_None || (PyFloat_Check(o) && isnan(PyFloat_AS_DOUBLE(o)))) { out[i] = -1; continue; }
        size_t h = ((size_t)o >> 4) * 11400714819323198485ULL;
        Py_ssize_t j = (Py_ssize_t)(h & (size_t)(nslots - 1));
        while (keys[j] && keys[j] != o) j = (j + 1) & (nslots - 1);
        if (keys[j]) { out[i] = vals[j]; continue; }
        /* a new object: its value's code (an equal object seen before) or a new one */
        PyObject *c = PyDict_GetItemWithError(byval, o);
        int64_t code;
        if (c) {
            code = PyLong_AsLongLong(c);
        } else {
            if (PyErr_Occurred()) goto fail;
            code = PyList_GET_SIZE(uniq);
            PyObject *num = PyLong_FromLongLong(code);
            if (!num || PyDict_SetItem(byval, o, num) < 0) { Py_XDECREF(num); goto fail; }
            Py_DECREF(num);
            if (PyList_Append(uniq, o) < 0) goto fail;
        }
        keys[j] = o; vals[j] = code; out[i] = code;
        if (2 * ++used > nslots) { /* grow: rehash the addresses */
            Py_ssize_t ns = 2 * nslots;
            PyObject **nk = (PyObject **)PyMem_Calloc((size_t)ns, sizeof(PyObject *));
            int64_t *nv = (int64_t *)PyMem_Malloc((size_t)ns * sizeof(int64_t));
            if (!nk || !nv) { PyMem_Free(nk); PyMem_Free(nv); PyErr_NoMemory(); goto fail; }
            for (Py_ssize_t q = 0; q < nslots; q++) {
                if (!keys[q]) continue;
                size_t hh = ((size_t)keys[q] >> 4) * 11400714819323198485ULL;
                Py_ssize_t r = (Py_ssize_t)(hh & (size_t)(ns - 1));
                while (nk[r]) r = (r + 1) & (ns - 1);
                nk[r] = keys[q]; nv[r] = vals[q];
            }
            PyMem_Free(keys); PyMem_Free(vals);
            keys = nk; vals = nv; nslots = ns;
        }
    }
    PyMem_Free(keys); PyMem_Free(vals);
    Py_DECREF(byval); Py_DECREF(seq);
    return Py_BuildValue("NN", codes, uniq);
fail:
    PyMem_Free(keys); PyMem_Free(vals);
    Py_XDECREF(codes); Py_XDECREF(uniq); Py_XDECREF(byval); Py_DECREF(seq);
    if (!PyErr_Occurred()) PyErr_NoMemory();
    return NULL;
}

static PyObject *iso_seconds(PyObject *self, PyObject *arg) {
    (void)self;
    Py_ssize_t n;
    const char *t = PyUnicode_AsUTF8AndSize(arg, &n);
    if (!t) return NULL;
    double ts;
    if (!iso_token(t, n, &ts)) Py_RETURN_NONE;
    return PyFloat_FromDouble(ts);
}

/* markers(buf, needles) -> int: bit i set when needles[i] (bytes) occurs in buf (format
 * detection's pass over a whole log: parsers/log/detect.py). The C library's memmem where
 * there is one (glibc, macOS: several GB/s), else a plain search. */
static const char *find_bytes(const char *h, size_t hn, const char *n, size_t nn) {
#if defined(__GLIBC__) || defined(__APPLE__)
    return (const char *)memmem(h, hn, n, nn);
#else
    if (nn == 0) return h;
    for (size_t i = 0; i + nn <= hn; i++) {
        const char *p = memchr(h + i, n[0], hn - nn + 1 - i);
        if (!p) return NULL;
        i = (size_t)(p - h);
        if (memcmp(p, n, nn) == 0) return p;
    }
    return NULL;
#endif
}

static PyObject *markers(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer b;
    PyObject *needles;
    if (!PyArg_ParseTuple(args, "y*O!", &b, &PyTuple_Type, &needles)) return NULL;
    Py_ssize_t k = PyTuple_GET_SIZE(needles);
    unsigned long long mask = 0;
    if (k > 64) {
        PyBuffer_Release(&b);
        PyErr_SetString(PyExc_ValueError, "markers: at most 64 needles");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *nd = PyTuple_GET_ITEM(needles, i);
        if (!PyBytes_Check(nd)) {
            PyBuffer_Release(&b);
            PyErr_SetString(PyExc_TypeError, "markers: needles must be bytes");
            return NULL;
        }
        size_t nn = (size_t)PyBytes_GET_SIZE(nd);
        if (nn == 0 || find_bytes((const char *)b.buf, (size_t)b.len, PyBytes_AS_STRING(nd), nn))
            mask |= 1ULL << i;
    }
    PyBuffer_Release(&b);
    return PyLong_FromUnsignedLongLong(mask);
}

/* place_rows(dst, rowbytes, at, src, pos) -> None: dst's row at[i] = src's row pos[i] (pos None:
 * row i; src of one row: that row, to every at[i]), rows of `rowbytes` bytes, at and pos int64.
 * What numpy's `dst[at] = src[pos]` does on 2-D arrays, as one loop of row copies: numpy walks
 * a fancy index row by row at ~100 ns a row of 8-32 bytes (parsers/log/lineassemble.py places a
 * million lines' meta, values and quantities so). Indices outside either buffer: IndexError,
 * nothing past that row written. */
static PyObject *place_rows(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer dst, at, src, pos = {0};
    Py_ssize_t rb;
    PyObject *posobj;
    if (!PyArg_ParseTuple(args, "w*ny*y*O", &dst, &rb, &at, &src, &posobj)) return NULL;
    int have_pos = posobj != Py_None;
    if (have_pos && PyObject_GetBuffer(posobj, &pos, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&dst); PyBuffer_Release(&at); PyBuffer_Release(&src);
        return NULL;
    }
    PyObject *res = Py_None;
    Py_ssize_t m = at.len / 8;
    Py_ssize_t nd = rb > 0 ? dst.len / rb : 0, ns = rb > 0 ? src.len / rb : 0;
    if (rb <= 0 || dst.len % rb || src.len % rb || (have_pos && pos.len / 8 != m)
        || (!have_pos && ns != m && ns != 1)) {
        PyErr_SetString(PyExc_ValueError, "place_rows: buffers of whole rows, one index per row placed");
        res = NULL;
    } else {
        const int64_t *a = (const int64_t *)at.buf, *p = have_pos ? (const int64_t *)pos.buf : NULL;
        char *d = (char *)dst.buf;
        const char *sbuf = (const char *)src.buf;
        int broadcast = !have_pos && ns == 1 && m != 1;
        for (Py_ssize_t i = 0; i < m; i++) {
            int64_t r = a[i], q = p ? p[i] : (broadcast ? 0 : i);
            if (r < 0 || r >= nd || q < 0 || q >= ns) {
                PyErr_SetString(PyExc_IndexError, "place_rows: a row index outside its array");
                res = NULL;
                break;
            }
            memcpy(d + (Py_ssize_t)r * rb, sbuf + (Py_ssize_t)q * rb, (size_t)rb);
        }
    }
    PyBuffer_Release(&dst); PyBuffer_Release(&at); PyBuffer_Release(&src);
    if (have_pos) PyBuffer_Release(&pos);
    if (res) Py_INCREF(res);
    return res;
}

static PyMethodDef module_methods[] = {
    {"markers", markers, METH_VARARGS, "markers(buf, needles) -> int: bit i set when needles[i] occurs in buf"},
    {"columns", columns, METH_VARARGS, "columns(buf, offsets, spans) -> (float64 bytes, uint8 bytes): m x k numbers"},
    {"spelled", spelled, METH_VARARGS, "spelled(buf, offsets, pos, text) -> uint8 bytes: lines spelling text at pos"},
    {"factorize", factorize, METH_O, "factorize(seq) -> (int64 codes bytes, uniques): pandas.factorize of objects"},
    {"place_rows", place_rows, METH_VARARGS, "place_rows(dst, rowbytes, at, src, pos) -> None: dst[at[i]] = src[pos[i]], rows"},
    {"iso_seconds", iso_seconds, METH_O, "iso_seconds(token) -> float | None: the C reading of an ISO time (tests)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "gpuscope.parsers._scan", "The compiled line scanner (parsers/_scan.c).", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__scan(void) {
    init_cls();
    init_shape_cls();
    if (PyType_Ready(&ScannerType) < 0 || PyType_Ready(&ShapesType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ShapesType);
    if (PyModule_AddObject(m, "Shapes", (PyObject *)&ShapesType) < 0) {
        Py_DECREF(&ShapesType);
        Py_DECREF(m);
        return NULL;
    }
    PyModule_AddIntConstant(m, "VERSION", 2);
    return m;
}
