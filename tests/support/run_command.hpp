// Support for tests that run the ralp executable: a command line in a shell with its exit
// status, stdout and stderr captured, temporary folders, and the files such runs write.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

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

// A file of raw float32 values (the cluster's parameter dumps).
std::vector<float> read_floats(const std::filesystem::path& file);

// A fresh folder, /tmp/ralp-TAG-XXXXXX, removed with everything in it when the object goes.
struct TempDir {
  explicit TempDir(const std::string& tag);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // A path inside it, as a string for command lines.
  [[nodiscard]] std::string operator/(const std::string& name) const { return (path / name).string(); }
  std::filesystem::path path;
};

}  // namespace ralp::testing
