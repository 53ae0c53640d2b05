/* The zero-phase filter's compiled loop in C99 (built and loaded by ident_framework/
 * c_kernels.py; driven by `_run_kernel` in data/filters.py). It gives the numba
 * kernel's results (zero_phase_kernel.py) bit for bit: every value goes through the same
 * floating-point operations (compiled without FMA contraction or fast-math).
 *
 * out[:, c] = the zero-phase filter of x[:, c] (odd extension of `pad` samples at both ends,
 * a forward pass, a backward pass; each pass started in the steady state of its first
 * sample), each section in transposed direct form II (as scipy.signal.sosfilt). TILE
 * channels side by side (the loops over them vectorise), in runs of RUN samples: a run goes
 * through one section after the other while it stays in the L1 cache, each section's states
 * in registers. */

#include <stdint.h>
#include <stdlib.h>

#define TILE 16 /* channels whose recursions run side by side */
#define RUN 64  /* rows filtered section after section */

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* Rows t0..t1-1 (ascending, or descending when t1 < t0) of e (row t at e + t rs, `lanes`
 * values)
 * through the sections in place, section after section: the states of a section stay in
 * registers over the rows (states: z0, z1 (sections, TILE), carried from one call to the
 * next). Each value goes through the same operations as sample by sample. */
static ALWAYS_INLINE void sections_over(const double *sos, int64_t sections, double *restrict e,
                                        int64_t t0, int64_t t1, int64_t rs, int64_t lanes,
                                        double *restrict z0, double *restrict z1) {
    const int64_t dt = t1 >= t0 ? 1 : -1;
    for (int64_t s = 0; s < sections; s++) {
        const double b0 = sos[6 * s], b1 = sos[6 * s + 1], b2 = sos[6 * s + 2];
        const double a1 = sos[6 * s + 4], a2 = sos[6 * s + 5];
        double first[TILE], second[TILE];
        for (int64_t k = 0; k < lanes; k++)
            first[k] = z0[s * TILE + k], second[k] = z1[s * TILE + k];
        for (int64_t t = t0; t != t1; t += dt) {
            double *restrict v = e + t * rs;
            for (int64_t k = 0; k < lanes; k++) {
                double y = b0 * v[k] + first[k];
                first[k] = b1 * v[k] - a1 * y + second[k];
                second[k] = b2 * v[k] - a2 * y;
                v[k] = y;
            }
        }
        for (int64_t k = 0; k < lanes; k++)
            z0[s * TILE + k] = first[k], z1[s * TILE + k] = second[k];
    }
}

/* The sections' states in the steady state of the inputs v[:lanes]. */
static inline void start(const double *zi, int64_t sections, const double *v, int64_t lanes,
                         double *restrict z0, double *restrict z1) {
    for (int64_t s = 0; s < sections; s++)
        for (int64_t k = 0; k < lanes; k++) {
            z0[s * TILE + k] = zi[2 * s] * v[k];
            z1[s * TILE + k] = zi[2 * s + 1] * v[k];
        }
}

/* Channels c0..c0+w-1 on `lanes` lanes (w <= lanes; the lanes past w hold zeros and stay
 * zero). x[t, c] = x[t * xt + c * xc], out likewise (strides in elements); ext
 * (n + 2 pad, lanes), z0 and z1 (sections, TILE): work arrays. The forward pass writes the
 * extended signal into ext and filters it there, `RUN` rows at a time (while they are in the
 * L1 cache); the backward pass filters ext in place and copies the samples kept. Inlined
 * with constant lane counts, so that the loops over the lanes vectorise fully. */
static ALWAYS_INLINE void tile(const double *sos, const double *zi, int64_t sections,
                               const double *x, int64_t n, int64_t xt, int64_t xc, int64_t pad,
                               double *out, int64_t ot, int64_t oc, int64_t w, int64_t lanes,
                               double *restrict ext, double *restrict z0, double *restrict z1) {
    const int64_t total = n + 2 * pad;
    for (int64_t t = 0; t < total; t++) {
        double *restrict v = ext + t * lanes;
        if (t < pad) { /* odd extension: 2 x0 - x[pad - t] */
            for (int64_t k = 0; k < w; k++)
                v[k] = 2.0 * x[k * xc] - x[(pad - t) * xt + k * xc];
        } else if (t < pad + n) {
            for (int64_t k = 0; k < w; k++)
                v[k] = x[(t - pad) * xt + k * xc];
        } else {
            for (int64_t k = 0; k < w; k++)
                v[k] = 2.0 * x[(n - 1) * xt + k * xc] - x[(2 * n + pad - 2 - t) * xt + k * xc];
        }
        for (int64_t k = w; k < lanes; k++)
            v[k] = 0.0;
        if (t == 0) /* each pass starts in the steady state of its first input */
            start(zi, sections, v, lanes, z0, z1);
        if ((t + 1) % RUN == 0 || t + 1 == total) /* rows t - t % RUN .. t */
            sections_over(sos, sections, ext, t - t % RUN, t + 1, lanes, lanes, z0, z1);
    }
    start(zi, sections, ext + (total - 1) * lanes, lanes, z0, z1);
    for (int64_t t1 = total; t1 > pad; t1 -= RUN) { /* the samples before `pad`: not kept */
        int64_t t0 = t1 - RUN > pad ? t1 - RUN : pad;
        sections_over(sos, sections, ext, t1 - 1, t0 - 1, lanes, lanes, z0, z1);
        for (int64_t t = t0; t < t1; t++)
            if (t < pad + n)
                for (int64_t k = 0; k < w; k++)
                    out[(t - pad) * ot + k * oc] = ext[t * lanes + k];
    }
}

/* `tile` in place for exactly `lanes` adjacent channels (x[t, c] = x[t * xt + c]): the
 * signal's own rows hold the forward pass's output, so that only the extensions (pad rows at
 * each end) and the last pad + 1 input rows (the end's odd extension reads them) need room
 * in `edge` ((3 pad + 1) rows of lanes). Each value goes through the same operations as in
 * `tile` (a pass split at other rows carries the same states), so the results are equal. */
static ALWAYS_INLINE void tile_in_place(const double *sos, const double *zi, int64_t sections,
                                        double *x, int64_t n, int64_t xt, int64_t pad,
                                        int64_t lanes, double *restrict edge,
                                        double *restrict z0, double *restrict z1) {
    double *head = edge, *tail = edge + pad * lanes, *last = edge + 2 * pad * lanes;
    for (int64_t r = 0; r <= pad; r++) /* x rows n - 1 - pad .. n - 1 as given */
        for (int64_t k = 0; k < lanes; k++)
            last[r * lanes + k] = x[(n - 1 - pad + r) * xt + k];
    for (int64_t t = 0; t < pad; t++) /* odd extension: 2 x0 - x[pad - t] */
        for (int64_t k = 0; k < lanes; k++)
            head[t * lanes + k] = 2.0 * x[k] - x[(pad - t) * xt + k];
    start(zi, sections, head, lanes, z0, z1);
    sections_over(sos, sections, head, 0, pad, lanes, lanes, z0, z1);
    for (int64_t t0 = 0; t0 < n; t0 += RUN)
        sections_over(sos, sections, x, t0, t0 + RUN < n ? t0 + RUN : n, xt, lanes, z0, z1);
    for (int64_t i = 0; i < pad; i++) /* 2 x[n - 1] - x[n - 2 - i] */
        for (int64_t k = 0; k < lanes; k++)
            tail[i * lanes + k] = 2.0 * last[pad * lanes + k] - last[(pad - 1 - i) * lanes + k];
    sections_over(sos, sections, tail, 0, pad, lanes, lanes, z0, z1);
    start(zi, sections, tail + (pad - 1) * lanes, lanes, z0, z1);
    sections_over(sos, sections, tail, pad - 1, -1, lanes, lanes, z0, z1);
    for (int64_t t1 = n; t1 > 0; t1 -= RUN)
        sections_over(sos, sections, x, t1 - 1, (t1 - RUN > 0 ? t1 - RUN : 0) - 1, xt, lanes, z0,
                      z1);
}

/* The lanes a tile of w channels runs on (4, 8 or TILE: the loops over them vectorise). */
static inline int64_t lanes_of(int64_t w) { return w > 8 ? TILE : w > 4 ? 8 : 4; }

/* out (n, channels) = the zero-phase filter of x (n, channels) by the normalised sections
 * sos (sections, 6) [b0, b1, b2, 1, a1, a2] with steady states zi (sections, 2) for a unit
 * input; strides in elements (any sign). out may be x itself: then tiles of 4, 8 or TILE
 * adjacent channels (xc = 1) are filtered where they are (`tile_in_place`), and the work
 * array holds n + 2 pad rows of the other tiles' lanes only. 0, or -1 when out of memory. */
int zero_phase_filter(const double *sos, const double *zi, int64_t sections, const double *x,
                      int64_t n, int64_t channels, int64_t xt, int64_t xc, int64_t pad,
                      double *out, int64_t ot, int64_t oc) {
    const int in_place = x == out && xt == ot && xc == 1 && oc == 1;
    int64_t widest = 0; /* lanes of the tiles that need the work array */
    for (int64_t c0 = 0; c0 < channels; c0 += TILE) {
        int64_t w = channels - c0 < TILE ? channels - c0 : TILE;
        if (!(in_place && lanes_of(w) == w) && lanes_of(w) > widest)
            widest = lanes_of(w);
    }
    double *ext = widest ? malloc((size_t)((n + 2 * pad) * widest) * sizeof(double)) : NULL;
    double *z0 = malloc((size_t)(2 * sections * TILE + (3 * pad + 1) * TILE) * sizeof(double));
    if ((widest && ext == NULL) || z0 == NULL) {
        free(ext);
        free(z0);
        return -1;
    }
    double *z1 = z0 + sections * TILE, *edge = z0 + 2 * sections * TILE;
    for (int64_t c0 = 0; c0 < channels; c0 += TILE) {
        const double *xs = x + c0 * xc;
        double *os = out + c0 * oc;
        int64_t w = channels - c0 < TILE ? channels - c0 : TILE;
        if (in_place && w == TILE)
            tile_in_place(sos, zi, sections, os, n, ot, pad, TILE, edge, z0, z1);
        else if (in_place && w == 8)
            tile_in_place(sos, zi, sections, os, n, ot, pad, 8, edge, z0, z1);
        else if (in_place && w == 4)
            tile_in_place(sos, zi, sections, os, n, ot, pad, 4, edge, z0, z1);
        else if (w > 8)
            tile(sos, zi, sections, xs, n, xt, xc, pad, os, ot, oc, w, TILE, ext, z0, z1);
        else if (w > 4)
            tile(sos, zi, sections, xs, n, xt, xc, pad, os, ot, oc, w, 8, ext, z0, z1);
        else
            tile(sos, zi, sections, xs, n, xt, xc, pad, os, ot, oc, w, 4, ext, z0, z1);
    }
    free(ext);
    free(z0);
    return 0;
}
