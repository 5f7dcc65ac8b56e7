// kiln-worker: a compile worker process (or with --measure cpu|cuda:N, a measure worker). Connects
// to kilnd's WorkerHub and runs what it is given until SIGTERM/SIGINT (exit 0) or until kilnd stays
// unreachable too long (exit 1). Its flags (CLI11) are defined here; a usage error exits 2.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/command_line.h"
#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/runtime/cuda/cuda_driver.h"
#include "compiler_core/tuning/hardware.h"
#include "compiler_core/tuning/measure.h"
#include "server/child_main.h"
#include "workers/compile_task.h"
#include "workers/tune_tasks.h"
#include "workers/worker.h"

namespace {

constexpr char kFooter[] =
    "A compile worker compiles --slots tasks at once, each in a child process under the\n"
    "--task-* limits. A measure worker (--measure) measures tune candidates, one batch at a\n"
    "time, and compiles nothing: --measure cpu owns --cores cores of this machine (pinned);\n"
    "--measure cuda:N times candidates on GPU N with CUDA events, each in a child process with\n"
    "its own context, for code of that GPU's SM (cuda:sm_80 .. cuda:sm_90).\n"
    "Exit status: 0 after SIGTERM/SIGINT, 1 when kilnd stays unreachable or setup fails, 2 for\n"
    "a usage error.\n";

/// A failure to set up (an unreadable file, a GPU that cannot be queried): exit status 1.
int SetupFailure(const absl::Status& status) {
  std::cerr << "kiln-worker: " << status.message() << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // The children of sandboxed tasks (workers/compile_task.h, workers/tune_tasks.h).
  if (argc == 2 && std::string(argv[1]) == "--run-compile") {
    return kiln::server::ServeOneRequest<kiln::v1::SandboxedCompile,
                                         kiln::v1::SandboxedCompileResult>(
        kiln::workers::RunSandboxedCompile);
  }
  if (argc == 2 && std::string(argv[1]) == "--run-step") {
    return kiln::server::ServeOneRequest<kiln::v1::SandboxedStep, kiln::v1::SandboxedStepResult>(
        kiln::workers::RunSandboxedStep);
  }
  kiln::workers::WorkerOptions options;
  // Each compile runs in a `--run-compile` child of this binary, under limits.
  options.compile_sandbox.binary = "/proc/self/exe";
  options.compile_sandbox.limits.max_memory_bytes = int64_t{16} << 30;
  options.compile_sandbox.limits.max_cpu_seconds = 1800;
  options.compile_sandbox.limits.timeout = absl::Hours(1);
  options.id = "kiln-worker-" + std::to_string(getpid());
  int grace_s = 5;
  int slots = options.slots;
  int give_up_after_s = 300;
  int cores = 1;
  int core_offset = 0;
  int task_cpu_seconds = options.compile_sandbox.limits.max_cpu_seconds;
  int64_t task_memory_bytes = options.compile_sandbox.limits.max_memory_bytes;
  std::string measure, inject_fault;
  std::string tls_ca, tls_server_name, tls_cert, tls_key, token_file;

  CLI::App app(
      "kiln-worker: a compile or measure worker of kilnd; connects to its worker hub "
      "and runs what it is given",
      "kiln-worker");
  kiln::client::SetUpApp(app, "kiln-worker");
  app.footer(kFooter);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--connect", options.server,
                 "kilnd's address: its --worker-listen address when it has one")
      ->type_name("HOST:PORT")
      ->required();
  app.add_option("--slots", slots, "tasks compiled at once")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--id", options.id,
                 "the worker's name at registration (default "
                 "kiln-worker-<pid>)")
      ->type_name("NAME");
  app.add_option("--give-up-after-s", give_up_after_s,
                 "exit 1 after this long without reaching kilnd")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--grace-s", grace_s, "after SIGTERM, wait this long for a running compile")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--task-memory-bytes", task_memory_bytes,
                 "address-space limit of each compile's child (default 16 GiB)")
      ->check(CLI::NonNegativeNumber)
      ->type_name("B");
  app.add_option("--task-cpu-seconds", task_cpu_seconds, "CPU-time limit of each compile's child")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--tls-ca", tls_ca, "PEM CA that verifies kilnd's certificate (turns TLS on)")
      ->type_name("FILE");
  app.add_option("--tls-server-name", tls_server_name,
                 "the name to check kilnd's certificate against (default: the host)")
      ->type_name("NAME");
  app.add_option("--tls-cert", tls_cert, "PEM worker client certificate (kilnd --tls-client-ca)")
      ->type_name("FILE");
  app.add_option("--tls-key", tls_key, "PEM private key of --tls-cert")->type_name("FILE");
  app.add_option("--token-file", token_file,
                 "file holding the bearer token (role worker) alone; default $KILN_TOKEN")
      ->type_name("FILE");
  app.add_option("--measure", measure,
                 "be a measure worker for this machine's CPU (cpu) or GPU N (cuda:N)")
      ->type_name("cpu|cuda:N");
  app.add_option("--cores", cores, "(--measure cpu) cores owned and measured with")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--core-offset", core_offset,
                 "(--measure cpu) pin to the cores from the K-th this process may use")
      ->check(CLI::NonNegativeNumber)
      ->type_name("K")
      ->capture_default_str();
  app.add_option("--inject-fault", inject_fault,
                 "(tests) wrong-outputs: every built candidate computes wrong outputs")
      ->check(CLI::IsMember({"wrong-outputs"}))
      ->type_name("FAULT");
  if (std::optional<int> done = kiln::client::ParseCommandLine(app, argc, argv)) return *done;
  options.slots = slots;
  options.give_up_after_ms = int64_t{give_up_after_s} * 1000;
  options.compile_sandbox.limits.max_memory_bytes = task_memory_bytes;
  options.compile_sandbox.limits.max_cpu_seconds = task_cpu_seconds;
  options.build_faults.wrong_outputs = inject_fault == "wrong-outputs";
  int gpu = -1;  // --measure cuda:N
  if (!measure.empty() && measure != "cpu") {
    absl::StatusOr<int> ordinal = kiln::runtime::cuda::ParseCudaDevice(measure);
    if (!ordinal.ok()) {
      return kiln::client::UsageError("kiln-worker",
                                      "--measure wants cpu or cuda:N, not '" + measure + "'");
    }
    gpu = *ordinal;
  }
  if (measure.empty() && (cores != 1 || core_offset != 0)) {
    return kiln::client::UsageError("kiln-worker",
                                    "--cores and --core-offset go with --measure cpu");
  }
  absl::StatusOr<kiln::client::ChannelSecurity> security =
      kiln::client::LoadChannelSecurity(tls_ca, token_file, tls_server_name, tls_cert, tls_key);
  if (!security.ok()) return SetupFailure(security.status());
  options.security = *std::move(security);
  if (gpu >= 0) {
    // A GPU measure worker measures code for its own SM.
    absl::StatusOr<kiln::runtime::cuda::CudaDeviceInfo> device =
        kiln::tuning::QueryCudaDeviceInChild(gpu);
    if (!device.ok()) return SetupFailure(device.status());
    absl::StatusOr<kiln::Target> target =
        kiln::ParseCudaTarget(absl::StrCat("cuda:sm_", device->sm));
    if (!target.ok()) return SetupFailure(target.status());
    absl::StatusOr<kiln::tuning::HardwareInfo> hw = kiln::tuning::DetectCudaHardware(*target, gpu);
    if (!hw.ok()) return SetupFailure(hw.status());
    options.measure_hardware_key = hw->Key();
    options.measure_device_name = hw->device;
    options.measure_device_kind = "cuda";
    options.measure_device_ordinal = gpu;
    options.slots = 1;
    std::cerr << "kiln-worker: measure worker on cuda:" << gpu << ", hardware key "
              << options.measure_hardware_key << "\n";
  } else if (!measure.empty()) {
    // A measure worker owns its cores: pinned before any thread starts, so all inherit it.
    absl::StatusOr<kiln::Target> host = kiln::ResolveTarget("host");
    if (!host.ok()) return SetupFailure(host.status());
    absl::StatusOr<std::vector<int>> pinned = kiln::tuning::PinToCores(cores, core_offset);
    if (!pinned.ok()) return SetupFailure(pinned.status());
    const kiln::tuning::HardwareInfo hw = kiln::tuning::DetectCpuHardware(*host, cores);
    options.measure_hardware_key = hw.Key();
    options.measure_device_name = hw.device;
    options.measure_cores = cores;
    options.slots = 1;
    std::cerr << "kiln-worker: measure worker on cores " << absl::StrJoin(*pinned, ",")
              << ", hardware key " << options.measure_hardware_key << "\n";
  }

  // Signals go to one thread (blocked everywhere else, including gRPC's threads created later).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Never destroyed: the signal thread may still use it while main returns.
  auto* worker = new kiln::workers::Worker(options);
  std::thread([worker, signals, grace_s] {
    int sig = 0;
    sigwait(&signals, &sig);
    std::cerr << "kiln-worker: " << strsignal(sig) << ", shutting down\n";
    worker->Shutdown();
    // A compile cannot be interrupted: give it `grace_s`, then leave (kilnd requeues the job).
    timespec timeout{grace_s, 0};
    sigtimedwait(&signals, nullptr, &timeout);
    worker->RemoveScratchDir();
    _exit(0);
  }).detach();

  absl::Status status = worker->Run();
  worker->RemoveScratchDir();
  if (!status.ok()) {
    std::cerr << "kiln-worker: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
