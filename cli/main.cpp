// ralp: predicts, and checks against real runs, CNN training step times under parameter-server,
// RALP, ring all-reduce and hybrid strategies. This file turns subcommands into exit statuses.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.hpp"
#include "ralp/core/json_input.hpp"
#include "ralp/core/layer.hpp"

namespace ralp::cli {

void write_output(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text;
    std::cout.flush();
    return;
  }
  // Write beside the target and rename, so that a failed run never leaves half a file.
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::remove(temporary.c_str());
      throw std::runtime_error("cannot write " + path);
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw std::runtime_error("cannot write " + path);
  }
}

void check_output_path(const std::string& option, const std::string& path) {
  if (path.empty() || path == "-") return;
  std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (folder.empty()) folder = ".";
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec)) {
    throw ralp::InputError(option, "", "names " + path + ", whose folder " + folder.string() +
                                           " does not exist");
  }
  if (access(folder.c_str(), W_OK) != 0) {
    throw ralp::InputError(option, "", "names " + path + ", whose folder " + folder.string() +
                                           " is not writable");
  }
}

}  // namespace ralp::cli

int main(int argc, char** argv) {
  using namespace ralp::cli;
  CLI::App app{
      "ralp predicts how long a CNN training step takes on a cluster under a parameter server "
      "(ps), Resource-Aware Layer Placement (ralp), ring all-reduce (allreduce) and a hybrid, "
      "with a SimGrid simulation driven by measured kernel times, and checks itself on real "
      "runs.",
      "ralp"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("ralp 0.1.0"));
  Action action;
  add_model_commands(app, action);
  add_scenario_commands(app, action);
  add_profile_commands(app, action);
  add_simulate_command(app, action);
  add_calibrate_command(app, action);
  add_cluster_command(app, action);
  add_place_command(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  } catch (const ralp::InputError& e) {
    std::cerr << "error: " << e.what() << '\n';
    return kExitBadInput;
  }
  if (!action) return kExitBadInput;
  try {
    return action();
  } catch (const ralp::InputError& e) {
    std::cerr << "error: " << e.what() << '\n';
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return kExitFailure;
  }
}
