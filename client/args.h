// A parsed kiln command line (client/cli.cc parses it with CLI11) and the error printers,
// shared by the local subcommands (kiln.cc) and the remote ones (remote_commands.cc).
#ifndef KILN_CLIENT_ARGS_H_
#define KILN_CLIENT_ARGS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler_core/importer/onnx/input_shapes.h"

namespace kiln::client {

/// Parsed command line: the subcommand, its positional arguments and --flag values in the
/// order given (repeatable flags keep all; a flag without a value is "true"). A flag's key is
/// its long name ("--output" for -o), KILN_SERVER and KILN_TARGET already applied.
struct Args {
  std::string command;  // "compile", "records", ...
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> flags;

  bool Has(const std::string& f) const { return flags.count(f) != 0; }
  std::string Get(const std::string& f, const std::string& def = "") const {
    auto it = flags.find(f);
    return it == flags.end() ? def : it->second;
  }
  std::vector<std::string> GetAll(const std::string& f) const {
    std::vector<std::string> out;
    for (auto [it, end] = flags.equal_range(f); it != end; ++it) out.push_back(it->second);
    return out;
  }
};

/// Prints "kiln: <message>" to stderr; returns exit status 1 (a runtime failure).
int Fail(const std::string& message);
/// Fail with "<CODE>: <message>".
int FailStatus(const absl::Status& status);
/// A usage error of `args`' subcommand found after parsing (a bad flag value, flags that do not
/// go together): "kiln <command>: <message>" and where --help is; returns exit status 2.
int FailUsage(const Args& args, const std::string& message);

/// Every value of a repeatable flag, each also split at commas.
std::vector<std::string> SplitAll(const Args& args, const std::string& flag);

/// The shape profiles of the command line's `--input-shape NAME=D0,D1,...` flags
/// (importer::ParseInputShape, importer::ProfilesOf): empty without the flag. With
/// `min_shapes`, dims may be ranges MIN..MAX (bounded dims; one profile only), whose minimums
/// go there (importer::BoundedProfilesOf); without, a range is an error.
absl::StatusOr<importer::ShapeProfiles> ShapeProfilesFrom(
    const Args& args, importer::InputShapes* min_shapes = nullptr);

/// Every `--constant-input NAME=FILE.pb`: input name → the file's bytes (a serialized
/// onnx.TensorProto, checked by the import). Errors: kInvalidArgument for a value without
/// NAME=, kNotFound for an unreadable file.
absl::StatusOr<std::map<std::string, std::string>> ConstantInputsFrom(const Args& args);

/// The one shape profile a command that compiles a single variant (`kiln tune`) takes: empty
/// without --input-shape. With `min_shapes`, dims may be ranges (`x=1..4,...`: the profile holds
/// the maximums and `min_shapes` the minimums, as ShapeProfilesFrom). Errors: ShapeProfilesFrom's;
/// kInvalidArgument for several profiles, naming `command`.
absl::StatusOr<importer::InputShapes> OneShapeProfileFrom(
    const Args& args, const std::string& command, importer::InputShapes* min_shapes = nullptr);

}  // namespace kiln::client

#endif  // KILN_CLIENT_ARGS_H_
