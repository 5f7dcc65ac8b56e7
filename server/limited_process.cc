#include "server/limited_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace kiln::server {
namespace {

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

std::string ProcessOutcome::Describe() const {
  if (timed_out) return "ran past its time limit and was killed";
  if (signal != 0) {
    return absl::StrCat("was killed by signal ", signal, " (", strsignal(signal), ")");
  }
  return absl::StrCat("exited with status ", exit_code);
}

bool ProcessOutcome::HitLimit() const {
  return timed_out || signal == SIGXCPU || signal == SIGKILL;
}

std::string ProcessOutcome::Failure(const std::string& what, const ProcessLimits& limits) const {
  return absl::StrCat(what, " ", Describe(),
                      HitLimit() ? absl::StrCat(" (limits: ", limits.max_memory_bytes >> 20,
                                                " MiB, ", limits.max_cpu_seconds, " s of CPU, ",
                                                absl::FormatDuration(limits.timeout), ")")
                                 : "",
                      err_tail.empty() ? "" : absl::StrCat("; it said: ", err_tail));
}

absl::StatusOr<ProcessOutcome> RunLimitedProcess(const std::vector<std::string>& argv,
                                                 const std::string& input,
                                                 const ProcessLimits& limits) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return absl::InternalError("pipe failed");
  }
  if (::pipe2(err, O_CLOEXEC) != 0) {
    for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    return absl::InternalError("pipe failed");
  }
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) ::close(fd);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    if (kAddressSpaceLimitApplies && limits.max_memory_bytes > 0) {
      rlimit as{static_cast<rlim_t>(limits.max_memory_bytes),
                static_cast<rlim_t>(limits.max_memory_bytes)};
      ::setrlimit(RLIMIT_AS, &as);
    }
    if (limits.max_cpu_seconds > 0) {
      rlimit cpu{static_cast<rlim_t>(limits.max_cpu_seconds),
                 static_cast<rlim_t>(limits.max_cpu_seconds + 1)};
      ::setrlimit(RLIMIT_CPU, &cpu);
    }
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  int to_child = in[1], from_out = out[0], from_err = err[0];
  ::fcntl(to_child, F_SETFL, O_NONBLOCK);
  ProcessOutcome outcome;
  size_t written = 0;
  if (input.empty()) CloseFd(to_child);
  const absl::Time deadline = absl::Now() + limits.timeout;
  bool too_much_output = false;
  char buffer[1 << 16];
  while (from_out >= 0 || from_err >= 0) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      outcome.timed_out = true;
      break;
    }
    pollfd fds[3];
    int n = 0;
    if (to_child >= 0) fds[n++] = {to_child, POLLOUT, 0};
    if (from_out >= 0) fds[n++] = {from_out, POLLIN, 0};
    if (from_err >= 0) fds[n++] = {from_err, POLLIN, 0};
    int ready = ::poll(
        fds, n, static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == to_child) {
        ssize_t w = ::write(to_child, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN && errno != EINTR) CloseFd(to_child);  // EPIPE: it left
        if (written == input.size()) CloseFd(to_child);
        continue;
      }
      ssize_t r = ::read(fds[i].fd, buffer, sizeof(buffer));
      if (r <= 0) {
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        CloseFd(fds[i].fd == from_out ? from_out : from_err);
        continue;
      }
      if (fds[i].fd == from_out) {
        if (static_cast<int64_t>(outcome.out.size()) + r > limits.max_output_bytes) {
          too_much_output = true;
          break;
        }
        outcome.out.append(buffer, static_cast<size_t>(r));
      } else {
        outcome.err_tail.append(buffer, static_cast<size_t>(r));
        if (outcome.err_tail.size() > 4096) {
          outcome.err_tail.erase(0, outcome.err_tail.size() - 4096);
        }
      }
    }
    if (too_much_output) break;
  }
  for (int* fd : {&to_child, &from_out, &from_err}) CloseFd(*fd);
  if (outcome.timed_out || too_much_output) ::kill(pid, SIGKILL);
  int status = 0;
  // The child may have closed its output and still run: wait until the deadline, no longer.
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (done == 0 && absl::Now() > deadline) {
      outcome.timed_out = true;
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    ::usleep(2000);
  }
  if (WIFEXITED(status)) {
    outcome.exit_code = too_much_output ? -1 : WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    outcome.signal = WTERMSIG(status);
  }
  if (too_much_output) {
    outcome.err_tail = absl::StrCat("more than ", limits.max_output_bytes, " bytes of output");
  }
  return outcome;
}

}  // namespace kiln::server
