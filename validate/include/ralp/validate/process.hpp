// Child processes for validation: a command run with a deadline in its own process group, its
// output captured, and Ctrl-C (SIGINT, SIGTERM, SIGHUP) turned into an Interrupted exception after
// the child is stopped, so that the caller's destructors remove what the run created.
#pragma once

#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace ralp::validate {

// Thrown by run_process (and check_interrupted) once a termination signal arrived.
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int signal);
  [[nodiscard]] int signal() const { return signal_; }

 private:
  int signal_;
};

// While alive, SIGINT, SIGTERM and SIGHUP only set a flag that run_process and
// check_interrupted look at, and SIGPIPE is ignored; the previous handlers come back on
// destruction.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
};

// Throws Interrupted when a termination signal arrived under an InterruptGuard.
void check_interrupted();

// A file under /proc of a process that may exit meanwhile (its stat, cmdline or environ): the
// bytes read, or what was read before the process went. Never throws for a vanished process,
// which std::ifstream does ("basic_filebuf::underflow error reading the file: No such process").
std::string read_proc_file(const std::string& path);

struct ProcessOptions {
  double timeout_s = 0.0;                     // 0: no deadline
  std::map<std::string, std::string> env;     // added to (or replacing in) the environment
  std::function<void(const std::string&)> on_line;  // each output line as it arrives
  // Runs to the end even after a termination signal: for clean-up commands.
  bool uninterruptible = false;
};

struct ProcessResult {
  int status = -1;         // exit status; 128 + signal when killed by a signal
  bool timed_out = false;  // stopped at the deadline
  std::string output;      // standard output and standard error, interleaved
};

// Runs argv[0] (searched on PATH) with its arguments in a new process group. At the deadline the
// group gets SIGTERM, then SIGKILL two seconds later. Throws Interrupted (after stopping the group
// the same way) when a termination signal arrives, std::runtime_error when it cannot start.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// The command line as a shell would read it, for messages and logs.
std::string shell_quote(const std::vector<std::string>& argv);

// The last `lines` lines of `text`.
std::string last_lines(const std::string& text, size_t lines);

}  // namespace ralp::validate
