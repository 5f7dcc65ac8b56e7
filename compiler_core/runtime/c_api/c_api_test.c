/* runtime_c_api_test DATA_DIR: the embeddable runtime through its C ABI only, from C.
 * DATA_DIR is made by prepare_test_data.sh: SqueezeNet 1.1 compiled for this host and for
 * cpu:sapphirerapids, the stored input and PyTorch reference output as raw f32, and a tiny model
 * with a scalar input.
 * Prints one line per check and "N passed, N failed"; exits 1 if any check failed. */
#include <kiln/kiln_runtime.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed = 0, failed = 0;

#define CHECK(cond, ...)                         \
  do {                                           \
    if (cond) {                                  \
      ++passed;                                  \
    } else {                                     \
      ++failed;                                  \
      fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);              \
      fprintf(stderr, " [last error: %s]\n", kiln_last_error()); \
    }                                            \
  } while (0)

static void* read_file(const char* dir, const char* name, size_t* size) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* data = malloc((size_t)n);
  if (fread(data, 1, (size_t)n, f) != (size_t)n) exit(1);
  fclose(f);
  *size = (size_t)n;
  return data;
}

/* Largest |got - want| - (atol + rtol * |want|) over n floats: <= 0 when within tolerance. */
static double excess(const float* got, const float* want, size_t n, double atol, double rtol) {
  double worst = -1e30;
  for (size_t i = 0; i < n; ++i) {
    double e = fabs((double)got[i] - want[i]) - (atol + rtol * fabs((double)want[i]));
    if (e > worst || isnan(got[i])) worst = isnan(got[i]) ? 1e30 : e;
  }
  return worst;
}

/* Whether /proc/cpuinfo's flags list `flag` (" amx_tile", " xop"). */
static int host_has(const char* flag) {
  FILE* f = fopen("/proc/cpuinfo", "r");
  char line[8192];
  int found = 0;
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "flags", 5) == 0) {
      found = strstr(line, flag) != NULL;
      break;
    }
  }
  if (f != NULL) fclose(f);
  return found;
}

/* Loads DIR/FILE, built for cpu:CPU; expects a refusal naming FEATURE unless the host has
 * HOST_FLAG (its /proc/cpuinfo name), then a load. */
static void check_cpu_features(const char* dir, const char* file, const char* cpu,
                               const char* feature, const char* host_flag) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  kiln_model* model = NULL;
  kiln_status s = kiln_model_load_file(path, NULL, &model);
  if (host_has(host_flag)) {
    CHECK(s == KILN_OK, "cpu:%s artifact on a host with %s: status %d", cpu, feature, s);
  } else {
    CHECK(s == KILN_FAILED_PRECONDITION && model == NULL, "cpu:%s artifact: status %d", cpu, s);
    char want[64];
    snprintf(want, sizeof want, "cpu:%s", cpu);
    CHECK(strstr(kiln_last_error(), feature) != NULL && strstr(kiln_last_error(), want) != NULL,
          "cpu:%s message '%s'", cpu, kiln_last_error());
  }
  kiln_model_free(model);
}

/* scalar.kiln (tests/data/scalar_rate): y = x * float(sr), x f32[3] and sr an i64 scalar (rank
 * 0). sr fed as a one-element tensor ({1}, {1,1}), as a voice-activity model's wrapper feeds its
 * sample rate, is taken as the scalar: the same output bit for bit; {2} is refused with the
 * runtime's error. */
static void check_scalar_input(const char* dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/scalar.kiln", dir);
  kiln_model* model = NULL;
  kiln_status s = kiln_model_load_file(path, NULL, &model);
  CHECK(s == KILN_OK && model != NULL, "scalar.kiln: status %d", s);
  if (model == NULL) return;
  kiln_tensor_info info;
  CHECK(kiln_model_input(model, 1, &info) == KILN_OK && strcmp(info.name, "sr") == 0 &&
            info.rank == 0,
        "input 1 of scalar.kiln is not the scalar sr");
  static const float x[3] = {1.0f, -2.0f, 0.5f};
  static const int64_t x_shape[1] = {3}, ones[2] = {1, 1}, two[1] = {2};
  static const int64_t rate[2] = {16000, 16000};
  float want[3] = {0}, got[3];
  kiln_tensor in[2] = {{"x", KILN_DTYPE_FLOAT32, x_shape, 1, x, sizeof x},
                       {"sr", KILN_DTYPE_INT64, NULL, 0, rate, sizeof rate[0]}};
  kiln_output o = {"y", want, sizeof want};
  s = kiln_model_run(model, in, 2, &o, 1);
  CHECK(s == KILN_OK && o.rank == 1 && o.shape[0] == 3 && want[0] == 16000.0f &&
            want[1] == -32000.0f && want[2] == 8000.0f,
        "sr fed as a scalar: status %d, y = [%g, %g, %g]", s, want[0], want[1], want[2]);
  for (size_t rank = 1; rank <= 2; ++rank) {
    in[1].shape = ones;
    in[1].rank = rank;
    memset(got, 0, sizeof got);
    o.data = got;
    s = kiln_model_run(model, in, 2, &o, 1);
    CHECK(s == KILN_OK && o.rank == 1 && o.shape[0] == 3 && memcmp(got, want, sizeof got) == 0,
          "sr fed as a one-element tensor of rank %zu: status %d", rank, s);
  }
  in[1].shape = two;
  in[1].rank = 1;
  in[1].num_bytes = sizeof rate;
  s = kiln_model_run(model, in, 2, &o, 1);
  CHECK(s == KILN_INVALID_ARGUMENT &&
            strcmp(kiln_last_error(), "input 1 ('sr'): expected shape [], got [2]") == 0,
        "sr fed as [2]: status %d", s);
  kiln_model_free(model);
}

static const int64_t kInputShape[4] = {1, 3, 224, 224};
static float* input;
static float* reference;

struct run_arg {
  kiln_model* model;
  int ok;
};

static void* run_thread(void* p) {
  struct run_arg* arg = (struct run_arg*)p;
  static float out[1000];
  float mine[1000];
  arg->ok = 1;
  for (int r = 0; r < 3; ++r) {
    kiln_tensor in = {NULL, KILN_DTYPE_FLOAT32, kInputShape, 4, input, 3 * 224 * 224 * 4};
    kiln_output o = {NULL, mine, sizeof mine};
    if (kiln_model_run(arg->model, &in, 1, &o, 1) != KILN_OK) arg->ok = 0;
    if (excess(mine, reference, 1000, 1e-4, 1e-3) > 0) arg->ok = 0;
  }
  (void)out;
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: runtime_c_api_test DATA_DIR\n");
    return 2;
  }
  const char* dir = argv[1];
  size_t input_size = 0, reference_size = 0, artifact_size = 0;
  input = (float*)read_file(dir, "input_0.bin", &input_size);
  reference = (float*)read_file(dir, "output_0.bin", &reference_size);
  CHECK(input_size == 3 * 224 * 224 * 4, "input_0.bin holds %zu bytes", input_size);
  CHECK(reference_size == 1000 * 4, "output_0.bin holds %zu bytes", reference_size);

  CHECK(kiln_runtime_abi_version() == KILN_RUNTIME_ABI_VERSION, "ABI version %u",
        kiln_runtime_abi_version());
  CHECK(strcmp(kiln_runtime_version(), "1.0.0") == 0, "version '%s'", kiln_runtime_version());
  CHECK(kiln_dtype_size(KILN_DTYPE_FLOAT32) == 4 && kiln_dtype_size(KILN_DTYPE_INT64) == 8 &&
            kiln_dtype_size(KILN_DTYPE_FLOAT16) == 2 && kiln_dtype_size(KILN_DTYPE_UNDEFINED) == 0,
        "dtype sizes");

  const char* native = kiln_native_target();
  CHECK(strncmp(native, "cpu:", 4) == 0 && strstr(native, ":+") != NULL, "native target '%s'",
        native);

  /* Errors on load. */
  kiln_model* model = NULL;
  kiln_status s = kiln_model_load_file("/nonexistent/model.kiln", NULL, &model);
  CHECK(s == KILN_NOT_FOUND && model == NULL, "missing file: status %d", s);
  CHECK(strstr(kiln_last_error(), "/nonexistent/model.kiln") != NULL, "missing file message '%s'",
        kiln_last_error());
  const char garbage[100] = "this is not an artifact";
  s = kiln_model_load_memory(garbage, sizeof garbage, NULL, &model);
  CHECK(s == KILN_INVALID_ARGUMENT && model == NULL, "garbage: status %d", s);
  CHECK(strstr(kiln_last_error(), "magic") != NULL, "garbage message '%s'", kiln_last_error());
  kiln_load_options bad_options = {4, 1, 0};
  char path[4096];
  snprintf(path, sizeof path, "%s/squeezenet.kiln", dir);
  s = kiln_model_load_file(path, &bad_options, &model);
  CHECK(s == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "struct_size") != NULL,
        "short options: status %d", s);

  /* A CPU feature this host lacks: refused at load, naming the feature. */
  check_cpu_features(dir, "squeezenet_spr.kiln", "sapphirerapids", "amx-tile", " amx_tile");
  check_cpu_features(dir, "squeezenet_bdver4.kiln", "bdver4", "xop", " xop");

  /* Load from memory; describe. */
  void* artifact = read_file(dir, "squeezenet.kiln", &artifact_size);
  kiln_load_options options = KILN_LOAD_OPTIONS_INIT;
  options.num_threads = 2;
  s = kiln_model_load_memory(artifact, artifact_size, &options, &model);
  free(artifact);
  CHECK(s == KILN_OK && model != NULL, "load: status %d", s);
  if (model == NULL) return 1;
  CHECK(kiln_model_num_inputs(model) == 1 && kiln_model_num_outputs(model) == 1, "%zu in, %zu out",
        kiln_model_num_inputs(model), kiln_model_num_outputs(model));
  kiln_tensor_info info;
  CHECK(kiln_model_input(model, 0, &info) == KILN_OK, "input 0");
  CHECK(info.dtype == KILN_DTYPE_FLOAT32 && info.rank == 4 && info.shape[0] == 1 &&
            info.shape[1] == 3 && info.shape[2] == 224 && info.shape[3] == 224 &&
            info.max_num_bytes == 3 * 224 * 224 * 4 && info.min_shape[2] == 224,
        "input 0 is %s dtype %d rank %zu", info.name, info.dtype, info.rank);
  char input_name[256];
  snprintf(input_name, sizeof input_name, "%s", info.name);
  CHECK(kiln_model_output(model, 0, &info) == KILN_OK && info.rank == 2 && info.shape[1] == 1000,
        "output 0");
  char output_name[256];
  snprintf(output_name, sizeof output_name, "%s", info.name);
  CHECK(kiln_model_output(model, 1, &info) == KILN_OUT_OF_RANGE, "output 1 is out of range");
  const char* target = kiln_model_property(model, "target");
  CHECK(target != NULL && strncmp(target, "cpu:", 4) == 0, "target '%s'", target);
  CHECK(kiln_model_property(model, "graph_hash") != NULL &&
            strlen(kiln_model_property(model, "graph_hash")) == 64,
        "graph hash");
  CHECK(kiln_model_property(model, "no such key") == NULL, "unknown property");

  /* Run by position and by name; compare with the PyTorch reference (atol 1e-4, rtol 1e-3). */
  float out[1000];
  kiln_tensor in = {NULL, KILN_DTYPE_FLOAT32, kInputShape, 4, input, input_size};
  kiln_output o = {NULL, out, sizeof out};
  s = kiln_model_run(model, &in, 1, &o, 1);
  CHECK(s == KILN_OK, "run: status %d", s);
  CHECK(o.dtype == KILN_DTYPE_FLOAT32 && o.rank == 2 && o.shape[0] == 1 && o.shape[1] == 1000 &&
            o.num_bytes == sizeof out,
        "output dtype %d rank %zu bytes %zu", o.dtype, o.rank, o.num_bytes);
  double e = excess(out, reference, 1000, 1e-4, 1e-3);
  CHECK(e <= 0, "output differs from the reference by %g past the tolerance", e);

  in.name = input_name;
  o.name = output_name;
  memset(out, 0, sizeof out);
  s = kiln_model_run(model, &in, 1, &o, 1);
  CHECK(s == KILN_OK && excess(out, reference, 1000, 1e-4, 1e-3) <= 0, "run by name: status %d",
        s);

  /* The output follows the input: a zero image gives other logits. */
  float* zeros = (float*)calloc(3 * 224 * 224, sizeof(float));
  kiln_tensor zero_in = {NULL, KILN_DTYPE_FLOAT32, kInputShape, 4, zeros, input_size};
  s = kiln_model_run(model, &zero_in, 1, &o, 1);
  CHECK(s == KILN_OK && excess(out, reference, 1000, 1e-2, 0) > 0,
        "a zero input gave the reference's logits");
  free(zeros);

  /* Bad runs: each an error naming what is wrong, the output buffer left alone. */
  memset(out, 0, sizeof out);
  kiln_tensor bad = in;
  bad.name = "no_such_input";
  s = kiln_model_run(model, &bad, 1, &o, 1);
  CHECK(s == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "no input named 'no_such_input'"),
        "unknown input: status %d", s);
  const int64_t wrong_shape[4] = {1, 3, 112, 448};
  bad = in;
  bad.shape = wrong_shape;
  s = kiln_model_run(model, &bad, 1, &o, 1);
  CHECK(s == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "expected shape") != NULL,
        "wrong shape: status %d", s);
  bad = in;
  bad.num_bytes -= 4;
  s = kiln_model_run(model, &bad, 1, &o, 1);
  CHECK(s == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "needs 602112 bytes") != NULL,
        "short input: status %d", s);
  bad = in;
  bad.dtype = KILN_DTYPE_INT64;
  s = kiln_model_run(model, &bad, 1, &o, 1);
  CHECK(s == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "expected dtype 1") != NULL,
        "wrong dtype: status %d", s);
  s = kiln_model_run(model, NULL, 0, &o, 1);
  CHECK(s == KILN_INVALID_ARGUMENT && strstr(kiln_last_error(), "is missing") != NULL,
        "no input: status %d", s);
  kiln_output small = {NULL, out, 100};
  s = kiln_model_run(model, &in, 1, &small, 1);
  CHECK(s == KILN_OUT_OF_RANGE && small.num_bytes == 4000 && out[0] == 0.0f,
        "small buffer: status %d, num_bytes %zu", s, small.num_bytes);

  /* Runs from two threads on one model: serialized, each right. */
  pthread_t threads[2];
  struct run_arg args[2] = {{model, 0}, {model, 0}};
  for (int t = 0; t < 2; ++t) pthread_create(&threads[t], NULL, run_thread, &args[t]);
  for (int t = 0; t < 2; ++t) pthread_join(threads[t], NULL);
  CHECK(args[0].ok && args[1].ok, "concurrent runs");

  kiln_model_free(model);
  kiln_model_free(NULL);
  check_scalar_input(dir);
  free(input);
  free(reference);
  printf("runtime_c_api_test: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
