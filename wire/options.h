// The canonical form of CompileOptions and its hash (the artifact cache key's options_hash):
// kilnd computes it for the key, kiln-worker checks it on every task; both use this one
// definition.
#ifndef KILN_WIRE_OPTIONS_H_
#define KILN_WIRE_OPTIONS_H_

#include <string>

#include "kiln/v1/service.pb.h"

namespace kiln::wire {

/// `options` in canonical form: precision "fp32" cleared (the default), disabled_passes sorted
/// and deduplicated (their order does not change the generated code), constant_inputs and
/// input_shapes sorted by name (input_shapes stably: an input's profiles keep their order).
v1::CompileOptions CanonicalOptions(const v1::CompileOptions& options);

/// SHA-256 (64 lowercase hex characters) of the deterministic serialization of
/// CanonicalOptions(options), of each tuning record only what shapes the artifact (workload
/// key, hardware key, schedule, median), records sorted by workload key: equal for options that
/// compile alike.
std::string OptionsHash(const v1::CompileOptions& options);

}  // namespace kiln::wire

#endif  // KILN_WIRE_OPTIONS_H_
