// AttrMap getters and attribute printing.
#include "compiler_core/ir/graph/attributes.h"

#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/ir/graph/graph.h"
#include "compiler_core/ir/graph/graph_hash.h"
#include "compiler_core/support/sha256.h"

namespace kiln::graph {

int64_t AttrMap::GetInt(const std::string& name, int64_t default_value) const {
  auto it = attrs_.find(name);
  if (it == attrs_.end()) return default_value;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  return default_value;
}

float AttrMap::GetFloat(const std::string& name, float default_value) const {
  auto it = attrs_.find(name);
  if (it == attrs_.end()) return default_value;
  if (auto* v = std::get_if<float>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return static_cast<float>(*v);
  return default_value;
}

std::string AttrMap::GetString(const std::string& name, const std::string& default_value) const {
  auto it = attrs_.find(name);
  if (it == attrs_.end()) return default_value;
  if (auto* v = std::get_if<std::string>(&it->second)) return *v;
  return default_value;
}

std::vector<int64_t> AttrMap::GetInts(const std::string& name,
                                      const std::vector<int64_t>& default_value) const {
  auto it = attrs_.find(name);
  if (it == attrs_.end()) return default_value;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  return default_value;
}

std::vector<float> AttrMap::GetFloats(const std::string& name,
                                      const std::vector<float>& default_value) const {
  auto it = attrs_.find(name);
  if (it == attrs_.end()) return default_value;
  if (auto* v = std::get_if<std::vector<float>>(&it->second)) return *v;
  return default_value;
}

std::shared_ptr<const Tensor> AttrMap::GetTensor(const std::string& name) const {
  auto it = attrs_.find(name);
  if (it == attrs_.end()) return nullptr;
  if (auto* v = std::get_if<std::shared_ptr<const Tensor>>(&it->second)) return *v;
  return nullptr;
}

std::shared_ptr<Graph> AttrMap::GetGraph(const std::string& name) const {
  auto it = attrs_.find(name);
  if (it == attrs_.end()) return nullptr;
  if (auto* v = std::get_if<std::shared_ptr<Graph>>(&it->second)) return *v;
  return nullptr;
}

bool AttrMap::operator==(const AttrMap& other) const {
  if (attrs_.size() != other.attrs_.size()) return false;
  for (auto a = attrs_.begin(), b = other.attrs_.begin(); a != attrs_.end(); ++a, ++b) {
    if (a->first != b->first) return false;
    if (FormatAttrValue(a->second) != FormatAttrValue(b->second)) return false;
  }
  return true;
}

std::string FormatFloatExact(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  // Keep a float visibly a float: "1" -> "1.0".
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

namespace {
std::string FormatFloat32(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}
}  // namespace

std::string FormatAttrValue(const AttrValue& value) {
  struct Visitor {
    std::string operator()(int64_t v) const { return absl::StrCat(v); }
    std::string operator()(float v) const { return FormatFloat32(v); }
    std::string operator()(const std::string& v) const { return absl::StrCat("\"", v, "\""); }
    std::string operator()(const std::vector<int64_t>& v) const {
      return absl::StrCat("[", absl::StrJoin(v, ","), "]");
    }
    std::string operator()(const std::vector<float>& v) const {
      std::vector<std::string> parts;
      for (float f : v) parts.push_back(FormatFloat32(f));
      return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
    }
    std::string operator()(const std::shared_ptr<const Tensor>& t) const {
      if (!t) return "tensor<null>";
      std::string_view bytes(reinterpret_cast<const char*>(t->bytes.data()), t->bytes.size());
      return absl::StrCat("tensor<", t->type.ToString(), " sha256:", Sha256Hex(bytes).substr(0, 16),
                          ">");
    }
    std::string operator()(const std::shared_ptr<Graph>& g) const {
      if (!g) return "graph<null>";
      return absl::StrCat("graph<@", g->name(), " ", GraphHash(*g).substr(0, 16), ">");
    }
  };
  return std::visit(Visitor{}, value);
}

}  // namespace kiln::graph
