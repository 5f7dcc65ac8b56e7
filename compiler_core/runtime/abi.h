/* The narrow C ABI between generated kernels (in an artifact's shared object) and the runtime.
 * Plain C so that both sides agree without sharing C++ types. */
#ifndef KILN_COMPILER_CORE_RUNTIME_ABI_H_
#define KILN_COMPILER_CORE_RUNTIME_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Runs iterations [begin, end) of an outlined parallel loop body. */
typedef void (*kiln_task_fn)(void* closure, int64_t begin, int64_t end);

/* What the runtime hands every kernel call. */
typedef struct kiln_context {
  /* Runs fn over [0, n) split into contiguous chunks across the pool, returns when all are
   * done. Must be callable with pool == NULL meaning "run inline". */
  void (*parallel_for)(void* pool, kiln_task_fn fn, void* closure, int64_t n);
  void* pool;
} kiln_context;

/* Every kernel symbol in an artifact has this type. args holds one pointer per Func param,
 * then one per workspace, in the Func's order; each points at row-major data. */
typedef void (*kiln_kernel_fn)(const kiln_context* ctx, void* const* args);

/* Version of this ABI; stored in the artifact manifest and checked at load. */
#define KILN_ABI_VERSION 1

#ifdef __cplusplus
}
#endif

#endif /* KILN_COMPILER_CORE_RUNTIME_ABI_H_ */
