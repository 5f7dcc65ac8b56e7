/* kiln_runtime.h: the embeddable Kiln runtime's stable C ABI.
 *
 * Loads a compiled Kiln artifact (a ".kiln" file made by `kiln compile` or fetched from kilnd),
 * lists its inputs and outputs, and runs it on caller-owned buffers. The library
 * (libkiln_runtime.so.1) links no LLVM and exports only the kiln_* symbols below.
 *
 *   kiln_model* model = NULL;
 *   if (kiln_model_load_file("squeezenet.kiln", NULL, &model) != KILN_OK) {
 *     fprintf(stderr, "%s\n", kiln_last_error());
 *   }
 *   kiln_tensor in = {NULL, KILN_DTYPE_FLOAT32, shape, 4, data, nbytes};
 *   kiln_output out = {NULL, buffer, sizeof buffer};
 *   kiln_model_run(model, &in, 1, &out, 1);
 *   kiln_model_free(model);
 *
 * Versioning: the ABI version is KILN_RUNTIME_ABI_VERSION (the library's SONAME number). A
 * program built against this header checks kiln_runtime_abi_version() == KILN_RUNTIME_ABI_VERSION
 * at start. Within one ABI version, functions are only added and structs are only extended at
 * their end (kiln_load_options carries its own size for that).
 *
 * Errors: every function that can fail returns a kiln_status (the canonical codes of
 * absl::StatusCode / gRPC) and sets a message, read with kiln_last_error(), that names what is
 * wrong (which input, which dim, which CPU feature). Threads: a kiln_model may be shared;
 * kiln_model_run calls on one model run one at a time (the model owns one memory arena); use
 * one model per thread to run in parallel. Tensors are row-major (C order), little-endian. */
#ifndef KILN_RUNTIME_H_
#define KILN_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KILN_RUNTIME_API __attribute__((visibility("default")))
#else
#define KILN_RUNTIME_API
#endif

/* The ABI version this header describes; bumped on any incompatible change. */
#define KILN_RUNTIME_ABI_VERSION 1
/* The release of the runtime library. */
#define KILN_RUNTIME_VERSION_MAJOR 1
#define KILN_RUNTIME_VERSION_MINOR 0
#define KILN_RUNTIME_VERSION_PATCH 0

/* Status codes: the canonical codes of absl::StatusCode and gRPC, with the same values. */
typedef enum kiln_status {
  KILN_OK = 0,
  KILN_CANCELLED = 1,
  KILN_UNKNOWN = 2,
  KILN_INVALID_ARGUMENT = 3, /* a bad artifact, input, name or shape */
  KILN_NOT_FOUND = 5,        /* the artifact file cannot be read */
  KILN_RESOURCE_EXHAUSTED = 8,
  KILN_FAILED_PRECONDITION = 9, /* the artifact cannot run here: CPU features, ABI, device */
  KILN_OUT_OF_RANGE = 11,       /* an output buffer is too small (see kiln_output) */
  KILN_UNIMPLEMENTED = 12,
  KILN_INTERNAL = 13,
  KILN_UNAVAILABLE = 14
} kiln_status;

/* Element types: the values of ONNX's TensorProto.DataType. */
typedef enum kiln_dtype {
  KILN_DTYPE_UNDEFINED = 0,
  KILN_DTYPE_FLOAT32 = 1,
  KILN_DTYPE_UINT8 = 2,
  KILN_DTYPE_INT8 = 3,
  KILN_DTYPE_UINT16 = 4,
  KILN_DTYPE_INT16 = 5,
  KILN_DTYPE_INT32 = 6,
  KILN_DTYPE_INT64 = 7,
  KILN_DTYPE_BOOL = 9, /* one byte per element, 0 or 1 */
  KILN_DTYPE_FLOAT16 = 10,
  KILN_DTYPE_FLOAT64 = 11,
  KILN_DTYPE_UINT32 = 12,
  KILN_DTYPE_UINT64 = 13,
  KILN_DTYPE_BFLOAT16 = 16
} kiln_dtype;

/* The largest rank an input or output may have. */
#define KILN_MAX_RANK 16

/* A loaded artifact. */
typedef struct kiln_model kiln_model;

/* Options for loading; zero-initialize (or use KILN_LOAD_OPTIONS_INIT) and set struct_size. */
typedef struct kiln_load_options {
  size_t struct_size;  /* sizeof(kiln_load_options) as the caller knows it */
  int32_t num_threads; /* threads of the model's pool; <= 0: the number of online cores */
  int32_t device;      /* CUDA device ordinal for a CUDA artifact; ignored for a CPU one */
} kiln_load_options;

#define KILN_LOAD_OPTIONS_INIT \
  { sizeof(kiln_load_options), 0, 0 }

/* What an input or output is (kiln_model_input / kiln_model_output). name and shape point into
 * the model and stay valid until kiln_model_free. A dim of -1 varies between runs: the
 * artifact was compiled for several shapes (shape profiles), for a range of them (bounded
 * dims) or for every shape (symbolic dims), and min_shape / max_shape give each dim's range
 * (equal to shape[d] for a fixed dim; max_shape -1: no upper bound, and max_num_bytes is then
 * 0: a run with too small an output buffer says the size it needs). */
typedef struct kiln_tensor_info {
  const char* name;
  kiln_dtype dtype;
  size_t rank;
  const int64_t* shape;
  const int64_t* min_shape;
  const int64_t* max_shape;
  size_t max_num_bytes; /* bytes of the largest tensor this input or output can be */
} kiln_tensor_info;

/* An input to kiln_model_run: caller-owned data, row-major. name NULL means "the input at this
 * position, in the order kiln_model_input lists them"; otherwise inputs are matched by name and
 * may come in any order. num_bytes must equal the product of shape times the element size.
 * An input declared as a scalar (rank 0) also takes a one-element tensor (shape {1}, {1,1}, ...)
 * as the scalar, as ONNX Runtime does; the shape must otherwise be the input's. */
typedef struct kiln_tensor {
  const char* name;
  kiln_dtype dtype;
  const int64_t* shape;
  size_t rank;
  const void* data;
  size_t num_bytes;
} kiln_tensor;

/* An output of kiln_model_run: the caller passes name (or NULL: by position), a buffer and its
 * capacity; the run fills dtype, rank, shape and num_bytes. A buffer smaller than the output
 * fails the run with KILN_OUT_OF_RANGE, num_bytes set to the size needed, and writes no
 * output. */
typedef struct kiln_output {
  const char* name;
  void* data;
  size_t capacity_bytes;
  /* Filled by kiln_model_run: */
  kiln_dtype dtype;
  size_t rank;
  int64_t shape[KILN_MAX_RANK];
  size_t num_bytes;
} kiln_output;

/* KILN_RUNTIME_ABI_VERSION of the library that is loaded. */
KILN_RUNTIME_API uint32_t kiln_runtime_abi_version(void);
/* The library's release, "MAJOR.MINOR.PATCH" (KILN_RUNTIME_VERSION_*). */
KILN_RUNTIME_API const char* kiln_runtime_version(void);

/* The message of the last call on this thread that failed ("" if none failed). Valid until the
 * next kiln_* call on this thread. */
KILN_RUNTIME_API const char* kiln_last_error(void);

/* Loads the artifact at path (read whole, checksum verified) or in the size bytes at data (copied;
 * the caller may free data when the call returns). options may be NULL (defaults). On success
 * stores a model to free with kiln_model_free in *model. Errors: KILN_NOT_FOUND (unreadable
 * file), KILN_INVALID_ARGUMENT (not an artifact, a checksum mismatch, a bad manifest, an
 * artifact of another kernel ABI version), KILN_FAILED_PRECONDITION (built for CPU features
 * this host lacks, naming them), KILN_INTERNAL (the loader failed; a CUDA artifact with no
 * usable GPU). */
KILN_RUNTIME_API kiln_status kiln_model_load_file(const char* path,
                                                  const kiln_load_options* options,
                                                  kiln_model** model);
KILN_RUNTIME_API kiln_status kiln_model_load_memory(const void* data, size_t size,
                                                    const kiln_load_options* options,
                                                    kiln_model** model);
/* Frees a model (NULL is allowed). */
KILN_RUNTIME_API void kiln_model_free(kiln_model* model);

/* The number of inputs and outputs. */
KILN_RUNTIME_API size_t kiln_model_num_inputs(const kiln_model* model);
KILN_RUNTIME_API size_t kiln_model_num_outputs(const kiln_model* model);
/* Describes input or output i (0-based) in *info. Errors: KILN_OUT_OF_RANGE for i past the end,
 * KILN_INVALID_ARGUMENT for a NULL argument. */
KILN_RUNTIME_API kiln_status kiln_model_input(const kiln_model* model, size_t i,
                                              kiln_tensor_info* info);
KILN_RUNTIME_API kiln_status kiln_model_output(const kiln_model* model, size_t i,
                                               kiln_tensor_info* info);
/* A manifest field: "graph_hash", "target" (the target key), "compiler_version", "model_name",
 * "options_hash", "tuning_digest". NULL for an unknown key. Valid until kiln_model_free. */
KILN_RUNTIME_API const char* kiln_model_property(const kiln_model* model, const char* key);

/* Runs the model: every input once (by position or by name), outputs into caller buffers (all
 * outputs, or any subset named). Errors: KILN_INVALID_ARGUMENT naming the input and what is
 * wrong (missing, unknown name, dtype, shape, byte count), KILN_OUT_OF_RANGE (an output buffer
 * too small: its num_bytes says how large it must be), KILN_INTERNAL (a device error). */
KILN_RUNTIME_API kiln_status kiln_model_run(kiln_model* model, const kiln_tensor* inputs,
                                            size_t num_inputs, kiln_output* outputs,
                                            size_t num_outputs);

/* This machine's CPU as a Kiln target spec, "cpu:<llvm cpu name>:+f1,-f2,...": what a client
 * sends kilnd for `--target native` (kilnd's own "host" is the server's CPU), so an artifact
 * compiled remotely runs here. "native" if this host is not x86-64. Valid for the process's
 * lifetime. */
KILN_RUNTIME_API const char* kiln_native_target(void);

/* The size in bytes of one element of dtype (0 for KILN_DTYPE_UNDEFINED or an unknown value). */
KILN_RUNTIME_API size_t kiln_dtype_size(kiln_dtype dtype);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_H_ */
