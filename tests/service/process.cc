// fork/exec and bounded waits for the service tests.
#include "tests/service/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace kiln::testing {

Process Process::Spawn(const std::vector<std::string>& argv, const std::string& out_path,
                       const std::string& err_path) {
  Process p;
  std::vector<std::string> args = argv;
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out >= 0) dup2(out, 1);
    if (err >= 0) dup2(err, 2);
    int null_in = open("/dev/null", O_RDONLY);
    if (null_in >= 0) dup2(null_in, 0);
    // Unblock what the parent may have blocked (gtest does not, but be safe).
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(cargs[0], cargs.data());
    _exit(127);
  }
  p.pid_ = pid;
  return p;
}

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    pid_ = other.pid_;
    status_ = other.status_;
    other.pid_ = -1;
    other.status_.reset();
  }
  return *this;
}

Process::~Process() {
  if (pid_ > 0 && !status_) {
    kill(pid_, SIGKILL);
    Wait(std::chrono::seconds(10));
  }
}

bool Process::running() {
  if (pid_ <= 0 || status_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) status_ = status;
  return r == 0;
}

std::optional<int> Process::Wait(std::chrono::milliseconds timeout) {
  if (status_) return status_;
  if (pid_ <= 0) return std::nullopt;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  // Polls every 20 ms up to the deadline.
  while (std::chrono::steady_clock::now() < deadline) {
    if (!running()) return status_;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!running()) return status_;
  return std::nullopt;
}

void Process::Signal(int sig) {
  if (pid_ > 0 && !status_) kill(pid_, sig);
}

int Process::Stop(std::chrono::milliseconds grace) {
  Signal(SIGTERM);
  if (auto s = Wait(grace)) return *s;
  Signal(SIGKILL);
  return Wait(std::chrono::seconds(10)).value_or(-1);
}

RunResult RunCommand(const std::vector<std::string>& argv, const std::string& scratch_dir,
              std::chrono::milliseconds timeout) {
  static std::atomic<int> counter{0};
  std::string base =
      scratch_dir + "/run-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  std::string out = base + ".out", err = base + ".err";
  Process p = Process::Spawn(argv, out, err);
  RunResult result;
  std::optional<int> status = p.Wait(timeout);
  if (!status) {
    result.timed_out = true;
    p.Signal(SIGKILL);
    status = p.Wait(std::chrono::seconds(10));
  }
  if (status && WIFEXITED(*status)) result.exit_code = WEXITSTATUS(*status);
  result.out = ReadFile(out);
  result.err = ReadFile(err);
  return result;
}

std::string HttpGet(int port, const std::string& path, const std::string& headers) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    timeval tv{/*tv_sec=*/10, /*tv_usec=*/0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n" + headers + "\r\n";
    (void)!write(fd, request.data(), request.size());
    shutdown(fd, SHUT_WR);
    char buf[8192];
    for (int i = 0; i < 10000; ++i) {
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n <= 0) break;
      response.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return response;
}

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
  return static_cast<bool>(f);
}

std::string JsonField(const std::string& json, const std::string& key) {
  std::string needle = "\"" + key + "\":";
  size_t at = json.find(needle);
  if (at == std::string::npos) return "";
  size_t i = at + needle.size();
  if (i < json.size() && json[i] == '"') {
    std::string value;
    for (++i; i < json.size() && json[i] != '"'; ++i) {
      if (json[i] == '\\' && i + 1 < json.size()) ++i;
      value += json[i];
    }
    return value;
  }
  size_t end = json.find_first_of(",}", i);
  return json.substr(i, end == std::string::npos ? std::string::npos : end - i);
}

std::string MakeTempDir(const std::string& prefix) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

}  // namespace kiln::testing
