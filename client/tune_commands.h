// `kiln tune`: the auto-tuner's command line. `--print-space` prints each workload's schedule
// space (knobs, choices, defaults) and optionally sampled candidates; tuning itself measures
// candidates (locally, or through kilnd's measure workers with --server).
#ifndef KILN_CLIENT_TUNE_COMMANDS_H_
#define KILN_CLIENT_TUNE_COMMANDS_H_

#include "client/args.h"

namespace kiln::client {

/// kiln tune MODEL.onnx ...: prints the space, or tunes here or on kilnd. Returns the process
/// exit status.
int TuneCommand(const Args& args);

}  // namespace kiln::client

#endif  // KILN_CLIENT_TUNE_COMMANDS_H_
