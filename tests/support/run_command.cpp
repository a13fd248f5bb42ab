// Shell command runner for CLI tests.
#include "run_command.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ralp::testing {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

CommandResult run_command(const std::string& command) {
  char out_name[] = "/tmp/ralp-test-out-XXXXXX";
  char err_name[] = "/tmp/ralp-test-err-XXXXXX";
  const int out_fd = mkstemp(out_name);
  const int err_fd = mkstemp(err_name);
  close(out_fd);
  close(err_fd);
  const std::string full = command + " >" + out_name + " 2>" + err_name;
  const int raw = std::system(full.c_str());
  CommandResult result;
  if (raw != -1 && WIFEXITED(raw)) result.status = WEXITSTATUS(raw);
  result.out = read_file(out_name);
  result.err = read_file(err_name);
  unlink(out_name);
  unlink(err_name);
  return result;
}

std::string ralp_binary() { return std::string(RALP_BINARY_DIR) + "/ralp"; }

std::vector<float> read_floats(const std::filesystem::path& file) {
  const std::string bytes = read_file(file.string());
  std::vector<float> out(bytes.size() / sizeof(float));
  std::copy(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(out.size() * sizeof(float)),
            reinterpret_cast<char*>(out.data()));
  return out;
}

TempDir::TempDir(const std::string& tag) {
  std::string name = "/tmp/ralp-" + tag + "-XXXXXX";
  if (mkdtemp(name.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + name);
  path = name;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

}  // namespace ralp::testing
