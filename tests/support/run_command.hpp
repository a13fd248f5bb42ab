// Runs a command line in a shell for CLI tests and captures its exit status, stdout and stderr.
#pragma once

#include <string>

namespace ralp::testing {

struct CommandResult {
  int status = -1;  // exit status, or -1 when the command did not exit normally
  std::string out;
  std::string err;
};

// `command` is passed to /bin/sh -c; its stdout and stderr go to temporary files.
CommandResult run_command(const std::string& command);

// Path of the built ralp executable.
std::string ralp_binary();

// Reads a whole file; empty when it cannot be read.
std::string read_file(const std::string& path);

}  // namespace ralp::testing
