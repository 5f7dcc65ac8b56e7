// `kiln compile --depfile FILE`: the files a compile read, in the Makefile syntax that Ninja's
// and Make's depfiles use, so a build re-runs the compile only when one of them changes
// (cmake/KilnCompile.cmake).
#ifndef KILN_CLIENT_DEPFILE_H_
#define KILN_CLIENT_DEPFILE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/args.h"

namespace kiln::client {

/// "TARGET: DEP DEP ...\n" with each path made absolute and escaped as GCC's -MD escapes it
/// (space and '#' with a backslash, '$' as "$$"), which Ninja and Make read back.
std::string DepfileText(const std::string& target, const std::vector<std::string>& deps);

/// The files `kiln compile` with `args` reads: the model, its external data files, the
/// --records file and the --constant-input tensor files, and this kiln executable (the
/// compiler). Errors: kNotFound (the model cannot be read), kInvalidArgument (it is no
/// ModelProto).
absl::StatusOr<std::vector<std::string>> CompileInputs(const Args& args);

/// Writes DepfileText(target, CompileInputs(args)) to `path` atomically.
absl::Status WriteCompileDepfile(const std::string& path, const std::string& target,
                                 const Args& args);

}  // namespace kiln::client

#endif  // KILN_CLIENT_DEPFILE_H_
