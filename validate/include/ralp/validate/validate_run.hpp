// `ralp validate` as a library: calibrate kernels and links on this machine, then for each grid
// point run `ralp cluster` under mpirun across the hosts (network namespaces with shaped links, or
// the machines of a hostfile) and `ralp simulate` on the same derived scenario, and compare.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ralp/core/json_input.hpp"
#include "ralp/validate/comparison.hpp"
#include "ralp/validate/grid.hpp"
#include "ralp/validate/link_fit.hpp"
#include "ralp/validate/testbed.hpp"

namespace ralp::validate {

struct ValidateOptions {
  std::vector<std::filesystem::path> scenarios;
  std::vector<LinkRate> rates;
  std::vector<std::string> strategies;  // labels or kinds; empty: every strategy
  std::vector<Shape> shapes;
  std::filesystem::path out;  // every file the run writes goes here
  // Real machines instead of namespaces: mpirun's hostfile, and the network the ranks use
  // (btl_tcp_if_include: an interface or a CIDR; empty: Open MPI's choice). No shaping.
  std::optional<std::filesystem::path> hostfile;
  std::string hostfile_network;
  std::filesystem::path ralp;  // the ralp executable the ranks and subprocesses run
  std::string mpirun = "mpirun";
  // A device profile to use instead of calibrating; it must have been measured on this host.
  std::optional<std::filesystem::path> profile;
  // This machine's identity as the kernels report it (device, cpu_model, onednn, threads): a
  // profile is reused only when its provenance has the same values.
  std::map<std::string, std::string> host;
  int threads = 1;         // kernel threads per rank (the scenarios' training.threads)
  // The precision the points train and are predicted in (each derived scenario's "precision");
  // other than fp32, every calibration also measures that precision's section of the profile.
  Precision precision = Precision::fp32;
  int cores = 0;           // cores ranks may use; 0: this process's CPU affinity
  // Times the grid runs, every pass in the same order and each after a calibration of its own:
  // each point is then measured and calibrated at moments a pass apart, and its figures are the
  // passes' means.
  int passes = 2;
  double point_budget_s = 6.0;  // measured steps per point and pass: as many as fit in this
  int min_steps = 3;
  int max_steps = 20;
  int warmup_steps = 2;
  double step_timeout_s = 30.0;
  int calibrate_repetitions = 3;
  double calibrate_min_time_s = 0.02;
  // Steps of each model's in-step timing: the machine's speed moves from step to step, and the
  // in-step layer times are to describe a typical step, as a point's median does. With fewer
  // steps, calibrations in a row disagree more (`ralp calibrate --model-steps N`, repeated, shows
  // the spread).
  int calibrate_model_steps = 150;
  std::function<void(const std::string&)> progress;  // one line at a time, for stderr
};

// The device profile a run used.
struct ProfileChoice {
  std::filesystem::path file;
  std::string name;
  bool reused = false;  // an earlier calibration whose host matched
  std::map<std::string, std::string> provenance;
  double time_sharing_slowdown = 1.0;  // DeviceProfile::time_sharing_slowdown
};

struct RateCalibration {
  LinkRate rate;
  NetworkFit fit;
};

// One model's end-to-end training step (forward and backward on one core, as `ralp calibrate`
// measures it) in the run's profile and again after the grid's last point: how far this machine's
// speed moved from the calibration the predictions used.
struct SpeedCheck {
  std::string model;
  int64_t batch = 0;
  double start_s = 0.0;
  double end_s = 0.0;
  // (end - start) / start x 100.
  [[nodiscard]] double change_pct() const { return (end_s - start_s) / start_s * 100.0; }
};

struct ValidationRun {
  std::string mode;  // "namespaces" or "hostfile"
  int cores = 0;
  ProfileChoice profile;  // the first pass's
  // Every later pass's, measured just before it (none with --profile, whose profile every pass
  // uses), in pass order.
  std::vector<ProfileChoice> pass_profiles;
  std::vector<RateCalibration> links;
  std::vector<PointComparison> points;
  std::vector<ErrorSummary> summary;
  std::vector<ErrorSummary> replay_summary;  // of the replays (PointComparison::replayed)
  int passes = 1;
  // Median and largest spread of each point's step time between passes (pass_spread_pct); empty
  // with one pass.
  std::vector<ErrorSummary> repeatability;
  std::vector<KernelSpeedBin> kernel_speed;  // the runs' kernel times against the profile's
  std::vector<SpeedCheck> speed_checks;
  std::filesystem::path speed_check_profile;  // the kernels measured again after the grid
  std::string speed_check_steal_pct;  // its provenance's steal_pct, empty when it has none
  std::string loadavg_start, loadavg_end;
  double wall_s = 0.0;
  double calibration_s = 0.0;
  std::string command;  // how the run was started, for the report
};

// Why a profile's provenance does not match `host` ("cpu_model is X here, Y in the profile"), or
// nullopt when every key of `host` has the same value in it.
std::optional<std::string> provenance_mismatch(const std::map<std::string, std::string>& host,
                                               const Json& profile, const std::string& label);
// How a run's calibrations measure, as ralp calibrate records it in a profile's provenance
// (repetitions, min_time_s, model_steps): a profile found in --out is reused only when measured
// so (provenance_mismatch against these).
std::map<std::string, std::string> calibration_settings(const ValidateOptions& o);
// Why a profile was measured on a busy machine ("measured under load average 9.73 on 2 cores"):
// its recorded one-minute load average at the start exceeds `cores`; nullopt when it did not, or
// when the profile records none. A run does not reuse such a profile on its own.
std::optional<std::string> measured_under_load(const Json& profile, int cores);
// True when the profile measured every (model, batch) end to end (its calibration covered them).
bool profile_covers(const Json& profile, const std::vector<std::pair<std::string, int64_t>>& models);

// The models that both device profiles measured end to end, in `start`'s order, with their two
// step times; throws InputError naming `end_label` when `end` is not a measured profile.
std::vector<SpeedCheck> compare_end_to_end(const Json& start, const Json& end,
                                           const std::string& end_label);

// Runs everything. Throws InputError for bad options or scenarios, Interrupted after Ctrl-C, and
// std::runtime_error when a run fails (a rank that died is named); the namespaces and processes it
// made are gone in every case.
ValidationRun run_validation(const ValidateOptions& options);

// The rank's role name in a layout's rank order: "ps-0", "worker-1".
std::string rank_role(const Layout& layout, int rank);
// From mpirun's output after a failure: "rank 2 (worker-1) exited with status 3", or the line
// of a rank's own "error: ..." message; "" when neither is there.
std::string describe_failure(const std::string& output, const Layout& layout);

Json to_json(const ValidationRun& run);

}  // namespace ralp::validate
