// kiln-graph-hash: reads one serialized kiln.v1.GraphHashTask on stdin, writes one
// GraphHashResult on stdout, exits 0. kilnd runs it in a child with limits on memory and CPU
// time (server/limited_process.h), so a model that crashes or exhausts the ONNX library ends
// only this process.
#include <unistd.h>

#include <cstdio>

#include "server/child_main.h"
#include "server/graph_hash_task.h"

int main(int argc, char** argv) {
  if (argc != 1 || ::isatty(STDIN_FILENO)) {
    std::fprintf(stderr,
                 "usage: kiln-graph-hash < TASK (a serialized kiln.v1.GraphHashTask; kilnd runs "
                 "this, not users)\n");
    return 2;
  }
  return kiln::server::ServeOneRequest<kiln::v1::GraphHashTask, kiln::v1::GraphHashResult>(
      kiln::server::RunGraphHashTask);
}
