/* Reads an ONNX TensorProto file (the test data layout's input_N.pb / output_N.pb): the few
 * fields an application needs, without a protobuf library. */
#ifndef KILN_EXAMPLE_TENSOR_FILE_H_
#define KILN_EXAMPLE_TENSOR_FILE_H_

#include <kiln/kiln_runtime.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tensor_file {
  char name[256];
  kiln_dtype dtype;
  size_t rank;
  int64_t shape[KILN_MAX_RANK];
  void* data; /* raw_data, or the float_data / int64_data values, little-endian */
  size_t num_bytes;
} tensor_file;

/* Reads `path` into *t (free t->data with free()). Returns 0, or -1 with a message on stderr
 * (unreadable file, malformed protobuf, more than KILN_MAX_RANK dims, no data). */
int read_tensor_file(const char* path, tensor_file* t);

#endif /* KILN_EXAMPLE_TENSOR_FILE_H_ */
