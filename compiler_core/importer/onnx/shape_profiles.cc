// --input-shape parsing and shape profiles.
#include "compiler_core/importer/onnx/shape_profiles.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::importer {
namespace {

std::string DimsList(const std::vector<int64_t>& dims) { return absl::StrJoin(dims, ","); }

}  // namespace

absl::Status ParseInputShape(std::string_view spec_view, std::vector<NamedShape>& given,
                             InputShapes* min_shapes) {
  const std::string spec(spec_view);
  const size_t eq = spec.find('=');
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--input-shape '", spec, "': ", why,
        min_shapes != nullptr ? " (expected NAME=D0,D1,..., a dim either N or MIN..MAX)"
                              : " (expected NAME=D0,D1,...)"));
  };
  if (eq == std::string::npos) return bad("no '='");
  std::string name(spec.substr(0, eq));
  if (name.empty()) return bad("empty input name");
  std::vector<int64_t> dims, mins;
  bool bounded = false;
  const std::string rest = spec.substr(eq + 1);
  if (!rest.empty()) {
    for (absl::string_view part : absl::StrSplit(rest, ',')) {
      int64_t lo = 0, hi = 0;
      const size_t dots = part.find("..");
      if (dots != absl::string_view::npos) {
        if (min_shapes == nullptr) {
          return bad(
              absl::StrCat("dim '", part, "' is a range; this command takes fixed dims only"));
        }
        if (!absl::SimpleAtoi(part.substr(0, dots), &lo) ||
            !absl::SimpleAtoi(part.substr(dots + 2), &hi) || lo < 1 || hi < lo) {
          return bad(absl::StrCat("dim '", part, "' is not a range MIN..MAX of integers with ",
                                  "1 <= MIN <= MAX"));
        }
        bounded = bounded || lo < hi;
      } else if (!absl::SimpleAtoi(part, &hi) || hi < 0) {
        // 0 is a size like any other: an empty KV cache on the first decoding step.
        return bad(absl::StrCat("dim '", part, "' is not an integer >= 0"));
      } else {
        lo = hi;
      }
      dims.push_back(hi);
      mins.push_back(lo);
    }
  }
  if (bounded) {
    if (min_shapes->count(name))
      return bad(absl::StrCat("input '", name, "' has bounded dims twice"));
    (*min_shapes)[name] = std::move(mins);
  }
  given.emplace_back(std::move(name), std::move(dims));
  return absl::OkStatus();
}

absl::StatusOr<ShapeProfiles> BoundedProfilesOf(const std::vector<NamedShape>& given,
                                                const InputShapes& min_shapes) {
  KILN_ASSIGN_OR_RETURN(ShapeProfiles profiles, ProfilesOf(given));
  if (!min_shapes.empty() && profiles.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--input-shape: bounded dims (MIN..MAX) and several shape profiles (",
                     FormatProfiles(profiles), ") cannot be combined; give one bounded profile"));
  }
  return profiles;
}

absl::StatusOr<ShapeProfiles> ProfilesOf(const std::vector<NamedShape>& given) {
  std::map<std::string, std::vector<std::vector<int64_t>>> by_input;
  for (const auto& [name, dims] : given) by_input[name].push_back(dims);
  size_t count = given.empty() ? 0 : 1;
  std::string counted;  // the input that set `count`
  for (const auto& [name, shapes] : by_input) {
    if (shapes.size() == 1) continue;
    if (count > 1 && shapes.size() != count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--input-shape: input '", counted, "' is given ", count, " shapes and '", name,
          "' ", shapes.size(), "; give each input once (for every profile) or once per profile"));
    }
    count = shapes.size();
    counted = name;
  }
  ShapeProfiles profiles;
  for (size_t k = 0; k < count; ++k) {
    InputShapes profile;
    for (const auto& [name, shapes] : by_input) profile[name] = shapes[shapes.size() == 1 ? 0 : k];
    if (std::find(profiles.begin(), profiles.end(), profile) == profiles.end()) {
      profiles.push_back(std::move(profile));
    }
  }
  return profiles;
}

absl::StatusOr<InputShapes> SingleProfile(const ShapeProfiles& profiles, std::string_view what) {
  if (profiles.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(what), " takes one shape profile, got ", profiles.size(), " (", FormatProfiles(profiles),
        "); tune each profile on its own: its records apply to every profile with the workload"));
  }
  return profiles.empty() ? InputShapes{} : profiles.front();
}

std::vector<NamedShape> GivenShapes(const ShapeProfiles& profiles) {
  std::vector<NamedShape> given;
  for (const InputShapes& profile : profiles) {
    for (const auto& [name, dims] : profile) given.emplace_back(name, dims);
  }
  return given;
}

std::string FormatInputShapes(const InputShapes& shapes) {
  std::vector<std::string> parts;
  for (const auto& [name, dims] : shapes) parts.push_back(absl::StrCat(name, "=", DimsList(dims)));
  return absl::StrJoin(parts, " ");
}

std::string FormatBoundedShapes(const InputShapes& max_shapes, const InputShapes& min_shapes) {
  std::vector<std::string> parts;
  for (const auto& [name, dims] : max_shapes) {
    auto mins = min_shapes.find(name);
    std::vector<std::string> text;
    for (size_t d = 0; d < dims.size(); ++d) {
      const bool ranged =
          mins != min_shapes.end() && d < mins->second.size() && mins->second[d] < dims[d];
      text.push_back(ranged ? absl::StrCat(mins->second[d], "..", dims[d]) : absl::StrCat(dims[d]));
    }
    parts.push_back(absl::StrCat(name, "=", absl::StrJoin(text, ",")));
  }
  return absl::StrJoin(parts, " ");
}

std::string FormatProfiles(const ShapeProfiles& profiles, const InputShapes& min_shapes) {
  std::vector<std::string> parts;
  for (const InputShapes& profile : profiles) {
    parts.push_back(FormatBoundedShapes(profile, min_shapes));
  }
  return absl::StrJoin(parts, " | ");
}

}  // namespace kiln::importer
