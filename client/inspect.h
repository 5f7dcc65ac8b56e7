// `kiln inspect`: what an artifact holds. A summary first (ops, kernels tuned or default,
// compute, weights, arena, the top kernels by FLOPs, with the model's tensor names), the
// details on request (--kernels: bindings, schedules, tuning; --memory: the arena plan), the
// whole manifest as JSON (--json, protobuf's JSON printer) and the fused graph as Graphviz
// (--dot).
#ifndef KILN_CLIENT_INSPECT_H_
#define KILN_CLIENT_INSPECT_H_

#include <string>

#include "compiler_core/runtime/artifact.h"
#include "kiln/v1/artifact.pb.h"

namespace kiln::client {

/// What `kiln inspect` prints besides the summary.
struct InspectDetails {
  bool kernels = false;  // every kernel: bindings (tensor names), workload, tuning, schedule
  bool memory = false;   // the arena plan: every buffer's offset, size and live range
};

/// The summary of the artifact read from `path`, then the details asked for (each shape
/// profile's too). Sizes in bytes with a human form ("4.96 MB"), compute in FLOP per run.
std::string InspectText(const runtime::Artifact& artifact, const std::string& path,
                        const InspectDetails& details);

/// One JSON object: "artifact" (path), "code_bytes", "code_kind", "summary" (the counts of the
/// text summary) and "manifest" (kiln.v1.Manifest as protobuf's JSON printer writes it, field
/// names as in artifact.proto).
std::string InspectJson(const runtime::Artifact& artifact, const std::string& path);

/// The fused graph in Graphviz dot: one box per kernel (its fused ops and FLOPs), one ellipse
/// per graph input and output, an edge per tensor passed between them labelled with its name
/// (the memory plan's buffer names). Weights are not drawn. An artifact with shape profiles
/// draws its first profile.
std::string InspectDot(const kiln::v1::Manifest& manifest);

}  // namespace kiln::client

#endif  // KILN_CLIENT_INSPECT_H_
