/* The rigid-body regressor's compiled loops in C99 (built and loaded by
 * ident_framework/c_kernels.py; driven by BatchRegressor, model/rigid_body_regressor.py, whose
 * docstring describes the algorithm). The same steps, in the same order of floating-point
 * operations, as the numba kernel beside it (rigid_body_kernel.py): both give the same bits
 * (compiled without FMA contraction or fast-math).
 *
 * Motions are (6,) [linear; angular], placements (12,): R row-major (9), p (3).
 * Work array `states` (bodies, 2 + max_depth, 6) per thread: per joint v_i, a_i, then its
 * depth_i Jacobian columns, all in its frame; row 0: the base, v = 0, a = -g. */

#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The per-model constants (BatchRegressor's ctypes mirror: `_Model`); entry 0 of every
 * per-joint array is the base. */
typedef struct {
    int64_t bodies;             /* joints + 1 */
    int64_t max_depth;          /* columns of `rows` */
    int64_t nq, nv, columns;    /* q row length, v row length (out's rows), 10 joints */
    const int64_t *parents;     /* (bodies,) */
    const int64_t *index_q;     /* (bodies,) */
    const int64_t *index_v;     /* (bodies,) */
    const int64_t *depth;       /* (bodies,) ancestors' count, the joint included */
    const int64_t *rows;        /* (bodies, max_depth) v indices of the ancestors, base first */
    const uint8_t *revolute;    /* (bodies,) 1 revolute, 0 prismatic */
    const double *axes;         /* (bodies, 3) in the joint frame */
    const double *rotations;    /* (bodies, 3, 3) of the joint placement P */
    const double *translations; /* (bodies, 3) of P */
} rigid_body_model;

/* (12,) features of a body's regressor: acc = a_lin + w x v_lin, dw,
 * ww = (w0^2, w1^2, w2^2, w0 w1, w0 w2, w1 w2). */
static inline void body_features(const double *v, const double *a, double *f) {
    double v0 = v[0], v1 = v[1], v2 = v[2], w0 = v[3], w1 = v[4], w2 = v[5];
    f[0] = a[0] + (w1 * v2 - w2 * v1);
    f[1] = a[1] + (w2 * v0 - w0 * v2);
    f[2] = a[2] + (w0 * v1 - w1 * v0);
    f[3] = a[3];
    f[4] = a[4];
    f[5] = a[5];
    f[6] = w0 * w0;
    f[7] = w1 * w1;
    f[8] = w2 * w2;
    f[9] = w0 * w1;
    f[10] = w0 * w2;
    f[11] = w1 * w2;
}

/* Pinocchio's bodyRegressor (6, 10) as its two non-zero blocks, row-major: force x [m, mc]
 * (3 x 4) and torque x [mc, I] (3 x 9). */
static inline void body_regressor(const double *f, double *force, double *torque) {
    double a0 = f[0], a1 = f[1], a2 = f[2], d0 = f[3], d1 = f[4], d2 = f[5];
    double w00 = f[6], w11 = f[7], w22 = f[8], w01 = f[9], w02 = f[10], w12 = f[11];
    /* rows 0-2 x columns 0-3: m acc + ([dw]x + w w^T - |w|^2 1) mc */
    force[0] = a0, force[1] = -w11 - w22, force[2] = w01 - d2, force[3] = w02 + d1;
    force[4] = a1, force[5] = w01 + d2, force[6] = -w00 - w22, force[7] = w12 - d0;
    force[8] = a2, force[9] = w02 - d1, force[10] = w12 + d0, force[11] = -w00 - w11;
    /* rows 3-5 x columns 1-9: -[acc]x mc, then L(dw) + [w]x L(w) */
    torque[0] = 0.0, torque[1] = a2, torque[2] = -a1, torque[3] = d0, torque[4] = d1 - w02;
    torque[5] = -w12, torque[6] = d2 + w01, torque[7] = w11 - w22, torque[8] = w12;
    torque[9] = -a2, torque[10] = 0.0, torque[11] = a0, torque[12] = w02, torque[13] = d0 + w12;
    torque[14] = d1, torque[15] = w22 - w00, torque[16] = d2 - w01, torque[17] = -w02;
    torque[18] = a1, torque[19] = -a0, torque[20] = 0.0, torque[21] = -w01;
    torque[22] = w00 - w11, torque[23] = w01, torque[24] = d0 - w12, torque[25] = d1 + w02;
    torque[26] = d2;
}

/* liMi(q) = P M_j(q) of joint i: M_j a rotation by q about the axis (Rodrigues) or a
 * translation by q along it. */
static inline void placement(const rigid_body_model *m, int64_t i, double q, double *out) {
    const double *ax = m->axes + 3 * i, *p = m->rotations + 9 * i, *t = m->translations + 3 * i;
    double a0 = ax[0], a1 = ax[1], a2 = ax[2];
    double p00 = p[0], p01 = p[1], p02 = p[2], p10 = p[3], p11 = p[4], p12 = p[5];
    double p20 = p[6], p21 = p[7], p22 = p[8];
    double t0 = t[0], t1 = t[1], t2 = t[2];
    if (!m->revolute[i]) { /* R = P, p = P.p + P axis q */
        t0 += (p00 * a0 + p01 * a1 + p02 * a2) * q;
        t1 += (p10 * a0 + p11 * a1 + p12 * a2) * q;
        t2 += (p20 * a0 + p21 * a1 + p22 * a2) * q;
        out[0] = p00, out[1] = p01, out[2] = p02, out[3] = p10, out[4] = p11, out[5] = p12;
        out[6] = p20, out[7] = p21, out[8] = p22, out[9] = t0, out[10] = t1, out[11] = t2;
        return;
    }
    double c = cos(q), s = sin(q);
    double k0 = (1.0 - c) * a0, k1 = (1.0 - c) * a1;
    double m00 = k0 * a0 + c, m11 = k1 * a1 + c, m22 = (1.0 - c) * a2 * a2 + c;
    double m01 = k0 * a1 - s * a2, m10 = k0 * a1 + s * a2;
    double m02 = k0 * a2 + s * a1, m20 = k0 * a2 - s * a1;
    double m12 = k1 * a2 - s * a0, m21 = k1 * a2 + s * a0;
    out[0] = p00 * m00 + p01 * m10 + p02 * m20;
    out[1] = p00 * m01 + p01 * m11 + p02 * m21;
    out[2] = p00 * m02 + p01 * m12 + p02 * m22;
    out[3] = p10 * m00 + p11 * m10 + p12 * m20;
    out[4] = p10 * m01 + p11 * m11 + p12 * m21;
    out[5] = p10 * m02 + p11 * m12 + p12 * m22;
    out[6] = p20 * m00 + p21 * m10 + p22 * m20;
    out[7] = p20 * m01 + p21 * m11 + p22 * m21;
    out[8] = p20 * m02 + p21 * m12 + p22 * m22;
    out[9] = t0;
    out[10] = t1;
    out[11] = t2;
}

/* liMi.actInv of the motion m (6,): lin' = R^T (lin - p x ang), ang' = R^T ang. */
static inline void moved(const double *m, const double *pl, double *out) {
    double r00 = pl[0], r01 = pl[1], r02 = pl[2], r10 = pl[3], r11 = pl[4], r12 = pl[5];
    double r20 = pl[6], r21 = pl[7], r22 = pl[8], t0 = pl[9], t1 = pl[10], t2 = pl[11];
    double l0 = m[0], l1 = m[1], l2 = m[2], g0 = m[3], g1 = m[4], g2 = m[5];
    double x0 = l0 - (t1 * g2 - t2 * g1);
    double x1 = l1 - (t2 * g0 - t0 * g2);
    double x2 = l2 - (t0 * g1 - t1 * g0);
    out[0] = r00 * x0 + r10 * x1 + r20 * x2;
    out[1] = r01 * x0 + r11 * x1 + r21 * x2;
    out[2] = r02 * x0 + r12 * x1 + r22 * x2;
    out[3] = r00 * g0 + r10 * g1 + r20 * g2;
    out[4] = r01 * g0 + r11 * g1 + r21 * g2;
    out[5] = r02 * g0 + r12 * g1 + r22 * g2;
}

/* v_i, a_i and S of a joint from its parent's moved v, a: the joint's velocity S dq and
 * acceleration v_i x S dq + S ddq added (no bias acceleration for these joints). */
static inline void joint_motion(const double *v, const double *a, int revolute,
                                const double *axis, double dq, double ddq, double *vo,
                                double *ao, double *s) {
    double a0 = axis[0], a1 = axis[1], a2 = axis[2];
    double v0 = v[0], v1 = v[1], v2 = v[2], w0 = v[3], w1 = v[4], w2 = v[5];
    if (revolute) {
        w0 = w0 + a0 * dq;
        w1 = w1 + a1 * dq;
        w2 = w2 + a2 * dq;
        vo[0] = v0, vo[1] = v1, vo[2] = v2, vo[3] = w0, vo[4] = w1, vo[5] = w2;
        ao[0] = a[0] + (v1 * a2 - v2 * a1) * dq;
        ao[1] = a[1] + (v2 * a0 - v0 * a2) * dq;
        ao[2] = a[2] + (v0 * a1 - v1 * a0) * dq;
        ao[3] = a[3] + (w1 * a2 - w2 * a1) * dq + a0 * ddq;
        ao[4] = a[4] + (w2 * a0 - w0 * a2) * dq + a1 * ddq;
        ao[5] = a[5] + (w0 * a1 - w1 * a0) * dq + a2 * ddq;
        s[0] = 0.0, s[1] = 0.0, s[2] = 0.0, s[3] = a0, s[4] = a1, s[5] = a2;
        return;
    }
    vo[0] = v0 + a0 * dq, vo[1] = v1 + a1 * dq, vo[2] = v2 + a2 * dq;
    vo[3] = w0, vo[4] = w1, vo[5] = w2;
    ao[0] = a[0] + (w1 * a2 - w2 * a1) * dq + a0 * ddq;
    ao[1] = a[1] + (w2 * a0 - w0 * a2) * dq + a1 * ddq;
    ao[2] = a[2] + (w0 * a1 - w1 * a0) * dq + a2 * ddq;
    ao[3] = a[3], ao[4] = a[4], ao[5] = a[5];
    s[0] = a0, s[1] = a1, s[2] = a2, s[3] = 0.0, s[4] = 0.0, s[5] = 0.0;
}

/* row[0:10] = column^T Y: a Jacobian column (6,) times the body regressor's blocks. */
static inline void write_row(double *row, const double *j, const double *force,
                             const double *torque) {
    row[0] = j[0] * force[0] + j[1] * force[4] + j[2] * force[8];
    for (int k = 1; k < 4; k++) {
        double linear = j[0] * force[k] + j[1] * force[4 + k] + j[2] * force[8 + k];
        double angular = j[3] * torque[k - 1] + j[4] * torque[8 + k] + j[5] * torque[17 + k];
        row[k] = linear + angular;
    }
    for (int k = 4; k < 10; k++)
        row[k] = j[3] * torque[k - 1] + j[4] * torque[8 + k] + j[5] * torque[17 + k];
}

static double *new_states(const rigid_body_model *m, const double *base_acceleration) {
    int64_t per = 6 * (2 + m->max_depth);
    double *states = calloc((size_t)(m->bodies * per), sizeof(double));
    if (states != NULL)
        memcpy(states + 6, base_acceleration, 6 * sizeof(double));
    return states;
}

/* out[start:stop] (N, nv, columns) = the regressor at q (N, nq), dq, ddq (N, nv). */
static void run_samples(const rigid_body_model *m, double *states, int64_t start, int64_t stop,
                        const double *q, const double *dq, const double *ddq, double *out) {
    const int64_t per = 6 * (2 + m->max_depth), nv = m->nv, columns = m->columns;
    double pl[12], parent_v[6], parent_a[6], v[6], a[6], own[6], column[6];
    double features[12], force[12], torque[27];
    for (int64_t s = start; s < stop; s++) {
        double *sample = out + s * nv * columns;
        memset(sample, 0, (size_t)(nv * columns) * sizeof(double));
        for (int64_t i = 1; i < m->bodies; i++) {
            int64_t parent = m->parents[i], iv = m->index_v[i], above = m->depth[parent];
            int64_t block = 10 * (i - 1);
            const double *from = states + parent * per;
            double *to = states + i * per;
            const int64_t *rows = m->rows + i * m->max_depth;
            placement(m, i, q[s * m->nq + m->index_q[i]], pl);
            moved(from, pl, parent_v);
            moved(from + 6, pl, parent_a);
            joint_motion(parent_v, parent_a, m->revolute[i], m->axes + 3 * i, dq[s * nv + iv],
                         ddq[s * nv + iv], v, a, own);
            for (int r = 0; r < 6; r++)
                to[r] = v[r], to[6 + r] = a[r];
            body_features(v, a, features);
            body_regressor(features, force, torque);
            for (int64_t c = 0; c < above; c++) { /* the ancestors' columns, then S */
                moved(from + 6 * (2 + c), pl, column);
                for (int r = 0; r < 6; r++)
                    to[6 * (2 + c) + r] = column[r];
                write_row(sample + rows[c] * columns + block, column, force, torque);
            }
            for (int r = 0; r < 6; r++)
                to[6 * (2 + above) + r] = own[r];
            write_row(sample + rows[above] * columns + block, own, force, torque);
        }
    }
}

/* Samples start..stop-1 in this thread. 0, or -1 when out of memory. */
int rigid_body_samples(const rigid_body_model *m, int64_t start, int64_t stop, const double *q,
                       const double *dq, const double *ddq, const double *base_acceleration,
                       double *out) {
    double *states = new_states(m, base_acceleration);
    if (states == NULL)
        return -1;
    run_samples(m, states, start, stop, q, dq, ddq, out);
    free(states);
    return 0;
}

typedef struct {
    const rigid_body_model *m;
    const double *q, *dq, *ddq, *base_acceleration;
    double *out;
    int64_t n, block, next; /* next: the first block no thread has taken */
    pthread_mutex_t lock;
    int failed;
} shared_work;

/* Blocks of samples, taken one at a time until none is left (any thread, any order: each
 * sample's result is computed the same way wherever it runs). */
static void *take_blocks(void *arg) {
    shared_work *w = arg;
    double *states = new_states(w->m, w->base_acceleration);
    for (;;) {
        pthread_mutex_lock(&w->lock);
        int64_t b = w->next++;
        if (states == NULL)
            w->failed = 1;
        pthread_mutex_unlock(&w->lock);
        int64_t start = b * w->block;
        if (states == NULL || start >= w->n)
            break;
        int64_t stop = start + w->block < w->n ? start + w->block : w->n;
        run_samples(w->m, states, start, stop, w->q, w->dq, w->ddq, w->out);
    }
    free(states);
    return NULL;
}

/* All n samples in blocks of `block` on up to `threads` threads: the caller's and
 * threads - 1 started here, all joined before the return (nothing outlives the call: safe
 * across fork, and calls from several threads at once are independent). 0, or -1 when out
 * of memory. */
int rigid_body_samples_parallel(const rigid_body_model *m, int64_t n, const double *q,
                                const double *dq, const double *ddq,
                                const double *base_acceleration, double *out, int64_t threads,
                                int64_t block) {
    enum { MAX_THREADS = 64 };
    pthread_t started[MAX_THREADS];
    shared_work w = {.m = m, .q = q, .dq = dq, .ddq = ddq, .base_acceleration = base_acceleration,
                     .out = out, .n = n, .block = block > 0 ? block : 1};
    int count = 0;
    if (pthread_mutex_init(&w.lock, NULL) != 0)
        return rigid_body_samples(m, 0, n, q, dq, ddq, base_acceleration, out);
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    for (int64_t t = 1; t < threads; t++) { /* a thread that fails to start: fewer threads */
        if (pthread_create(&started[count], NULL, take_blocks, &w) == 0)
            count++;
    }
    take_blocks(&w);
    for (int t = 0; t < count; t++)
        pthread_join(started[t], NULL);
    pthread_mutex_destroy(&w.lock);
    return w.failed ? -1 : 0;
}
