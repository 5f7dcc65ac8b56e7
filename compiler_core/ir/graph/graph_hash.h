// The canonical structural hash of a graph (the "graph hash"), the first component of an
// artifact's cache key.
#ifndef KILN_COMPILER_CORE_IR_GRAPH_GRAPH_HASH_H_
#define KILN_COMPILER_CORE_IR_GRAPH_GRAPH_HASH_H_

#include <string>
#include <vector>

#include "compiler_core/ir/graph/graph.h"

namespace kiln::graph {

/// SHA-256 (64 hex chars) of what `graph` computes, Merkle style:
///   input i     → H("input", i, dtype, shape)
///   constant    → H("const", dtype, shape, SHA-256 of its bytes)      (weights included)
///   node output → H("node", op, every attribute name and value (tensors by content, graphs
///                   (a Loop's body) by their GraphHash),
///                   the hashes of its inputs in order ("none" for an omitted one),
///                   its output index, dtype and shape)
///   graph       → H("graph", number of inputs, each input's dtype, shape and name,
///                   the hashes and names of the outputs in order)
/// Covered: ops, attributes, input order, dtypes, shapes, constant values, the wiring, the
/// order and names of graph inputs and outputs (an artifact embeds them: two models that
/// differ only there must not share one). Not covered (equal graphs may differ in these): node
/// order in the file, inner value / node names, the graph's name, producer and doc metadata, nodes
/// that no graph output depends on, fusion group ids. Values are hashed with fixed-width,
/// length-prefixed fields so no two different structures serialize to the same byte stream.
std::string GraphHash(const Graph& graph);

/// The graph hash of a model compiled with several shape profiles: SHA-256 (hex) over
/// "profiles", the number of profiles and each profile's GraphHash in profile order.
std::string ProfilesGraphHash(const std::vector<std::string>& profile_hashes);

}  // namespace kiln::graph

#endif  // KILN_COMPILER_CORE_IR_GRAPH_GRAPH_HASH_H_
