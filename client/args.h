// The CLI's small argument parser and error printers, shared by the local subcommands
// (kiln.cc) and the remote ones (remote_commands.cc).
#ifndef KILN_CLIENT_ARGS_H_
#define KILN_CLIENT_ARGS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler_core/importer/onnx/input_shapes.h"

namespace kiln::client {

/// Prints "kiln: <message>" to stderr; returns exit status 1.
int Fail(const std::string& message);
/// Fail with "<CODE>: <message>".
int FailStatus(const absl::Status& status);

/// Parsed command line: positional arguments and --flag values (repeatable flags keep all).
struct Args {
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> flags;
  std::string error;  // set when the command line is invalid

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

/// How a command that takes --server reaches kilnd (client/channel.h): the CA that verifies
/// kilnd's certificate, the name to check it against, and the file holding the bearer token.
inline constexpr const char* kConnectionFlags[] = {"--tls-ca", "--tls-server-name", "--token-file"};

/// Parses argv[first..]: `value_flags` lists every accepted flag ("--f V" or "--f=V"); those
/// also in `bool_flags` take no value. Where `value_flags` has --server, kConnectionFlags are
/// accepted too.
Args ParseArgs(int argc, char** argv, int first, const std::vector<std::string>& value_flags,
               const std::vector<std::string>& bool_flags = {});

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
