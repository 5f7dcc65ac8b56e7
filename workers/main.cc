// kiln-worker: a compile worker process (or with --measure cpu|cuda:N, a measure worker). Connects
// to kilnd's WorkerHub and runs what it is given until SIGTERM/SIGINT (exit 0) or until kilnd stays
// unreachable too long (exit 1).
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler_core/codegen/llvm/codegen.h"
#include "compiler_core/runtime/cuda/cuda_driver.h"
#include "compiler_core/tuning/hardware.h"
#include "compiler_core/tuning/measure.h"
#include "server/child_main.h"
#include "workers/compile_task.h"
#include "workers/tune_tasks.h"
#include "workers/worker.h"

namespace {

constexpr char kUsage[] =
    "usage: kiln-worker --connect HOST:PORT [--slots N] [--id NAME] [--give-up-after-s S]\n"
    "                   [--grace-s S]\n"
    "       kiln-worker --connect HOST:PORT --measure cpu [--cores N] [--core-offset K] ...\n"
    "       kiln-worker --connect HOST:PORT --measure cuda:N ...\n"
    "  --connect        kilnd's address (required): its --worker-listen address when it has one\n"
    "  --task-memory-bytes B  address-space limit of each compile's child (default 16 GiB)\n"
    "  --task-cpu-seconds S   CPU-time limit of each compile's child (default 1800)\n"
    "  --tls-ca FILE    PEM CA that verifies kilnd's certificate (turns TLS on)\n"
    "  --tls-server-name NAME  name to check kilnd's certificate against (default: the host)\n"
    "  --tls-cert FILE --tls-key FILE  a worker client certificate (kilnd --tls-client-ca)\n"
    "  --token-file FILE  file holding the bearer token (role worker) alone; else KILN_TOKEN\n"
    "  --slots          tasks compiled at once (default 1)\n"
    "  --id             worker name sent at registration (default kiln-worker-<pid>)\n"
    "  --give-up-after-s exit 1 after this long without reaching kilnd (default 300)\n"
    "  --grace-s        after SIGTERM, wait this long for a running compile (default 5)\n"
    "  --measure cpu    be a measure worker for this machine's CPU: measures tune candidates,\n"
    "                   one batch at a time, and compiles nothing\n"
    "  --measure cuda:N be a measure worker for GPU N (through the NVIDIA driver): times\n"
    "                   candidates with CUDA events, each in a child process with its own\n"
    "                   context, for code of that GPU's SM (cuda:sm_80 .. cuda:sm_90)\n"
    "  --cores N        cores the measure worker owns and measures with (default 1)\n"
    "  --core-offset K  pin to N cores starting at the K-th this process may use (default 0)\n"
    "  --inject-fault wrong-outputs  (tests) every built candidate computes wrong outputs\n";

int Usage(const std::string& error) {
  std::cerr << "kiln-worker: " << error << "\n" << kUsage;
  return 2;
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
  bool measure = false;
  int cores = 1;
  int core_offset = 0;
  int gpu = -1;  // --measure cuda:N
  std::string tls_ca, tls_server_name, tls_cert, tls_key, token_file;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    if (flag == "-h" || flag == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (auto eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Usage("flag " + flag + " needs a value");
    }
    int n = 0;
    if (flag == "--connect") {
      options.server = value;
    } else if (flag == "--id") {
      options.id = value;
    } else if (flag == "--slots") {
      if (!absl::SimpleAtoi(value, &n) || n < 1 || n > 1024) return Usage("--slots wants 1..1024");
      options.slots = n;
    } else if (flag == "--give-up-after-s") {
      if (!absl::SimpleAtoi(value, &n) || n < 1)
        return Usage("--give-up-after-s wants a positive integer");
      options.give_up_after_ms = int64_t{n} * 1000;
    } else if (flag == "--grace-s") {
      if (!absl::SimpleAtoi(value, &n) || n < 0) return Usage("--grace-s wants an integer >= 0");
      grace_s = n;
    } else if (flag == "--measure") {
      if (value != "cpu") {
        absl::StatusOr<int> ordinal = kiln::runtime::cuda::ParseCudaDevice(value);
        if (!ordinal.ok()) {
          return Usage("--measure wants cpu or cuda:N, not '" + value + "'");
        }
        gpu = *ordinal;
      }
      measure = true;
    } else if (flag == "--cores") {
      if (!absl::SimpleAtoi(value, &n) || n < 1) return Usage("--cores wants a positive integer");
      cores = n;
    } else if (flag == "--core-offset") {
      if (!absl::SimpleAtoi(value, &n) || n < 0) return Usage("--core-offset wants an integer >= 0");
      core_offset = n;
    } else if (flag == "--task-memory-bytes") {
      int64_t bytes = 0;
      if (!absl::SimpleAtoi(value, &bytes) || bytes < 0) {
        return Usage("--task-memory-bytes wants an integer >= 0");
      }
      options.compile_sandbox.limits.max_memory_bytes = bytes;
    } else if (flag == "--task-cpu-seconds") {
      if (!absl::SimpleAtoi(value, &n) || n < 0) return Usage("--task-cpu-seconds wants >= 0");
      options.compile_sandbox.limits.max_cpu_seconds = n;
    } else if (flag == "--tls-ca") {
      tls_ca = value;
    } else if (flag == "--tls-server-name") {
      tls_server_name = value;
    } else if (flag == "--tls-cert") {
      tls_cert = value;
    } else if (flag == "--tls-key") {
      tls_key = value;
    } else if (flag == "--token-file") {
      token_file = value;
    } else if (flag == "--inject-fault") {
      if (value != "wrong-outputs") return Usage("--inject-fault knows only wrong-outputs");
      options.build_faults.wrong_outputs = true;
    } else {
      return Usage("unknown flag " + flag);
    }
  }
  if (options.server.empty()) return Usage("missing --connect HOST:PORT");
  absl::StatusOr<kiln::client::ChannelSecurity> security =
      kiln::client::LoadChannelSecurity(tls_ca, token_file, tls_server_name, tls_cert, tls_key);
  if (!security.ok()) return Usage(std::string(security.status().message()));
  options.security = *std::move(security);
  if (!measure && (cores != 1 || core_offset != 0)) {
    return Usage("--cores and --core-offset go with --measure cpu");
  }
  if (measure && gpu >= 0) {
    // A GPU measure worker measures code for its own SM.
    absl::StatusOr<kiln::runtime::cuda::CudaDeviceInfo> device =
        kiln::tuning::QueryCudaDeviceInChild(gpu);
    if (!device.ok()) return Usage(std::string(device.status().message()));
    absl::StatusOr<kiln::Target> target =
        kiln::ParseCudaTarget(absl::StrCat("cuda:sm_", device->sm));
    if (!target.ok()) return Usage(std::string(target.status().message()));
    absl::StatusOr<kiln::tuning::HardwareInfo> hw = kiln::tuning::DetectCudaHardware(*target, gpu);
    if (!hw.ok()) return Usage(std::string(hw.status().message()));
    options.measure_hardware_key = hw->Key();
    options.measure_device_name = hw->device;
    options.measure_device_kind = "cuda";
    options.measure_device_ordinal = gpu;
    options.slots = 1;
    std::cerr << "kiln-worker: measure worker on cuda:" << gpu << ", hardware key "
              << options.measure_hardware_key << "\n";
  } else if (measure) {
    // A measure worker owns its cores: pinned before any thread starts, so all inherit it.
    absl::StatusOr<kiln::Target> host = kiln::ResolveTarget("host");
    if (!host.ok()) return Usage(std::string(host.status().message()));
    absl::StatusOr<std::vector<int>> pinned = kiln::tuning::PinToCores(cores, core_offset);
    if (!pinned.ok()) return Usage(std::string(pinned.status().message()));
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
