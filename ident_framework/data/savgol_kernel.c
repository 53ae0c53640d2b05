/* The Savitzky-Golay derivative's inner rows in C99 (built and loaded by ident_framework/
 * c_kernels.py; driven by `savgol_derivative` in data/filters.py, whose numpy loop it
 * replaces bit for bit: every value goes through the same floating-point operations in the
 * same order, compiled without FMA contraction or fast-math).
 *
 * out[i + half, c] = w[0] x[i, c] + w[1] x[i + 1, c] + ... + w[window - 1] x[i + window - 1, c]
 * (summed left to right) for 0 <= i <= n - window, x and out (n, channels) C-contiguous: one
 * pass over the rows (the numpy loop makes `window` passes over the whole array). */

#include <stdint.h>

void savgol_inner(const double *restrict w, int64_t window, const double *restrict x, int64_t n,
                  int64_t channels, double *restrict out) {
    const int64_t half = window / 2;
    for (int64_t i = 0; i + window <= n; i++) {
        const double *row = x + i * channels;
        double *restrict target = out + (i + half) * channels;
        for (int64_t c = 0; c < channels; c++)
            target[c] = w[0] * row[c];
        for (int64_t k = 1; k < window; k++) {
            const double weight = w[k];
            const double *source = row + k * channels;
            for (int64_t c = 0; c < channels; c++)
                target[c] += weight * source[c];
        }
    }
}
