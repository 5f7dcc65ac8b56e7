#include "tensor_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Protobuf wire format (protobuf.dev, "Encoding"): each field is a varint key
 * (number << 3 | wire type) and a value: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32. */
static int read_varint(const uint8_t** p, const uint8_t* end, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*p >= end) return -1;
    uint8_t b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return 0;
  }
  return -1;
}

static int fail(const char* path, const char* why) {
  fprintf(stderr, "%s: %s\n", path, why);
  return -1;
}

int read_tensor_file(const char* path, tensor_file* t) {
  memset(t, 0, sizeof *t);
  FILE* f = fopen(path, "rb");
  if (f == NULL) return fail(path, "cannot open");
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* bytes = malloc(size > 0 ? (size_t)size : 1);
  size_t got = fread(bytes, 1, (size_t)size, f);
  fclose(f);
  if (size < 0 || got != (size_t)size) {
    free(bytes);
    return fail(path, "cannot read");
  }
  const uint8_t* p = bytes;
  const uint8_t* end = bytes + size;
  uint8_t* floats = NULL; /* float_data (field 4), packed */
  size_t floats_size = 0;
  int rc = 0;
  while (p < end && rc == 0) {
    uint64_t key, v;
    if (read_varint(&p, end, &key) != 0) {
      rc = fail(path, "malformed field key");
      break;
    }
    const unsigned field = (unsigned)(key >> 3), wire = (unsigned)(key & 7);
    if (wire == 0) {
      if (read_varint(&p, end, &v) != 0) rc = fail(path, "malformed varint");
      if (field == 1) { /* dims, unpacked */
        if (t->rank == KILN_MAX_RANK)
          rc = fail(path, "too many dims");
        else
          t->shape[t->rank++] = (int64_t)v;
      } else if (field == 2) { /* data_type */
        t->dtype = (kiln_dtype)v;
      }
    } else if (wire == 2) {
      if (read_varint(&p, end, &v) != 0 || v > (uint64_t)(end - p)) {
        rc = fail(path, "malformed length");
        break;
      }
      const uint8_t* value = p;
      p += v;
      if (field == 1) { /* dims, packed */
        while (value < p && rc == 0) {
          uint64_t d;
          if (read_varint(&value, p, &d) != 0 || t->rank == KILN_MAX_RANK) {
            rc = fail(path, "malformed dims");
          } else {
            t->shape[t->rank++] = (int64_t)d;
          }
        }
      } else if (field == 4) { /* float_data, packed */
        floats = realloc(floats, floats_size + v);
        memcpy(floats + floats_size, value, v);
        floats_size += v;
      } else if (field == 8) { /* name */
        size_t n = v < sizeof t->name - 1 ? (size_t)v : sizeof t->name - 1;
        memcpy(t->name, value, n);
        t->name[n] = '\0';
      } else if (field == 9) { /* raw_data */
        free(t->data);
        t->data = malloc(v > 0 ? (size_t)v : 1);
        memcpy(t->data, value, v);
        t->num_bytes = (size_t)v;
      }
    } else if (wire == 1 || wire == 5) {
      const size_t n = wire == 1 ? 8 : 4;
      if ((size_t)(end - p) < n) rc = fail(path, "truncated fixed field");
      if (rc == 0 && field == 4 && wire == 5) { /* float_data, unpacked */
        floats = realloc(floats, floats_size + 4);
        memcpy(floats + floats_size, p, 4);
        floats_size += 4;
      }
      p += n;
    } else {
      rc = fail(path, "unsupported wire type");
    }
  }
  free(bytes);
  if (rc == 0 && t->data == NULL && floats != NULL) {
    t->data = floats;
    t->num_bytes = floats_size;
    floats = NULL;
  }
  free(floats);
  if (rc == 0 && t->data == NULL) rc = fail(path, "holds no raw_data or float_data");
  if (rc != 0) {
    free(t->data);
    t->data = NULL;
  }
  return rc;
}
