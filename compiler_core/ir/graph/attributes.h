// Node attributes: a name-sorted map of typed values (ONNX attribute kinds INT, FLOAT, STRING,
// INTS, FLOATS, TENSOR, GRAPH). Sorted so that printing and hashing are deterministic.
// Code reads a graph-IR node's attributes through the typed structs of op_attrs.h, which state
// each attribute's kind and default once; the string-keyed getters here serve the ONNX importer
// for ops it decomposes (ONNX-level attributes of ops outside op_attrs.def).
#ifndef KILN_COMPILER_CORE_IR_GRAPH_ATTRIBUTES_H_
#define KILN_COMPILER_CORE_IR_GRAPH_ATTRIBUTES_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "compiler_core/ir/graph/tensor.h"

namespace kiln::graph {

class Graph;

/// A graph-valued attribute (a Loop's body) is owned by the node that holds it; the compile
/// pipeline optimizes it in place when it compiles the body.
using AttrValue =
    std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                 std::shared_ptr<const Tensor>, std::shared_ptr<Graph>>;

/// Attributes of one node, keyed by ONNX attribute name.
class AttrMap {
 public:
  void Set(const std::string& name, AttrValue value) { attrs_[name] = std::move(value); }
  bool Has(const std::string& name) const { return attrs_.count(name) != 0; }
  void Erase(const std::string& name) { attrs_.erase(name); }

  /// Typed getters: the value if present with that type, otherwise `default_value`.
  int64_t GetInt(const std::string& name, int64_t default_value) const;
  float GetFloat(const std::string& name, float default_value) const;
  std::string GetString(const std::string& name, const std::string& default_value) const;
  std::vector<int64_t> GetInts(const std::string& name,
                               const std::vector<int64_t>& default_value = {}) const;
  std::vector<float> GetFloats(const std::string& name,
                               const std::vector<float>& default_value = {}) const;
  std::shared_ptr<const Tensor> GetTensor(const std::string& name) const;
  /// A graph attribute (a Loop's body), or null.
  std::shared_ptr<Graph> GetGraph(const std::string& name) const;

  const std::map<std::string, AttrValue>& items() const { return attrs_; }
  bool operator==(const AttrMap& other) const;

 private:
  std::map<std::string, AttrValue> attrs_;
};

/// Prints a float so that parsing it back gives the same bits (shortest round-trip form,
/// "inf"/"-inf"/"nan" for non-finite values).
std::string FormatFloatExact(double v);

/// Printed form of one attribute value, e.g. "[1,1]", "3", "0.5", "\"NOTSET\"".
/// Tensor attributes print as their type and content digest; graph attributes as their name
/// and graph hash (graph_hash.h), so equal strings mean equal computations.
std::string FormatAttrValue(const AttrValue& value);

}  // namespace kiln::graph

#endif  // KILN_COMPILER_CORE_IR_GRAPH_ATTRIBUTES_H_
