// A second kernel library, to load beside test_kernels.c.
#include <stdint.h>

void negate_f32(int64_t workgroupId, int64_t workgroupCount, void **bindings) {
  (void)workgroupCount;
  const float *in = (const float *)bindings[0];
  float *out = (float *)bindings[1];
  if (workgroupId == 0)
    for (int i = 0; i < 4; ++i)
      out[i] = -in[i];
}
