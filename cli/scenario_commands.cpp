// `ralp scenario check`, `ralp profile list|show` and `ralp transport list|show`.
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "ralp/devices/transport.hpp"
#include "ralp/spec/memory_plan.hpp"
#include "ralp/spec/scenario.hpp"
#include "ralp/spec/scenario_overrides.hpp"
#include "ralp/spec/simulation_limits.hpp"

namespace ralp::cli {
namespace {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

void add_scenario_commands(CLI::App& app, Action& action) {
  auto* scenario =
      app.add_subcommand("scenario", "Validate scenario files")->require_subcommand(1);
  struct CheckOptions {
    std::vector<std::string> files;
    bool json = false;
  };
  auto options = std::make_shared<CheckOptions>();
  auto* check = scenario->add_subcommand(
      "check", "Validate scenarios; print a summary, or the scenario with defaults filled in");
  check->add_option("files", options->files, "Scenario files (JSON)")->required();
  check->add_flag("--json", options->json, "Print each scenario with every default filled in");
  check->callback([&action, options] {
    action = [options] {
      for (const auto& file : options->files) {
        const Scenario s = load_scenario(file, {});
        for (const std::string& line : scenario_warnings(s)) std::cerr << line << '\n';
        check_simulation_limits(s);
        if (options->json) {
          std::cout << scenario_to_json(s).dump(2) << '\n';
          continue;
        }
        std::string strategies;
        for (const auto& st : s.strategies) {
          strategies += (strategies.empty() ? "" : ", ") + st.label;
          if ((st.kind == StrategyKind::ralp || st.kind == StrategyKind::hybrid) && !st.cut) {
            strategies += " (cut auto)";
          } else if (st.cut && st.label != default_strategy_label(to_string(st.kind), st.cut)) {
            strategies += " (cut " + *st.cut + ")";
          }
        }
        const bool servers = s.parameter_servers > 0;
        std::cout << "ok: " << file << ": " << s.name << ": " << s.model.name() << ", "
                  << s.workers << (s.workers == 1 ? " worker" : " workers") << " x batch "
                  << s.batch_per_worker << ", "
                  << (servers ? std::to_string(s.parameter_servers) + " PS" : "no PS") << ", "
                  << s.worker_device.name << (s.workers == 1 ? " worker, " : " workers, ")
                  << (servers ? s.ps_device.name + " PS, " : "") << to_string(s.platform.kind)
                  << " platform; strategies: " << strategies << '\n';
      }
      return kExitOk;
    };
  });
}

void add_profile_commands(CLI::App& app, Action& action) {
  auto* profile =
      app.add_subcommand("profile", "List and show device profiles")->require_subcommand(1);
  auto* list = profile->add_subcommand("list", "List the device profiles on the search path");
  list->callback([&action] {
    action = [] {
      TextTable table({{"profile", TextTable::Align::left},
                       {"kind", TextTable::Align::left},
                       {"source", TextTable::Align::left},
                       {"peak FP32"},
                       {"memory"},
                       {"measured shapes"},
                       {"description", TextTable::Align::left}});
      for (const auto& name : available_profiles()) {
        const DeviceProfile p = load_device_profile(*find_profile(name));
        table.add_row({name, std::string(to_string(p.kind)), std::string(to_string(p.source)),
                       format_flops_rate(p.peak_flops),
                       format_bytes(Bytes(p.memory_bandwidth.value())) + "/s",
                       std::to_string(p.measured.size()), p.description});
      }
      table.print(std::cout);
      return kExitOk;
    };
  });
  auto name = std::make_shared<std::string>();
  auto* show = profile->add_subcommand("show", "Print a profile as JSON, defaults filled in");
  show->add_option("profile", *name, "Profile name or file")->required();
  show->callback([&action, name] {
    action = [name] {
      const auto path = find_profile(*name);
      const DeviceProfile p = path ? load_device_profile(*path) : load_device_profile(*name);
      std::cout << device_profile_to_json(p).dump(2) << '\n';
      return kExitOk;
    };
  });
}

void add_transport_commands(CLI::App& app, Action& action) {
  auto* transport = app.add_subcommand(
      "transport",
      "List and show transports: how a framework moves a strategy's bytes");
  transport->require_subcommand(1);
  auto json = std::make_shared<bool>(false);
  auto* list = transport->add_subcommand(
      "list", "List the transports with their parameters: CPU time per message and per byte at "
              "each end (on the host's CPU for a PS on a CPU, else on a core of its own per "
              "connection) and the share of a link one connection between nodes reaches");
  list->add_flag("--json", *json, "Print the transports as a JSON array");
  list->callback([&action, json] {
    action = [json] {
      std::vector<Transport> transports;
      for (const auto& name : available_transports()) transports.push_back(*find_transport(name));
      if (*json) {
        Json out = Json::array();
        for (const Transport& t : transports) out.push_back(transport_to_json(t));
        std::cout << out.dump(2) << '\n';
        return kExitOk;
      }
      TextTable table({{"transport", TextTable::Align::left},
                       {"us/message"},
                       {"ns/byte"},
                       {"link share"},
                       {"fitted", TextTable::Align::left},
                       {"what it is", TextTable::Align::left}});
      for (const Transport& t : transports) {
        std::string fitted;
        for (const auto& f : t.fitted) fitted += (fitted.empty() ? "" : ",") + f;
        table.add_row({t.name, fixed(t.message_s * 1e6, 1), fixed(t.s_per_byte * 1e9, 3),
                       fixed(t.link_share, 3), fitted.empty() ? "-" : fitted, t.summary});
      }
      table.print(std::cout);
      for (const Transport& t : transports) std::cout << t.name << ": " << t.source << '\n';
      return kExitOk;
    };
  });
  auto name = std::make_shared<std::string>();
  auto* show = transport->add_subcommand("show", "Print one transport as JSON");
  show->add_option("transport", *name, "Transport name (ralp transport list)")->required();
  show->callback([&action, name] {
    action = [name] {
      const auto t = find_transport(*name);
      if (!t) {
        throw InputError("", "transport", "is \"" + *name + "\", expected one of: " +
                                              join_names(available_transports()));
      }
      std::cout << transport_to_json(*t).dump(2) << '\n';
      return kExitOk;
    };
  });
}

}  // namespace ralp::cli
