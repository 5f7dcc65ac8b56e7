// Concrete shapes for graph inputs with symbolic dims (`--input-shape NAME=D0,D1,...`), as
// tvmc's --input-shapes, trtexec's --shapes and ONNX Runtime's free-dimension overrides give
// them, and their grouping into shape profiles: parsing and printing. Depends on Abseil only, so
// kilnd's and the workers' protocol code can use it without the ONNX library.
#ifndef KILN_COMPILER_CORE_IMPORTER_ONNX_SHAPE_PROFILES_H_
#define KILN_COMPILER_CORE_IMPORTER_ONNX_SHAPE_PROFILES_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln::importer {

/// Shapes of graph inputs by input name; every dim >= 1.
using InputShapes = std::map<std::string, std::vector<int64_t>>;

/// Shape profiles: one InputShapes per profile. A model compiled with several profiles holds one
/// variant per profile in one artifact (as TensorRT's optimization profiles), and the runtime
/// picks the variant whose input shapes match.
using ShapeProfiles = std::vector<InputShapes>;

/// One `--input-shape` value as given: the input's name and its dims.
using NamedShape = std::pair<std::string, std::vector<int64_t>>;

/// Parses one `--input-shape` value, "NAME=D0,D1,..." (a scalar input: "NAME="), and appends it
/// to `given`. With `min_shapes`, a dim may also be a range "MIN..MAX" (a bounded dim: the
/// artifact runs any length within it); `given` then holds MAX and `min_shapes[NAME]` every
/// dim's MIN (its value for a fixed dim), set only when some dim is a range. Errors
/// (kInvalidArgument, quoting `spec`): no '=', an empty name, a dim that is not an integer >= 1
/// or a range 1 <= MIN <= MAX, a range without `min_shapes`, bounded dims of one input twice.
absl::Status ParseInputShape(std::string_view spec, std::vector<NamedShape>& given,
                             InputShapes* min_shapes = nullptr);

/// ProfilesOf(given); with bounded dims (non-empty `min_shapes`) only one profile is allowed.
/// Errors: ProfilesOf's; kInvalidArgument for bounded dims with several profiles.
absl::StatusOr<ShapeProfiles> BoundedProfilesOf(const std::vector<NamedShape>& given,
                                                const InputShapes& min_shapes);

/// Groups shapes as given into profiles: the k-th shape given for an input belongs to profile
/// k, an input given once belongs to every profile, and a profile equal to an earlier one is
/// dropped. Empty `given`: no profile. Errors (kInvalidArgument): two inputs given different
/// numbers of shapes, both more than one (naming the inputs and counts).
absl::StatusOr<ShapeProfiles> ProfilesOf(const std::vector<NamedShape>& given);

/// The one profile of `profiles` (no shapes when there is none), for `what` compiles a single
/// variant (e.g. "kiln tune": a tune measures one shape). Errors (kInvalidArgument): several
/// profiles, "<what> takes one shape profile, got N (...); tune each profile on its own: ...".
absl::StatusOr<InputShapes> SingleProfile(const ShapeProfiles& profiles, std::string_view what);

/// The shapes of `profiles` in profile order, each profile's inputs in name order (the inverse
/// of ProfilesOf, for sending profiles in a CompileRequest).
std::vector<NamedShape> GivenShapes(const ShapeProfiles& profiles);

/// "a=1,3,224,224 b=2" (inputs in name order), the text of error messages and reports.
std::string FormatInputShapes(const InputShapes& shapes);

/// FormatInputShapes with each bounded dim (below its maximum in `min_shapes`) as "MIN..MAX":
/// "x=1..4,3,224,224".
std::string FormatBoundedShapes(const InputShapes& max_shapes, const InputShapes& min_shapes);

/// Profiles separated by " | ": "x=1,3,224,224 | x=8,3,224,224"; with `min_shapes` (bounded
/// dims) each profile as FormatBoundedShapes gives it.
std::string FormatProfiles(const ShapeProfiles& profiles, const InputShapes& min_shapes = {});

}  // namespace kiln::importer

#endif  // KILN_COMPILER_CORE_IMPORTER_ONNX_SHAPE_PROFILES_H_
