/* Kernels for ProgramTest, following the Kiln CPU kernel ABI:
 *   void kernel(int64_t workgroupId, int64_t workgroupCount, void **bindings)
 * Each workgroup handles one contiguous chunk of the N elements. */

#include <stdint.h>

#define KILN_TEST_EXPORT __attribute__((visibility("default")))
#define N 1000

static void chunk(int64_t wg, int64_t wgc, int64_t *begin, int64_t *end) {
  int64_t size = (N + wgc - 1) / wgc;
  *begin = wg * size;
  *end = *begin + size < N ? *begin + size : N;
}

/* b[2][i] = b[0][i] + b[1][i] */
KILN_TEST_EXPORT void add_f32(int64_t wg, int64_t wgc, void **b) {
  const float *x = (const float *)b[0];
  const float *y = (const float *)b[1];
  float *out = (float *)b[2];
  int64_t begin, end;
  chunk(wg, wgc, &begin, &end);
  for (int64_t i = begin; i < end; ++i)
    out[i] = x[i] + y[i];
}

/* b[0][i] *= 2, in place */
KILN_TEST_EXPORT void double_f32(int64_t wg, int64_t wgc, void **b) {
  float *x = (float *)b[0];
  int64_t begin, end;
  chunk(wg, wgc, &begin, &end);
  for (int64_t i = begin; i < end; ++i)
    x[i] *= 2.0f;
}

/* Overwrites its buffer; tests launch it with 0 workgroups to show it never
 * runs. */
KILN_TEST_EXPORT void poison_f32(int64_t wg, int64_t wgc, void **b) {
  float *x = (float *)b[0];
  int64_t begin, end;
  chunk(wg, wgc, &begin, &end);
  for (int64_t i = begin; i < end; ++i)
    x[i] = -12345.0f;
}

/* b[0] is an int32 count per workgroup, b[1] an int64: counts[wg] += 1, and
 * workgroup 0 stores the workgroup count. (Conformance tests launch it with
 * 1-, 2- and 3-D grids: every linear id must run exactly once.) */
KILN_TEST_EXPORT void record_workgroups(int64_t wg, int64_t wgc, void **b) {
  int32_t *counts = (int32_t *)b[0];
  counts[wg] += 1;
  if (wg == 0)
    *(int64_t *)b[1] = wgc;
}

/* Takes one binding and two values: b[0][0] = value 0, b[0][1] = value 1. */
KILN_TEST_EXPORT void store_values(int64_t wg, int64_t wgc, void **b) {
  (void)wgc;
  int64_t *out = (int64_t *)b[0];
  if (wg == 0) {
    out[0] = (int64_t)(intptr_t)b[1];
    out[1] = (int64_t)(intptr_t)b[2];
  }
}
