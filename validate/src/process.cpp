// Child processes with deadlines, captured output and signal-safe interruption.
#include "ralp/validate/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace ralp::validate {
namespace {

volatile sig_atomic_t g_signal = 0;
struct sigaction g_previous[3];
struct sigaction g_previous_pipe;
constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
// After SIGTERM, how long a process group may take to exit before SIGKILL.
constexpr double kTermGraceS = 2.0;
constexpr int kPollMs = 50;
constexpr int kExitCannotExec = 127;

void on_signal(int signal) { g_signal = signal; }

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Sends SIGTERM to the group, then SIGKILL when it has not exited within the grace time; reaps
// the leader and returns its wait status.
int stop_group(pid_t pid) {
  kill(-pid, SIGTERM);
  const double deadline = now_s() + kTermGraceS;
  int status = 0;
  while (now_s() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      kill(-pid, SIGKILL);  // stragglers of the group
      return status;
    }
    usleep(kPollMs * 1000);
  }
  kill(-pid, SIGKILL);
  waitpid(pid, &status, 0);
  return status;
}

int exit_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

// This process's environment, with `overrides` replacing or adding variables.
std::vector<std::string> environment_with(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    if (!overrides.contains(key)) env_strings.push_back(entry);
  }
  for (const auto& [key, value] : overrides) env_strings.push_back(key + "=" + value);
  return env_strings;
}

// In the forked child: its own process group, stdout and stderr into `out`, stdin from /dev/null,
// then the command; it exits kExitCannotExec when the command cannot start.
[[noreturn]] void exec_child(std::vector<char*>& args, std::vector<char*>& envp, int out) {
  setpgid(0, 0);
  // The child's own signal dispositions are the defaults, whatever the parent installed.
  for (const int s : kSignals) signal(s, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  dup2(out, STDOUT_FILENO);
  dup2(out, STDERR_FILENO);
  const int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
  execvpe(args[0], args.data(), envp.data());
  _exit(kExitCannotExec);
}

}  // namespace

Interrupted::Interrupted(int signal)
    : std::runtime_error(std::string("interrupted by ") + strsignal(signal)), signal_(signal) {}

InterruptGuard::InterruptGuard() {
  g_signal = 0;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &action, &g_previous[i]);
  // A closed stdout or stderr (`| head`) must not kill the run before it cleans up.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &g_previous_pipe);
}

InterruptGuard::~InterruptGuard() {
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &g_previous[i], nullptr);
  sigaction(SIGPIPE, &g_previous_pipe, nullptr);
}

void check_interrupted() {
  if (g_signal != 0) throw Interrupted(g_signal);
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (!options.uninterruptible) check_interrupted();
  if (argv.empty()) throw std::runtime_error("run_process: empty command");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + std::string(strerror(errno)));
  const std::vector<std::string> env_strings = environment_with(options.env);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw std::runtime_error("fork: " + std::string(strerror(errno)));
  }
  if (pid == 0) exec_child(args, envp, fds[1]);
  setpgid(pid, pid);  // also here, so that the group exists before any kill below
  close(fds[1]);

  ProcessResult result;
  std::string pending;
  const double deadline = options.timeout_s > 0.0 ? now_s() + options.timeout_s : 0.0;
  bool open_pipe = true;
  int wait_status = 0;
  bool reaped = false;
  auto flush_lines = [&](bool all) {
    size_t newline;
    while ((newline = pending.find('\n')) != std::string::npos) {
      if (options.on_line) options.on_line(pending.substr(0, newline));
      pending.erase(0, newline + 1);
    }
    if (all && !pending.empty()) {
      if (options.on_line) options.on_line(pending);
      pending.clear();
    }
  };
  while (true) {
    if (g_signal != 0 && !options.uninterruptible) {
      stop_group(pid);
      close(fds[0]);
      throw Interrupted(g_signal);
    }
    if (deadline > 0.0 && now_s() > deadline) {
      wait_status = stop_group(pid);
      reaped = true;
      result.timed_out = true;
      break;
    }
    if (open_pipe) {
      pollfd p{fds[0], POLLIN, 0};
      const int ready = poll(&p, 1, kPollMs);
      if (ready > 0) {
        char buffer[4096];
        const ssize_t n = read(fds[0], buffer, sizeof buffer);
        if (n > 0) {
          result.output.append(buffer, static_cast<size_t>(n));
          pending.append(buffer, static_cast<size_t>(n));
          flush_lines(false);
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          open_pipe = false;
        }
      }
    } else {
      usleep(kPollMs * 1000);
    }
    if (waitpid(pid, &wait_status, WNOHANG) == pid) {
      reaped = true;
      // Drain what is left; a grandchild holding the pipe open must not keep us here.
      if (open_pipe) {
        fcntl(fds[0], F_SETFL, O_NONBLOCK);
        char buffer[4096];
        ssize_t n;
        while ((n = read(fds[0], buffer, sizeof buffer)) > 0) {
          result.output.append(buffer, static_cast<size_t>(n));
          pending.append(buffer, static_cast<size_t>(n));
        }
      }
      kill(-pid, SIGKILL);  // anything the leader left behind in its group
      break;
    }
  }
  if (!reaped) waitpid(pid, &wait_status, 0);
  close(fds[0]);
  flush_lines(true);
  result.status = exit_status(wait_status);
  return result;
}

std::string shell_quote(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    const bool plain = !a.empty() && a.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789_-./=:,@+%") == std::string::npos;
    if (plain) {
      s += a;
    } else {
      s += '\'';
      for (const char c : a) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
      s += '\'';
    }
  }
  return s;
}

std::string last_lines(const std::string& text, size_t lines) {
  size_t end = text.size();
  while (end > 0 && text[end - 1] == '\n') --end;
  size_t start = end;
  size_t count = 0;
  while (start > 0) {
    if (text[start - 1] == '\n' && ++count == lines) break;
    --start;
  }
  return text.substr(start, end - start);
}

std::string read_proc_file(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

}  // namespace ralp::validate
