/* embed_squeezenet ARTIFACT INPUT.pb [REFERENCE.pb]: an application embedding the Kiln runtime
 * through its C ABI (<kiln/kiln_runtime.h>). Loads a compiled image classifier, runs it on an
 * image tensor (NCHW f32, an ONNX TensorProto file), prints the top-5 classes and, given the
 * reference output, compares every logit (|got - want| <= 1e-4 + 1e-3 |want|) and prints PASS
 * or FAIL. Exit status: 0 on success (PASS), 1 on an error or FAIL, 2 on a usage error. */
#include <kiln/kiln_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_file.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: embed_squeezenet ARTIFACT INPUT.pb [REFERENCE.pb]\n");
    return 2;
  }
  if (kiln_runtime_abi_version() != KILN_RUNTIME_ABI_VERSION) {
    fprintf(stderr, "libkiln_runtime has ABI %u, this program was built for %d\n",
            kiln_runtime_abi_version(), KILN_RUNTIME_ABI_VERSION);
    return 1;
  }
  kiln_model* model = NULL;
  if (kiln_model_load_file(argv[1], NULL, &model) != KILN_OK) {
    fprintf(stderr, "%s: %s\n", argv[1], kiln_last_error());
    return 1;
  }
  tensor_file image;
  if (read_tensor_file(argv[2], &image) != 0) return 1;

  kiln_tensor_info out_info;
  kiln_model_output(model, 0, &out_info);
  float* logits = malloc(out_info.max_num_bytes);
  kiln_tensor input = {NULL, image.dtype, image.shape, image.rank, image.data, image.num_bytes};
  kiln_output output = {NULL, logits, out_info.max_num_bytes};
  if (kiln_model_run(model, &input, 1, &output, 1) != KILN_OK) {
    fprintf(stderr, "run: %s\n", kiln_last_error());
    return 1;
  }
  const size_t n = output.num_bytes / sizeof(float);
  /* The target key's CPU, triple and vector width; its feature list follows the fourth ':'. */
  const char* target = kiln_model_property(model, "target");
  int shown = 0, colons = 0;
  while (target[shown] != '\0' && !(target[shown] == ':' && ++colons == 4)) ++shown;
  printf("%s (%.*s%s): %zu logits\n", argv[1], shown, target, target[shown] ? ":..." : "", n);
  int top[5] = {-1, -1, -1, -1, -1};
  for (int k = 0; k < 5 && k < (int)n; ++k) {
    for (size_t i = 0; i < n; ++i) {
      int taken = 0;
      for (int j = 0; j < k; ++j) taken |= top[j] == (int)i;
      if (!taken && (top[k] < 0 || logits[i] > logits[top[k]])) top[k] = (int)i;
    }
    printf("  top-%d: class %d, logit %.4f\n", k + 1, top[k], logits[top[k]]);
  }
  int status = 0;
  if (argc == 4) {
    tensor_file want;
    if (read_tensor_file(argv[3], &want) != 0) return 1;
    const float* ref = (const float*)want.data;
    double worst = 0;
    int ok = want.num_bytes == output.num_bytes;
    for (size_t i = 0; ok && i < n; ++i) {
      double diff = fabs((double)logits[i] - ref[i]);
      if (diff > worst) worst = diff;
      if (!(diff <= 1e-4 + 1e-3 * fabs((double)ref[i]))) ok = 0;
    }
    printf("%s: max |diff| %.3g against %s\n", ok ? "PASS" : "FAIL", worst, argv[3]);
    status = ok ? 0 : 1;
    free(want.data);
  }
  free(logits);
  free(image.data);
  kiln_model_free(model);
  return status;
}
