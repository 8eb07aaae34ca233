/* One pass per tile for `run --shadow` (nkirun/runner/shadow_native.py): the error
 * statistics of shadow_metrics.errors and the store counts of WriteStats.count, computed
 * with the same definitions, bit for bit (tests/runner/test_shadow_native.py compares them
 * with the NumPy ones over raw bit patterns). Optional: without a compiler nkirun builds
 * without it and the NumPy path runs.
 *
 * Element kinds (how a buffer's elements are read as float32 values):
 *   0 float32, 1 bfloat16 (16-bit patterns), 2 float16, 3 an 8-bit type through a
 *   256-entry float32 table (fp8), 4 "ref rounded to bfloat16" (no buffer: the probe of a
 *   float32 -> bfloat16 store, rounded here as ml_dtypes rounds).
 *
 * Readings that must match NumPy exactly:
 * - abs = |x - ref| in float32; where that is not finite: 0 if x == ref or both are NaN,
 *   else inf. The peak is the first element of the largest abs (np.argmax).
 * - rel = abs / max(|ref|, tiny) (any NaN ref: tiny) and ulp = abs / (the exponent bits
 *   of that denominator times 2^-nmant), both float32 divisions, element by element as
 *   NumPy does them; their maxima propagate NaN (np.max: inf / inf against an infinite
 *   ref). The maxima of these non-negative floats are taken as integer maxima of their
 *   bits (the same order, and a loop GCC vectorises). The ULP division by a power of two
 *   is a multiplication by its reciprocal where that is a float: both are the correctly
 *   rounded value of the same exact quotient.
 * Compiled without -ffast-math (NaN and signed-zero semantics matter); float arithmetic
 * is IEEE single precision on every target CPython supports (FLT_EVAL_METHOD 0 on SSE2).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The loops are written for the compiler to vectorise; where GCC can pick the widest
 * vectors at load time (ifunc: x86-64 Linux with glibc), the hot functions are compiled
 * for AVX-512, AVX2 and the baseline, and the CPU chooses; elsewhere the baseline only.
 * The arithmetic is the same IEEE single precision in each (no FMA contraction:
 * -ffp-contract=off). -DSHADOW_NATIVE_BASELINE builds the baseline alone (to test it). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) \
    && !defined(SHADOW_NATIVE_BASELINE) \
    && defined(__GLIBC__)
#define WIDEST __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WIDEST
#endif
#if defined(__GNUC__) || defined(__clang__)
#define INLINE static inline __attribute__((always_inline)) /* (into each clone) */
#else
#define INLINE static __inline
#endif

enum { K_F32 = 0, K_BF16 = 1, K_F16 = 2, K_TABLE8 = 3, K_ROUND_BF16 = 4 };

static inline float f_of(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static inline uint32_t bits_of(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

INLINE float half_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
    if (exp == 0x1F)
        return f_of(sign | 0x7F800000u | (man << 13));
    if (exp == 0) { /* zero or subnormal: man * 2^-24, exact */
        float v = (float)man * 5.9604644775390625e-08f;
        return sign ? -v : v;
    }
    return f_of(sign | ((exp + 112u) << 23) | (man << 13));
}

/* float32 -> bfloat16 as ml_dtypes rounds: nearest even; NaN -> the quiet NaN 0x7FC0
 * with the sign kept; a carry out of the largest finite values gives inf. */
INLINE uint16_t bf16_of(uint32_t b)
{
    if ((b & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)(((b >> 16) & 0x8000u) | 0x7FC0u);
    return (uint16_t)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

INLINE float load(int kind, const void *p, Py_ssize_t i, const float *table, float ref)
{
    switch (kind) {
    case K_F32: return ((const float *)p)[i];
    case K_BF16: return f_of((uint32_t)((const uint16_t *)p)[i] << 16);
    case K_F16: return half_to_f32(((const uint16_t *)p)[i]);
    case K_TABLE8: return table[((const uint8_t *)p)[i]];
    default: return f_of((uint32_t)bf16_of(bits_of(ref)) << 16);
    }
}

/* |x - r| with the NaN/inf readings above */
INLINE float abs_error(float x, float r)
{
    float d = fabsf(x - r);
    if (!(d <= FLT_MAX))
        d = (x == r || (x != x && r != r)) ? 0.0f : INFINITY;
    return d;
}

#define BLK 512 /* elements per block: a few float arrays of it stay in L1 */

typedef struct {
    float top;        /* largest abs error */
    Py_ssize_t at;    /* its first element (-1: none yet) */
    uint32_t rel, ulp;/* the rel and ULP maxima, as bits (non-negative floats order as ints) */
    int nan_rel, nan_ulp;
} Acc;

INLINE void acc_init(Acc *a)
{
    a->top = 0.0f; a->at = -1; a->rel = a->ulp = 0; a->nan_rel = a->nan_ulp = 0;
}

/* The per-element scales of one block, shared by every x compared against it:
 * den = fmax(|r|, tiny) (a NaN r gives tiny), scale = its exponent bits * 2^-nmant, and
 * rcp = 1 / scale when that is a float (exponent field e >= nmant; `exact_rcp` says
 * whether it is for the whole block): d * rcp is then d / scale, both correctly rounded
 * results of the same exact value. */
typedef struct {
    float den[BLK], scale[BLK], rcp[BLK];
    int exact_rcp;
} Scales;

INLINE void scales_of(Scales *s, const float *r, Py_ssize_t m, float tiny, int nmant)
{
    const float down = ldexpf(1.0f, -nmant);
    uint32_t small = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        float ar = fabsf(r[j]);
        float den = ar >= tiny ? ar : tiny;
        uint32_t e = bits_of(den) >> 23;
        s->den[j] = den;
        s->scale[j] = f_of(e << 23) * down;
        small |= (e < (uint32_t)nmant) | (e > 253u + (uint32_t)nmant);
        s->rcp[j] = f_of(((254u + (uint32_t)nmant - e) & 0xFFu) << 23);
    }
    s->exact_rcp = !small;
}

/* One block of x against r (m elements starting at i0): d = |x - r| into `d`. */
INLINE void block_diff(float *d, int kind, const void *x, Py_ssize_t i0,
                              const float *r, Py_ssize_t m, const float *table)
{
    switch (kind) {
    case K_F32: {
        const float *p = (const float *)x + i0;
        for (Py_ssize_t j = 0; j < m; j++) d[j] = fabsf(p[j] - r[j]);
        break;
    }
    case K_BF16: {
        const uint16_t *p = (const uint16_t *)x + i0;
        for (Py_ssize_t j = 0; j < m; j++) d[j] = fabsf(f_of((uint32_t)p[j] << 16) - r[j]);
        break;
    }
    case K_ROUND_BF16:
        for (Py_ssize_t j = 0; j < m; j++) {
            uint32_t b = bits_of(r[j]);
            uint32_t rounded = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
            uint32_t nan = (b & 0x80000000u) | 0x7FC00000u;
            d[j] = fabsf(f_of((b & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded) - r[j]);
        }
        break;
    default:
        for (Py_ssize_t j = 0; j < m; j++) d[j] = fabsf(load(kind, x, i0 + j, table, r[j]) - r[j]);
    }
}

INLINE uint32_t max_bits(const float *a, Py_ssize_t m)
{
    uint32_t top = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        uint32_t b = bits_of(a[j]);
        top = b > top ? b : top;
    }
    return top;
}

/* The block's errors into a (d: block_diff's differences; NaN/inf handled element by
 * element when the block has any, else as vector loops). */
INLINE void acc_block(Acc *a, float *d, float *q, const Scales *s, int kind, const void *x,
                      Py_ssize_t i0, const float *r, Py_ssize_t m, const float *table)
{
    uint32_t top = max_bits(d, m);
    if (top == 0)
        return;
    if (top >= 0x7F800000u) { /* an inf or NaN difference: the readings, one by one */
        for (Py_ssize_t j = 0; j < m; j++) {
            float xj = load(kind, x, i0 + j, table, r[j]), dj = abs_error(xj, r[j]);
            if (dj > a->top) { a->top = dj; a->at = i0 + j; }
            float rq = dj / s->den[j], uq = dj / s->scale[j];
            if (rq != rq) a->nan_rel = 1;
            else if (bits_of(rq) > a->rel) a->rel = bits_of(rq);
            if (uq != uq) a->nan_ulp = 1;
            else if (bits_of(uq) > a->ulp) a->ulp = bits_of(uq);
        }
        return;
    }
    if (f_of(top) > a->top) {
        Py_ssize_t j = 0;
        while (bits_of(d[j]) != top) j++;
        a->top = f_of(top); a->at = i0 + j;
    }
    for (Py_ssize_t j = 0; j < m; j++) q[j] = d[j] / s->den[j];
    uint32_t rel = max_bits(q, m);
    if (rel > a->rel) a->rel = rel;
    if (s->exact_rcp)
        for (Py_ssize_t j = 0; j < m; j++) q[j] = d[j] * s->rcp[j];
    else
        for (Py_ssize_t j = 0; j < m; j++) q[j] = d[j] / s->scale[j];
    uint32_t ulp = max_bits(q, m);
    if (ulp > a->ulp) a->ulp = ulp;
}

/* The usual block in one loop: x of kind float32, bfloat16 or the bfloat16 rounding of
 * ref, every difference finite and every 1 / scale a float. Then the same values as
 * acc_block (the same float operations, element by element), with no array written.
 * Returns 0 (nothing done) when the block needs acc_block. */
#define FUSED_LOOP(LOAD)                                                                \
    for (Py_ssize_t j = 0; j < m; j++) {                                                \
        float rj = r[j], ar = fabsf(rj);                                                \
        float den = ar >= tiny ? ar : tiny;                                             \
        uint32_t e = bits_of(den) >> 23;                                                \
        float rcp = f_of(((254u + un - e) & 0xFFu) << 23);                              \
        small |= (e < un) | (e > 253u + un);                                            \
        float d = fabsf((LOAD) - rj);                                                   \
        uint32_t db = bits_of(d), qb = bits_of(d / den), ub = bits_of(d * rcp);         \
        dmax = db > dmax ? db : dmax;                                                   \
        rmax = qb > rmax ? qb : rmax;                                                   \
        umax = ub > umax ? ub : umax;                                                   \
    }

INLINE float round_bf16_f(float v)
{
    uint32_t b = bits_of(v);
    uint32_t rounded = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
    uint32_t nan = (b & 0x80000000u) | 0x7FC00000u;
    return f_of((b & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
}

/* fused_block's tail: the block's maxima (dmax finite) into a. */
INLINE void fused_finish(Acc *a, int kind, const void *x, Py_ssize_t i0, const float *r,
                         Py_ssize_t m, uint32_t dmax, uint32_t rmax, uint32_t umax)
{
    if (dmax == 0)
        return;
    if (f_of(dmax) > a->top) {
        Py_ssize_t j = 0;
        while (j < m - 1 && bits_of(fabsf(load(kind, x, i0 + j, NULL, r[j]) - r[j])) != dmax)
            j++;
        a->top = f_of(dmax); a->at = i0 + j;
    }
    if (rmax > a->rel) a->rel = rmax;
    if (umax > a->ulp) a->ulp = umax;
}

INLINE int fused_block(Acc *a, int kind, const void *x, Py_ssize_t i0, const float *r,
                       Py_ssize_t m, float tiny, int nmant)
{
    uint32_t dmax = 0, rmax = 0, umax = 0, small = 0, un = (uint32_t)nmant;
    if (kind == K_F32) {
        const float *p = (const float *)x + i0;
        FUSED_LOOP(p[j])
    } else if (kind == K_BF16) {
        const uint16_t *p = (const uint16_t *)x + i0;
        FUSED_LOOP(f_of((uint32_t)p[j] << 16))
    } else if (kind == K_ROUND_BF16) {
        FUSED_LOOP(round_bf16_f(rj))
    } else {
        return 0;
    }
    if (dmax >= 0x7F800000u || small)
        return 0;
    fused_finish(a, kind, x, i0, r, m, dmax, rmax, umax);
    return 1;
}

/* fused_block for x (float32 or bfloat16) and the bfloat16 rounding of ref together, the
 * usual pair of a rounding store (carried and added error): ref's scales computed once
 * for both. The same operations per element as two fused_block calls, so the same
 * values; returns 0 (nothing done) when either needs the other paths. */
#define FUSED_PAIR(LOAD)                                                                \
    for (Py_ssize_t j = 0; j < m; j++) {                                                \
        float rj = r[j], ar = fabsf(rj);                                                \
        float den = ar >= tiny ? ar : tiny;                                             \
        uint32_t e = bits_of(den) >> 23;                                                \
        float rcp = f_of(((254u + un - e) & 0xFFu) << 23);                              \
        small |= (e < un) | (e > 253u + un);                                            \
        float d1 = fabsf((LOAD) - rj), d2 = fabsf(round_bf16_f(rj) - rj);              \
        uint32_t b1 = bits_of(d1), q1 = bits_of(d1 / den), u1 = bits_of(d1 * rcp);      \
        uint32_t b2 = bits_of(d2), q2 = bits_of(d2 / den), u2 = bits_of(d2 * rcp);      \
        d1max = b1 > d1max ? b1 : d1max;                                                \
        r1max = q1 > r1max ? q1 : r1max;                                                \
        u1max = u1 > u1max ? u1 : u1max;                                                \
        d2max = b2 > d2max ? b2 : d2max;                                                \
        r2max = q2 > r2max ? q2 : r2max;                                                \
        u2max = u2 > u2max ? u2 : u2max;                                                \
    }

INLINE int fused_pair(Acc *a1, Acc *a2, int k1, const void *x1, Py_ssize_t i0,
                      const float *r, Py_ssize_t m, float tiny, int nmant)
{
    uint32_t d1max = 0, r1max = 0, u1max = 0, d2max = 0, r2max = 0, u2max = 0;
    uint32_t small = 0, un = (uint32_t)nmant;
    if (k1 == K_F32) {
        const float *p = (const float *)x1 + i0;
        FUSED_PAIR(p[j])
    } else if (k1 == K_BF16) {
        const uint16_t *p = (const uint16_t *)x1 + i0;
        FUSED_PAIR(f_of((uint32_t)p[j] << 16))
    } else {
        return 0;
    }
    if (small || d1max >= 0x7F800000u || d2max >= 0x7F800000u)
        return 0;
    fused_finish(a1, k1, x1, i0, r, m, d1max, r1max, u1max);
    fused_finish(a2, K_ROUND_BF16, NULL, i0, r, m, d2max, r2max, u2max);
    return 1;
}

WIDEST static void run_errors(Acc *a1, Acc *a2, Scales *sc, float *d, float *q,
                              const float *r, Py_ssize_t n, int k1, const void *x1,
                              int k2, const void *x2, const float *table, float tiny,
                              int nmant)
{
    for (Py_ssize_t i0 = 0; i0 < n; i0 += BLK) {
        Py_ssize_t m = n - i0 < BLK ? n - i0 : BLK;
        int scaled = 0; /* sc holds this block's scales */
        if (k2 == K_ROUND_BF16 && fused_pair(a1, a2, k1, x1, i0, r + i0, m, tiny, nmant))
            continue;
        if (!fused_block(a1, k1, x1, i0, r + i0, m, tiny, nmant)) {
            scales_of(sc, r + i0, m, tiny, nmant);
            scaled = 1;
            block_diff(d, k1, x1, i0, r + i0, m, table);
            acc_block(a1, d, q, sc, k1, x1, i0, r + i0, m, table);
        }
        if (k2 >= 0 && !fused_block(a2, k2, x2, i0, r + i0, m, tiny, nmant)) {
            if (!scaled)
                scales_of(sc, r + i0, m, tiny, nmant);
            block_diff(d, k2, x2, i0, r + i0, m, table);
            acc_block(a2, d, q, sc, k2, x2, i0, r + i0, m, table);
        }
    }
}

static PyObject *acc_result(const Acc *a, int nmant)
{
    if (!(a->top > 0.0f))
        return Py_BuildValue("(dndd)", 0.0, (Py_ssize_t)0, 0.0, 0.0);
    float rel = a->nan_rel ? NAN : f_of(a->rel), ulp = a->nan_ulp ? NAN : f_of(a->ulp);
    if (nmant == 0)
        ulp = a->top;
    return Py_BuildValue("(dndd)", (double)a->top, a->at, (double)rel, (double)ulp);
}

static int get_buffer(PyObject *o, Py_buffer *view, int writable)
{
    if (o == Py_None) { view->obj = NULL; view->buf = NULL; view->len = 0; return 0; }
    return PyObject_GetBuffer(o, view, (writable ? PyBUF_WRITABLE : PyBUF_SIMPLE)
                              | PyBUF_C_CONTIGUOUS);
}

static Py_ssize_t itemsize_of(int kind)
{
    return kind == K_F32 ? 4 : kind == K_TABLE8 ? 1 : kind == K_ROUND_BF16 ? 0 : 2;
}

/* errors(ref, x1, kind1, x2, kind2, table, nmant, tiny) -> ((abs, at, rel, ulp), same or
 * None): the errors of x1 (and x2 when kind2 >= 0) against ref (float32, contiguous). */
static PyObject *errors(PyObject *self, PyObject *args)
{
    PyObject *ref_o, *x1_o, *x2_o, *table_o;
    int k1, k2, nmant;
    float tiny;
    if (!PyArg_ParseTuple(args, "OOiOiOif", &ref_o, &x1_o, &k1, &x2_o, &k2, &table_o,
                          &nmant, &tiny))
        return NULL;
    Py_buffer ref = {0}, x1 = {0}, x2 = {0}, tab = {0};
    PyObject *out = NULL;
    if (get_buffer(ref_o, &ref, 0) < 0) return NULL;
    if (get_buffer(x1_o, &x1, 0) < 0) goto done;
    if (get_buffer(x2_o, &x2, 0) < 0) goto done;
    if (get_buffer(table_o, &tab, 0) < 0) goto done;
    Py_ssize_t n = ref.len / 4;
    if ((k1 != K_ROUND_BF16 && x1.len != n * itemsize_of(k1))
        || (k2 >= 0 && k2 != K_ROUND_BF16 && x2.len != n * itemsize_of(k2))
        || ((k1 == K_TABLE8 || k2 == K_TABLE8) && tab.len != 256 * 4)) {
        PyErr_SetString(PyExc_ValueError, "shadow native errors: sizes do not match");
        goto done;
    }
    const float *r = (const float *)ref.buf, *table = (const float *)tab.buf;
    Acc a1, a2;
    acc_init(&a1); acc_init(&a2);
    Scales *sc = PyMem_RawMalloc(sizeof(Scales) + 2 * BLK * sizeof(float));
    if (sc == NULL) { PyErr_NoMemory(); goto done; }
    float *d = (float *)(sc + 1), *q = d + BLK;
    Py_BEGIN_ALLOW_THREADS
    run_errors(&a1, &a2, sc, d, q, r, n, k1, x1.buf, k2, x2.buf, table, tiny, nmant);
    Py_END_ALLOW_THREADS
    {
        PyObject *e1 = acc_result(&a1, nmant);
        PyObject *e2 = k2 >= 0 ? acc_result(&a2, nmant) : (Py_INCREF(Py_None), Py_None);
        if (e1 && e2)
            out = PyTuple_Pack(2, e1, e2);
        Py_XDECREF(e1);
        Py_XDECREF(e2);
    }
    PyMem_RawFree(sc);
done:
    if (ref.obj) PyBuffer_Release(&ref);
    if (x1.obj) PyBuffer_Release(&x1);
    if (x2.obj) PyBuffer_Release(&x2);
    if (tab.obj) PyBuffer_Release(&tab);
    return out;
}

typedef struct {
    Py_ssize_t nan, overflow, zpost, zpre, sat;
    float big, loss;
} StoreCounts;

WIDEST static void run_store(StoreCounts *c, const float *pre, void *post, int kind,
                             const float *table, int cast, float limit, Py_ssize_t n)
{
    float sv[BLK];
    uint32_t big = 0, loss = 0;
    for (Py_ssize_t i0 = 0; i0 < n; i0 += BLK) {
        Py_ssize_t m = n - i0 < BLK ? n - i0 : BLK;
        const float *v = pre + i0;
        if (cast) {
            uint16_t *out = (uint16_t *)post + i0;
            for (Py_ssize_t j = 0; j < m; j++) {
                uint32_t b = bits_of(v[j]);
                uint32_t rounded = (b + 0x7FFFu + ((b >> 16) & 1u)) >> 16;
                uint32_t nan = ((b >> 16) & 0x8000u) | 0x7FC0u;
                uint32_t h = (b & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded;
                out[j] = (uint16_t)h;
                sv[j] = f_of(h << 16);
            }
        } else if (kind == K_BF16) {
            const uint16_t *p = (const uint16_t *)post + i0;
            for (Py_ssize_t j = 0; j < m; j++) sv[j] = f_of((uint32_t)p[j] << 16);
        } else if (kind == K_F32) {
            memcpy(sv, (const float *)post + i0, (size_t)m * sizeof(float));
        } else {
            for (Py_ssize_t j = 0; j < m; j++) sv[j] = load(kind, post, i0 + j, table, 0.0f);
        }
        int32_t nan = 0, overflow = 0, zpost = 0, zpre = 0, sat = 0;
        uint32_t top = 0;
        for (Py_ssize_t j = 0; j < m; j++) { /* one pass: the counts, |post|, the loss */
            float s = sv[j], x = v[j];
            int32_t finite_x = fabsf(x) <= FLT_MAX;
            nan += s != s;
            overflow += (fabsf(s) == INFINITY) & finite_x;
            zpost += s == 0.0f;
            zpre += x == 0.0f;
            sat += finite_x & (fabsf(x) > limit);
            uint32_t b = bits_of(s) & 0x7FFFFFFFu; /* |s|: a NaN orders above inf */
            big = b > big ? b : big;
            uint32_t l = bits_of(fabsf(s - x));
            top = l > top ? l : top;
        }
        c->nan += nan; c->overflow += overflow; c->zpost += zpost; c->zpre += zpre;
        c->sat += sat;
        if (top >= 0x7F800000u) { /* inf or NaN differences: the readings one by one */
            top = 0;
            for (Py_ssize_t j = 0; j < m; j++) {
                uint32_t l = bits_of(abs_error(sv[j], v[j]));
                top = l > top ? l : top;
            }
        }
        loss = top > loss ? top : loss;
    }
    c->big = c->nan ? NAN : f_of(big);
    c->loss = f_of(loss);
}

/* store(pre, post, kind, table, cast, limit) -> (nan, overflow, zeros_post, zeros_pre,
 * big, loss, saturated): one store of float32 values `pre` kept as `post` (read as
 * `kind`; cast = 1: first written here as pre rounded to bfloat16, kind 1). big: the
 * largest |post| (NaN when post holds a NaN); loss: the
 * largest |post - pre| (abs_error's readings); saturated: finite pre beyond `limit`. */
static PyObject *store(PyObject *self, PyObject *args)
{
    PyObject *pre_o, *post_o, *table_o;
    int kind, cast;
    float limit;
    if (!PyArg_ParseTuple(args, "OOiOif", &pre_o, &post_o, &kind, &table_o, &cast, &limit))
        return NULL;
    Py_buffer pre = {0}, post = {0}, tab = {0};
    PyObject *out = NULL;
    if (get_buffer(pre_o, &pre, 0) < 0) return NULL;
    if (get_buffer(post_o, &post, cast) < 0) goto done;
    if (get_buffer(table_o, &tab, 0) < 0) goto done;
    Py_ssize_t n = pre.len / 4;
    if (kind == K_ROUND_BF16 || post.len != n * itemsize_of(kind)
        || (cast && kind != K_BF16) || (kind == K_TABLE8 && tab.len != 256 * 4)) {
        PyErr_SetString(PyExc_ValueError, "shadow native store: sizes do not match");
        goto done;
    }
    StoreCounts c = {0};
    Py_BEGIN_ALLOW_THREADS
    run_store(&c, (const float *)pre.buf, post.buf, kind, (const float *)tab.buf, cast,
              limit, n);
    Py_END_ALLOW_THREADS
    Py_ssize_t nan = c.nan, overflow = c.overflow, zpost = c.zpost, zpre = c.zpre;
    Py_ssize_t sat = c.sat;
    float big = c.big, loss = c.loss;
    out = Py_BuildValue("(nnnnffn)", nan, overflow, zpost, zpre, big, loss, sat);
done:
    if (pre.obj) PyBuffer_Release(&pre);
    if (post.obj) PyBuffer_Release(&post);
    if (tab.obj) PyBuffer_Release(&tab);
    return out;
}

static PyMethodDef methods[] = {
    {"errors", errors, METH_VARARGS, "abs/rel/ULP errors of one or two arrays against ref"},
    {"store", store, METH_VARARGS, "the counts and loss of one store (optionally its cast)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_shadow_native", "One-pass shadow comparisons (nkirun run --shadow).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__shadow_native(void) { return PyModule_Create(&module); }
