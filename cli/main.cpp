// ralp: predicts, and checks against real runs, CNN training step times under parameter-server,
// RALP, ring all-reduce and hybrid strategies. This file turns subcommands into exit statuses.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "ralp/core/json_input.hpp"
#include "ralp/model/layer.hpp"

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

namespace {

// Lists each subcommand on one line, the first line of its description without its full stop;
// the rest shows in the subcommand's own --help, which prints the whole description.
class OneLineSubcommands : public CLI::Formatter {
 public:
  std::string make_subcommand(const CLI::App* sub) const override {
    const std::string& description = sub->get_description();
    std::string summary = description.substr(0, description.find('\n'));
    if (summary.ends_with('.')) summary.pop_back();
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true), summary, column_width_);
    return out.str();
  }
};

// CLI11 answers a mistyped subcommand with "A subcommand is required"; this names the word, the
// subcommands that exist there and the one meant. Throws InputError for a word where a
// subcommand is required that names none.
void check_subcommands(const CLI::App& app, int argc, char** argv) {
  const CLI::App* current = &app;
  std::string command = app.get_name();
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word.starts_with("-")) return;  // options come after the subcommand they belong to
    const auto subcommands = current->get_subcommands([](const CLI::App*) { return true; });
    if (subcommands.empty()) return;  // a leaf's own arguments
    std::vector<std::string> names;
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : subcommands) {
      names.push_back(sub->get_name());
      if (sub->get_name() == word) next = sub;
    }
    if (next == nullptr) {
      if (current->get_require_subcommand_min() == 0) return;
      std::string list;
      for (const auto& name : names) list += (list.empty() ? "" : ", ") + name;
      throw ralp::InputError("", "\"" + std::string(word) + "\"",
                             "is not a subcommand of " + command + ", expected one of: " + list +
                                 ralp::did_you_mean(word, names));
    }
    current = next;
    command += " " + next->get_name();
  }
}

// CLI11 answers a mistyped option with "The following arguments were not expected"; this names
// the option, the command it is not an option of and the one meant. Throws InputError.
void check_options(const CLI::App& app, int argc, char** argv) {
  const CLI::App* current = &app;
  std::string command = app.get_name();
  int i = 1;
  for (; i < argc && !std::string_view(argv[i]).starts_with("-"); ++i) {
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : current->get_subcommands([](const CLI::App*) { return true; })) {
      if (sub->get_name() == argv[i]) next = sub;
    }
    if (next == nullptr) break;  // the leaf's positional arguments
    current = next;
    command += " " + next->get_name();
  }
  if (current->get_allow_extras()) return;  // a subcommand this build leaves out takes anything
  std::vector<std::string> names;
  for (const CLI::Option* option : current->get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  if (current == &app) names.emplace_back("--version");
  for (; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word == "--") return;  // what follows is not options
    if (!word.starts_with("--")) continue;
    const std::string name(word.substr(0, word.find('=')));
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    throw ralp::InputError("", name,
                           "is not an option of " + command + ralp::did_you_mean(name, names) +
                               "; expected one that " + command + " --help lists");
  }
}

}  // namespace

}  // namespace ralp::cli

int main(int argc, char** argv) {
  using namespace ralp::cli;
  CLI::App app{
      "ralp predicts CNN training step times under ps, ralp, allreduce and hybrid strategies.\n"
      "It simulates each step in SimGrid with measured kernel times, searches where to cut the\n"
      "model, and checks itself on real runs. Each subcommand's --help says more.",
      "ralp"};
  app.formatter(std::make_shared<OneLineSubcommands>());
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("ralp ") + RALP_VERSION);
  Action action;
  add_model_commands(app, action);
  add_scenario_commands(app, action);
  add_profile_commands(app, action);
  add_transport_commands(app, action);
  add_simulate_command(app, action);
  add_calibrate_command(app, action);
  add_cluster_command(app, action);
#ifdef RALP_HAVE_CLUSTER
  add_link_probe_command(app, action);
#endif
  add_validate_command(app, action);
  add_place_command(app, action);
  add_sweep_command(app, action);
  add_report_command(app, action);
  add_published_command(app, action);

  try {
    check_subcommands(app, argc, argv);
    check_options(app, argc, argv);
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
