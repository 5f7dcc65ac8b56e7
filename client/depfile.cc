#include "client/depfile.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "compiler_core/importer/onnx/model_checks.h"
#include "compiler_core/support/file_bytes.h"
#include "compiler_core/support/status_macros.h"

namespace kiln::client {
namespace {

std::string Escaped(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  const std::string abs = ec ? path : p.lexically_normal().string();
  std::string out;
  for (char c : abs) {
    if (c == ' ' || c == '#' || c == '\\') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

}  // namespace

std::string DepfileText(const std::string& target, const std::vector<std::string>& deps) {
  std::string text = Escaped(target) + ":";
  for (const std::string& d : deps) absl::StrAppend(&text, " \\\n  ", Escaped(d));
  return text + "\n";
}

absl::StatusOr<std::vector<std::string>> CompileInputs(const Args& args) {
  const std::string model = args.positional.at(0);
  KILN_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(model));
  std::vector<std::string> deps = {model};
  const std::string dir = std::filesystem::path(model).parent_path().string();
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> external,
                        importer::ExternalDataFiles(bytes, dir.empty() ? "." : dir));
  deps.insert(deps.end(), external.begin(), external.end());
  if (args.Has("--records")) deps.push_back(args.Get("--records"));
  for (const std::string& spec : args.GetAll("--constant-input")) {
    const size_t eq = spec.find('=');
    if (eq != std::string::npos) deps.push_back(spec.substr(eq + 1));
  }
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) deps.push_back(self.string());
  return deps;
}

absl::Status WriteCompileDepfile(const std::string& path, const std::string& target,
                                 const Args& args) {
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> deps, CompileInputs(args));
  return WriteFileAtomically(path, DepfileText(target, deps));
}

}  // namespace kiln::client
