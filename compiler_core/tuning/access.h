// Index analysis for the feature extractor: which loops an access depends on, its flattened
// stride along a loop, and the bounding box it covers while some loops run. Internal to
// tuning/.
#ifndef KILN_COMPILER_CORE_TUNING_ACCESS_H_
#define KILN_COMPILER_CORE_TUNING_ACCESS_H_

#include <cstdint>
#include <vector>

#include "compiler_core/ir/loop/loop_ir.h"

namespace kiln::tuning {

/// One loop around a store, as the analysis sees it.
struct LoopFrame {
  const loop::VarNode* var = nullptr;
  int64_t extent = 1;
  loop::ForKind kind = loop::ForKind::kSerial;
  bool reduction = false;
};

/// The loads and stores of one buffer within one store statement.
struct BufferAccess {
  loop::BufferRef buffer;
  std::vector<std::vector<loop::Expr>> indices;  // one index list per access
  bool read = false;
  bool write = false;
};

/// True if any index of any access of `access` mentions `var`.
bool DependsOn(const BufferAccess& access, const loop::VarNode* var);

/// Change of the row-major flat offset (elements) of the first access when loop `level` of
/// `loops` (outermost first) advances by one from the middle of every loop's range; 0 when the
/// loop has extent 1. A finite difference, so clamped (padding) and divided indices work too;
/// indirect indices (loads) count as 0.
int64_t FlatStride(const BufferAccess& access, const std::vector<LoopFrame>& loops, int level);

/// Cache lines (of `line_bytes`) covered by the bounding box of all accesses while the innermost
/// `k` loops of `loops` run over their whole range and the others stay at their middle. Runs of
/// whole trailing dimensions merge into contiguous rows; capped at the buffer's own lines.
int64_t FootprintLines(const BufferAccess& access, const std::vector<LoopFrame>& loops, int k,
                       int64_t line_bytes);

/// Elements of that bounding box (all loops running when k = loops.size()).
int64_t FootprintElements(const BufferAccess& access, const std::vector<LoopFrame>& loops, int k);

}  // namespace kiln::tuning

#endif  // KILN_COMPILER_CORE_TUNING_ACCESS_H_
