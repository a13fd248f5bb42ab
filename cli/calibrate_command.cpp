// `ralp calibrate`: measures a model's layer shapes on this machine's kernels and writes a
// measured device profile, with progress and an ETA on stderr.
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "commands.hpp"
#include "ralp/calibrate/calibration.hpp"
#include "ralp/model/model_zoo.hpp"

namespace ralp::cli {
namespace {

constexpr const char* kCommand = "ralp calibrate";

struct CalibrateOptions {
  std::vector<std::string> models;
  std::string batches = "8";
  std::string device = "auto";
  int threads = 1;
  std::string out;
  std::string name;
  std::string precision = "fp32";
  std::string profile;  // the measured profile a non-FP32 section is added to
  int repetitions = 5;
  double min_time = 0.05;
  int model_steps = 0;
  double time_sharing = 2.0;
  bool no_end_to_end = false;
  uint64_t seed = 1;
};

std::vector<int64_t> parse_batches(const std::string& text, const std::string& option) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  const auto bad = [&] {
    return InputError(kCommand, option,
                      "is '" + text + "', expected a comma-separated list of integers >= 1");
  };
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      throw bad();
    }
    if (used != item.size() || value < 1 || value > (int64_t{1} << 20)) throw bad();
    out.push_back(value);
  }
  if (out.empty() || text.back() == ',') throw bad();
  return out;
}

// "vgg16" or "cifar_alexnet:8,32" (its own batch sizes).
calibrate::ModelRequest parse_model(const std::string& spec, const std::vector<int64_t>& batches) {
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  std::error_code ec;
  if (!zoo_model(name) && !std::filesystem::is_regular_file(name, ec)) {
    std::string names;
    for (const auto& entry : zoo_entries()) names += (names.empty() ? "" : ", ") + entry.name;
    throw InputError(kCommand, "--model",
                     "is '" + name + "', expected a zoo model (" + names + ") or a model file");
  }
  return {resolve_model(name),
          colon == std::string::npos ? batches : parse_batches(spec.substr(colon + 1), "--model")};
}

std::string format_duration(Seconds s) {
  const auto total = static_cast<long>(s.value() + 0.5);
  std::ostringstream out;
  if (total >= 60) out << total / 60 << "m";
  out << std::setw(total >= 60 ? 2 : 1) << std::setfill('0') << total % 60 << "s";
  return out.str();
}

void print_progress(const calibrate::ProgressUpdate& u) {
  std::ostringstream line;
  line << '[' << std::setw(4) << u.done << '/' << u.total << "] " << u.what << ": ";
  if (!u.error.empty()) {
    line << "skipped (" << u.error << ")";
  } else {
    line << format_seconds(u.median) << " (spread " << std::fixed << std::setprecision(1)
         << 100.0 * u.spread << "%)";
  }
  line << "  elapsed " << format_duration(u.elapsed) << ", ETA " << format_duration(u.remaining);
  std::cerr << line.str() << '\n';
}

// A word as a POSIX shell reads it back: unchanged when it holds only safe characters, else in
// single quotes.
std::string shell_word(const std::string& word) {
  const bool safe = !word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                                            "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                            "0123456789_-+=.,:/@%") ==
                                         std::string::npos;
  if (safe) return word;
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The command that runs: every option given, with its values as typed, in the order the options
// are declared (a repeated option keeps its order). Options left at their defaults are not
// named; the profile records the settings they took beside the command.
std::string given_command(const CLI::App& sub) {
  std::string command = kCommand;
  for (const CLI::Option* option : sub.get_options()) {
    if (option->count() == 0 || option->get_lnames().empty()) continue;
    const std::string name = "--" + option->get_lnames().front();
    if (option->get_expected_max() == 0) {  // a flag
      command += " " + name;
      continue;
    }
    for (const std::string& value : option->results()) command += " " + name + " " + shell_word(value);
  }
  return command;
}

// The precision asked for; anything but fp32 needs the measured profile it extends.
Precision parse_precision_option(const CalibrateOptions& o) {
  const auto precision = parse_precision(o.precision);
  if (!precision) {
    std::string names;
    for (const auto& n : precision_names()) names += (names.empty() ? "" : ", ") + n;
    throw InputError(kCommand, "--precision", "is '" + o.precision + "', expected one of " + names);
  }
  if (*precision != Precision::fp32 && o.profile.empty()) {
    throw InputError(kCommand, "--profile",
                     "is missing, expected the measured profile of this device that the " +
                         o.precision + " section is added to");
  }
  if (*precision == Precision::fp32 && !o.profile.empty()) {
    throw InputError(kCommand, "--profile",
                     "is given, expected it only with --precision other than fp32 (an FP32 "
                     "calibration writes a whole profile)");
  }
  return *precision;
}

// The backend, or exit 2 naming --precision when the device cannot compute in it.
kernels::BackendSelection select(const kernels::BackendOptions& options) {
  try {
    return kernels::select_backend(options);
  } catch (const std::invalid_argument& e) {
    if (options.precision == Precision::fp32) throw;
    throw InputError(kCommand, "--precision",
                     "is '" + std::string(to_string(options.precision)) +
                         "', expected a precision this device computes in: " + e.what());
  }
}

int run(const CalibrateOptions& o, const std::string& command) {
  if (o.models.empty()) throw InputError(kCommand, "--model", "is missing, expected a model");
  const std::vector<int64_t> batches = parse_batches(o.batches, "--batch");
  std::vector<calibrate::ModelRequest> requests;
  for (const auto& spec : o.models) requests.push_back(parse_model(spec, batches));
  kernels::BackendOptions backend_options;
  if (o.device == "auto") {
    backend_options.device = kernels::DeviceChoice::automatic;
  } else if (o.device == "cpu") {
    backend_options.device = kernels::DeviceChoice::cpu;
  } else if (o.device == "cuda") {
    backend_options.device = kernels::DeviceChoice::cuda;
  } else {
    throw InputError(kCommand, "--device", "is '" + o.device + "', expected one of auto, cpu, cuda");
  }
  if (o.threads < 1) {
    throw InputError(kCommand, "--threads", "is " + std::to_string(o.threads) + ", expected an integer >= 1");
  }
  if (o.repetitions < 1) {
    throw InputError(kCommand, "--repetitions",
                     "is " + std::to_string(o.repetitions) + ", expected an integer >= 1");
  }
  if (!(o.min_time > 0.0)) throw InputError(kCommand, "--min-time", "must be > 0 seconds");
  if (o.model_steps < 0) {
    throw InputError(kCommand, "--model-steps",
                     "is " + std::to_string(o.model_steps) + ", expected an integer >= 0");
  }
  if (!(o.time_sharing >= 0.0 && o.time_sharing <= 60.0)) {
    std::ostringstream given;
    given << o.time_sharing;
    throw InputError(kCommand, "--time-sharing", "is " + given.str() + ", expected 0 to 60 seconds");
  }
  backend_options.threads = o.threads;
  backend_options.precision = parse_precision_option(o);
  check_output_path("--out", o.out);
  std::optional<DeviceProfile> base;
  if (!o.profile.empty()) base = load_device_profile(o.profile);

  auto selection = select(backend_options);
  if (!selection.note.empty()) std::cerr << selection.note << '\n';
  kernels::Backend& backend = *selection.backend;
  if (base) {
    try {
      calibrate::check_same_host(*base, calibrate::profile_host(backend));
    } catch (const std::invalid_argument& e) {
      throw InputError(kCommand, "--profile", e.what());
    }
  }

  calibrate::CalibrationOptions options;
  options.repetitions = o.repetitions;
  options.min_time = o.min_time;
  options.end_to_end = !o.no_end_to_end;
  options.model_steps = o.model_steps;
  // Time sharing is the device's, measured with the FP32 profile.
  options.time_sharing_window = base ? 0.0 : o.time_sharing;
  options.seed = o.seed;
  options.name = o.name;
  options.command = command;
  const auto shapes = calibrate::distinct_shapes(requests);
  std::cerr << "calibrating on " << backend.device_name() << ": " << shapes.size()
            << " distinct layer shapes, " << o.repetitions << " repetitions of at least "
            << o.min_time << " s each\n";
  DeviceProfile profile = calibrate::calibrate(backend, requests, options, print_progress);
  if (base) {
    try {
      profile = calibrate::add_precision_section(*base, profile, backend_options.precision);
    } catch (const std::invalid_argument& e) {
      throw InputError(kCommand, "--profile", e.what());
    }
  }

  const std::string out = o.out.empty() ? profile.name + ".json" : o.out;
  write_output(out, device_profile_to_json(profile).dump(2) + "\n");
  std::cerr << "wrote " << (out == "-" ? "the profile" : out) << " (" << profile.measured.size()
            << " measured shapes)\n";
  if (base) {
    const auto checks = profile.provenance.find(o.precision + "_end_to_end");
    if (checks != profile.provenance.end()) std::cerr << "fidelity: " << checks->second << '\n';
    return kExitOk;
  }
  for (const EndToEndCheck& c : profile.end_to_end) {
    std::ostringstream line;
    line << std::showpos << std::fixed << std::setprecision(1)
         << 100.0 * calibrate::fidelity_error(c);
    std::cerr << "fidelity " << c.model << " batch " << c.batch << ": sum of layers "
              << format_seconds(c.sum_of_layers) << " vs end-to-end " << format_seconds(c.measured)
              << " (" << line.str() << "%)\n";
  }
  return kExitOk;
}

}  // namespace

void add_calibrate_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* sub = app.add_subcommand(
      "calibrate",
      "Time the layer shapes on this machine's kernels into a profile.\n"
      "Measure each distinct layer shape of models on this machine's kernels (forward, "
      "backward-data, backward-weight), the PS-side costs and an end-to-end forward+backward, "
      "and write a measured device profile with a fitted cost model");
  sub->add_option("--model", o->models,
                  "Zoo model or model file to measure; repeat for several. NAME:B1,B2 gives this "
                  "model its own batch sizes")
      ->required();
  sub->add_option("--batch", o->batches,
                  "Batch sizes, comma-separated (default 8); per image counts as in the model")
      ->capture_default_str();
  sub->add_option("--device", o->device,
                  "auto (CUDA when a device answers, else the CPU), cpu, or cuda (falls back to "
                  "the CPU with a note when no device answers)")
      ->capture_default_str();
  sub->add_option("--threads", o->threads, "CPU threads for the CPU kernels")->capture_default_str();
  sub->add_option("--precision", o->precision,
                  "Precision the kernels compute in: fp32 (a whole profile), or bf16, fp16, tf32 "
                  "(a section added to the FP32 profile given with --profile; the device must "
                  "run it: the CPU runs bf16 with AVX-512)")
      ->capture_default_str();
  sub->add_option("--profile", o->profile,
                  "With --precision other than fp32: the measured profile of this device (same "
                  "CPU or GPU, same --threads) that the precision's section is added to; its "
                  "FP32 content is kept as it is, and the result goes to --out");
  sub->add_option("--out", o->out,
                  "Profile file to write ('-' for standard output); default NAME.json");
  sub->add_option("--name", o->name,
                  "Profile name, the key scenarios use; default derived from the device");
  sub->add_option("--repetitions", o->repetitions,
                  "Repetitions of each benchmark; times are their medians")
      ->capture_default_str();
  sub->add_option("--min-time", o->min_time, "Seconds each repetition runs at least")
      ->capture_default_str();
  sub->add_option("--model-steps", o->model_steps,
                  "Training steps each model's end-to-end and in-step timings take at least, "
                  "over all repetitions (0: as --min-time gives); the in-step layer times are "
                  "means over the typical ones (the middle half by step time)")
      ->capture_default_str();
  sub->add_option("--time-sharing", o->time_sharing,
                  "Seconds each model steps in child processes pinned to one core, alone and "
                  "then two at once, to measure what time-sharing a core costs "
                  "(time_sharing_slowdown, which the simulator applies where ranks share a "
                  "device); CPU with one thread only; 0 skips it")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Seed of the random parameters and inputs")->capture_default_str();
  sub->add_flag("--no-end-to-end", o->no_end_to_end,
                "Skip the end-to-end forward+backward of each model (and the fidelity check)");
  sub->footer(
      "Progress goes to stderr, one line per benchmark with an ETA. The profile records the "
      "device, library versions, threads, date and /proc/loadavg; `ralp model show MODEL "
      "--device FILE` then uses the measured times.");
  sub->callback([&action, o, sub] {
    action = [o, command = given_command(*sub)] { return run(*o, command); };
  });
}

}  // namespace ralp::cli
