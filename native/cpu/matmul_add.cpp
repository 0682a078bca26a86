// The addends of the fused matmuls (MUL_MAT_ADD's c, MUL_MAT_MULTI's c_1..c_n): the in-place add
// that the thread computing a block of the product runs right after it, so the result is bit for
// bit MUL_MAT followed by ADD (the product rounded to f32, then one f32 add). Their check (F32,
// broadcast over the product as ADD's b) is the shared contract's, native/common/contract_matmul.h.
#include "kernel.h"
#include "matmul_internal.h"

namespace minfer::cpu::mm {

void add_c(const Tensor* c, const Tensor* out, int64_t r0, int64_t r1, int64_t j0, int64_t j1) {
  if (r0 >= r1) return;
  for (int64_t i3 = 0; i3 < out->ne[3]; i3++)
    for (int64_t i2 = 0; i2 < out->ne[2]; i2++)
      for (int64_t j = j0; j < j1; j++) {
        float* o = reinterpret_cast<float*>(out->data + j * out->nb[1] + i2 * out->nb[2] + i3 * out->nb[3]);
        const uint8_t* cr =
            c->data + (j % c->ne[1]) * c->nb[1] + (i2 % c->ne[2]) * c->nb[2] + (i3 % c->ne[3]) * c->nb[3];
        if (c->ne[0] == 1) {
          const float v = *reinterpret_cast<const float*>(cr);
          for (int64_t r = r0; r < r1; r++) o[r] += v;
        } else if (c->nb[0] == 4 && c->ne[0] == out->ne[0]) {
          const float* cf = reinterpret_cast<const float*>(cr);
          for (int64_t r = r0; r < r1; r++) o[r] += cf[r];
        } else {
          for (int64_t r = r0; r < r1; r++) o[r] += *reinterpret_cast<const float*>(cr + (r % c->ne[0]) * c->nb[0]);
        }
      }
}

}  // namespace minfer::cpu::mm
