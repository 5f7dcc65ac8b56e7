// kiln-graph-hash: reads one serialized kiln.v1.GraphHashTask on stdin, writes one
// GraphHashResult on stdout, exits 0. kilnd runs it in a child with limits on memory and CPU
// time (server/limited_process.h), so a model that crashes or exhausts the ONNX library ends
// only this process.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "server/graph_hash_task.h"

int main(int argc, char** argv) {
  if (argc != 1 || ::isatty(STDIN_FILENO)) {
    std::fprintf(stderr,
                 "usage: kiln-graph-hash < TASK (a serialized kiln.v1.GraphHashTask; kilnd runs "
                 "this, not users)\n");
    return 2;
  }
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  kiln::v1::GraphHashTask task;
  kiln::v1::GraphHashResult result;
  if (!task.ParseFromString(input)) {
    result.set_error_code(3);  // INVALID_ARGUMENT
    result.set_error_message("stdin is not a serialized kiln.v1.GraphHashTask");
  } else {
    result = kiln::server::RunGraphHashTask(task);
  }
  std::string out = result.SerializeAsString();
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}
