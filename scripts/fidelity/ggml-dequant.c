// Dequantizes every tensor of a GGUF file with ggml's own row converters (llama.cpp's
// ggml_get_type_traits(type)->to_float) and prints, per tensor, its name, type name, element count
// and the float32 values as a hex dump on one line (JSON lines). The reference side of
// scripts/fidelity/llamacpp-dequant-vectors.mjs; build against a llama.cpp build's libggml-base:
//   cc -O2 -I LLAMA/ggml/include ggml-dequant.c -L LLAMA/build/bin -lggml-base -o ggml-dequant
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggml.h"
#include "gguf.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: ggml-dequant FILE.gguf\n");
    return 2;
  }
  struct ggml_context* ctx = NULL;
  struct gguf_init_params params = {false, &ctx};
  struct gguf_context* g = gguf_init_from_file(argv[1], params);
  if (!g || !ctx) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  const int64_t n = gguf_get_n_tensors(g);
  for (int64_t i = 0; i < n; i++) {
    const char* name = gguf_get_tensor_name(g, i);
    struct ggml_tensor* t = ggml_get_tensor(ctx, name);
    if (!t) {
      fprintf(stderr, "%s: not in the file's context\n", name);
      return 1;
    }
    const struct ggml_type_traits* tr = ggml_get_type_traits(t->type);
    if (!tr->to_float) {
      fprintf(stderr, "%s: no to_float for type %d\n", name, (int)t->type);
      return 1;
    }
    const int64_t count = ggml_nelements(t);
    float* out = malloc(sizeof(float) * (size_t)count);
    if (!out) return 1;
    // Row by row, as ggml's get_rows does.
    const int64_t rows = count / t->ne[0];
    for (int64_t r = 0; r < rows; r++)
      tr->to_float((const char*)t->data + r * t->nb[1], out + r * t->ne[0], t->ne[0]);
    printf("{\"name\":\"%s\",\"type\":\"%s\",\"n\":%lld,\"f32\":\"", name, ggml_type_name(t->type), (long long)count);
    const uint8_t* b = (const uint8_t*)out;
    for (int64_t k = 0; k < count * 4; k++) printf("%02x", b[k]);
    printf("\"}\n");
    free(out);
  }
  gguf_free(g);
  ggml_free(ctx);
  return 0;
}
