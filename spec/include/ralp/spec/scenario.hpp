// Scenario files: the tool's main input. A model, a cluster (workers, parameter servers, devices,
// network platform), the strategies to compare and how many steps to run. docs/scenario-format.md
// documents every key; scenarios/ holds examples.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ralp/core/json_input.hpp"
#include "ralp/core/precision.hpp"
#include "ralp/devices/device_profile.hpp"
#include "ralp/devices/transport.hpp"
#include "ralp/model/layer_graph.hpp"

namespace ralp {

enum class StrategyKind { ps, ralp, allreduce, hybrid };
// balanced: chosen by the analytic shard load (spec/sharding.hpp), the same for every mode.
enum class ShardPlacement { round_robin, greedy, balanced };
enum class HeadMode { per_worker, all_workers };
// How ring all-reduce is simulated: one message per chunk and phase, or one flow per ring edge
// carrying every phase's bytes (exact on homogeneous rings); auto picks the exact cheaper form
// where it applies.
enum class RingModel { automatic, message, coalesced };
// How allreduce and hybrid reduce across nodes (spec/nodes.hpp): NCCL's single ring through every
// device in node order, or Horovod's hierarchical all-reduce (reduce inside each node, ring among
// the nodes, broadcast inside).
enum class AllreduceAlgorithm { ring, hierarchical };
// Which algorithm the nccl transport runs an all-reduce with (devices/nccl_tuning.hpp): the one
// NCCL's tuning model picks for each buffer, or one forced as NCCL_ALGO forces it.
enum class NcclAlgorithmChoice { automatic, ring, tree };

std::string_view to_string(StrategyKind kind);
std::string_view to_string(ShardPlacement placement);
std::string_view to_string(HeadMode mode);
std::string_view to_string(RingModel model);
std::string_view to_string(AllreduceAlgorithm algorithm);
std::string_view to_string(NcclAlgorithmChoice choice);

struct StrategySpec {
  StrategyKind kind = StrategyKind::ps;
  std::string label;  // unique within the scenario; defaults to the kind ("ralp", "ralp@fc6")
  // ralp and hybrid: the first head layer's name, or nullopt for "auto" (every valid cut tried).
  std::optional<std::string> cut;
  ShardPlacement sharding = ShardPlacement::round_robin;  // ps, ralp, hybrid
  HeadMode head_mode = HeadMode::per_worker;              // ralp, hybrid
  Bytes fusion_threshold = Bytes(64.0 * 1024 * 1024);     // allreduce, hybrid
  Seconds cycle_time = Seconds(5e-3);                     // allreduce, hybrid
  RingModel ring_model = RingModel::automatic;            // allreduce, hybrid
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::ring;  // allreduce, hybrid
  NcclAlgorithmChoice nccl_algorithm = NcclAlgorithmChoice::automatic;  // allreduce, hybrid
  // ps, ralp, hybrid on nodes of several devices: the node sums its devices' gradients (and
  // gathers their boundary activations) over its interconnect and sends once; false: every device
  // talks to the parameter servers itself. Defaults to devices_per_node > 1.
  bool local_aggregation = false;
  // ps: tf_cnn_benchmarks' distributed_replicated synchronisation ("sync": "token_queues"): each
  // server (worker, or node leader with local aggregation) has the PS apply its own gradient, and
  // every variable ends in a barrier of token queues (schedule.hpp). false ("sum"): the shard sums
  // the W gradients and applies them once.
  bool token_queues = false;
  // How the framework moves the strategy's messages (devices/transport.hpp); ideal: wire speed.
  Transport transport = ideal_transport();
  friend bool operator==(const StrategySpec&, const StrategySpec&) = default;
};

// A strategy's label when the scenario gives none: the kind, or kind@cut for a fixed cut.
std::string default_strategy_label(std::string_view kind, const std::optional<std::string>& cut);

struct LinkSpec {
  BytesPerSecond bandwidth;
  Seconds latency;
  friend bool operator==(const LinkSpec&, const LinkSpec&) = default;
};

// rails: NIC i of every node on leaf switch i, the leaves joined by spines (docs/fabrics.md).
enum class PlatformKind { star, racks, fat_tree, torus, dragonfly, file, rails };
std::string_view to_string(PlatformKind kind);

// Number of hosts a generated topology holds (fat tree: the product of the down links; torus: of
// the dimensions; dragonfly: groups x chassis x routers x nodes).
int64_t topology_hosts(PlatformKind kind, const std::vector<std::vector<int64_t>>& groups);

// What the network between hosts is: Ethernet under TCP (the default), or RDMA over Converged
// Ethernet or InfiniBand, whose transfers pay a route's latency once, with no TCP slow start.
enum class Fabric { ethernet, roce, infiniband };
std::string_view to_string(Fabric fabric);
[[nodiscard]] inline bool is_rdma(Fabric fabric) { return fabric != Fabric::ethernet; }

struct PlatformSpec {
  PlatformKind kind = PlatformKind::star;
  Fabric fabric = Fabric::ethernet;
  LinkSpec nic;                       // every host's link (star, racks) or every link (others)
  std::optional<LinkSpec> ps_nic;     // per-role overrides of nic (star, racks)
  std::optional<LinkSpec> worker_nic;
  std::optional<LinkSpec> backbone;   // star: a link every flow crosses
  // star: each NIC direction is shaped by a token bucket of this many bytes (tc tbf's burst): a
  // message that starts on idle NICs passes its first bytes at once, as many as the buckets
  // refilled at the NIC's bandwidth while idle, up to this size. 0: plain links.
  Bytes nic_burst = Bytes(0.0);
  int64_t hosts_per_rack = 0;         // racks
  std::optional<LinkSpec> rack_uplink;  // racks: each rack's link to the core
  // fat_tree, torus, dragonfly: SimGrid's topology string ("2;4,4;1,2;1,2" for a fat tree:
  // levels; down links; up links; link counts; "4,4,4" for a torus; "3,4;4,3;5,1;2" for a
  // dragonfly: groups; chassis; routers; nodes), and its numbers, one vector per ';' group.
  std::string topology;
  std::vector<std::vector<int64_t>> topology_groups;
  // rails: the leaves' uplinks to the spines carry 1 / oversubscription of what their nodes'
  // NICs can send at once.
  double oversubscription = 1.0;
  std::filesystem::path file;  // file: a SimGrid platform XML
  std::map<std::string, std::string> roles;  // file: "ps-0" / "worker-3" -> host name
  friend bool operator==(const PlatformSpec&, const PlatformSpec&) = default;
};

// The links inside a node of several devices (docs/nodes.md, docs/fabrics.md). pcie: each device
// reaches its PCIe switch over a link of `bandwidth`, and the switches reach the host (CPU,
// memory, NICs) over `host_links` links of that bandwidth, the devices split among them in order.
// nvlink: a DGX-1's hybrid cube-mesh of point-to-point links, `links_per_device` per device
// (6 on V100, 4 on P100) of bandwidth / links_per_device each; pairs without a link go over PCIe.
// nvswitch: every device reaches every other at its whole `bandwidth` through the switches.
// Host traffic always crosses PCIe (the device profile's PCIe bandwidth, over host_links links).
enum class InterconnectKind { pcie, nvlink, nvswitch };
std::string_view to_string(InterconnectKind kind);

struct NodeInterconnect {
  InterconnectKind kind = InterconnectKind::pcie;
  BytesPerSecond bandwidth;
  Seconds latency;
  int64_t host_links = 1;
  int64_t links_per_device = 6;  // nvlink
  friend bool operator==(const NodeInterconnect&, const NodeInterconnect&) = default;
};

// Where parameter servers run: hosts of their own, or shard i on node i mod nodes (on ps_device,
// which does not time-share the workers' devices).
enum class PsPlacement { separate, colocated };
std::string_view to_string(PsPlacement placement);

// Servers of several devices (spec/nodes.hpp groups the workers into them).
struct NodeSpec {
  int64_t devices_per_node = 1;
  std::optional<NodeInterconnect> interconnect;
  int64_t nics_per_node = 1;  // 1 or devices_per_node (one NIC per device)
  // GPUDirect RDMA: a device's NIC traffic goes from its PCIe switch to the NIC, with no copy
  // through the host and no host link shared with the node's other devices. Defaults to one NIC
  // per device on a node of several.
  bool gpu_direct = false;
  PsPlacement ps_placement = PsPlacement::separate;
  friend bool operator==(const NodeSpec&, const NodeSpec&) = default;
};

enum class NetworkModelKind { tcp, ideal, factors };

struct NetworkModelSpec {
  NetworkModelKind kind = NetworkModelKind::tcp;
  double latency_factor = 1.0;    // factors only
  double bandwidth_factor = 1.0;  // factors only
  friend bool operator==(const NetworkModelSpec&, const NetworkModelSpec&) = default;
};

enum class CompressionKind { none, fp16, int8, topk };

struct CompressionSpec {
  CompressionKind kind = CompressionKind::none;
  double topk_ratio = 0.01;           // topk: fraction of values kept
  std::optional<BytesPerSecond> encode_rate;  // bytes of gradient encoded (or decoded) per second
  friend bool operator==(const CompressionSpec&, const CompressionSpec&) = default;
};

enum class StragglerKind { none, lognormal, bernoulli };

// Per-worker, per-step compute slowdown factors, drawn from the scenario's seed.
struct StragglerSpec {
  StragglerKind kind = StragglerKind::none;
  double sigma = 0.0;        // lognormal: factor = exp(sigma * N(0, 1)), at least 1
  double probability = 0.0;  // bernoulli: chance that a worker is slow in a step
  double slowdown = 1.0;     // bernoulli: the slow worker's factor
  friend bool operator==(const StragglerSpec&, const StragglerSpec&) = default;
};

// The CPU time that moving a message takes on its sender's and its receiver's core, per byte
// (header included): the copies of the MPI thread and the kernel's network stack, which share the
// core with the computation that overlaps them. Charged where a host computes on a CPU; 0: free.
// The CPU time a payload message takes on each end: per message plus per byte.
struct MessageCpuSpec {
  double send_s_per_byte = 0.0;
  double receive_s_per_byte = 0.0;
  double send_s_per_message = 0.0;
  double receive_s_per_message = 0.0;
  // The share of its device's CPU that a rank waiting for a message takes from the computations
  // of the ranks sharing that device (Scenario::shared_devices): the transport's polling.
  double waiting_share = 0.0;
  // Whether messages cost CPU time (the waiting share aside).
  [[nodiscard]] bool charged() const {
    return send_s_per_byte > 0.0 || receive_s_per_byte > 0.0 || send_s_per_message > 0.0 ||
           receive_s_per_message > 0.0;
  }
  friend bool operator==(const MessageCpuSpec&, const MessageCpuSpec&) = default;
};

// Settings of the real-cluster mode (ralp cluster); the simulator ignores them.
// ImageNet-1k's training set (ILSVRC 2012): the images an epoch reads unless a scenario says.
inline constexpr int64_t kImageNetTrainImages = 1281167;
// The epochs of a training run unless a scenario says: the classic ImageNet schedule of ResNet-50
// (He et al. 2015; torchvision's and NVIDIA's reference scripts default to 90).
inline constexpr int64_t kDefaultEpochs = 90;

struct TrainingSpec {
  double learning_rate = 0.01;
  double momentum = 0.9;
  Seconds step_timeout = Seconds(60.0);
  int threads = 1;  // kernel threads per rank
  // What the whole run reads, for the time and cost to train (the real cluster ignores them).
  int64_t epochs = kDefaultEpochs;
  int64_t dataset_images = kImageNetTrainImages;
  friend bool operator==(const TrainingSpec&, const TrainingSpec&) = default;
};

// A price: an amount in an ISO 4217 currency, written "32.77 USD".
struct Price {
  double amount = 0.0;
  std::string currency;  // three capital letters
  friend bool operator==(const Price&, const Price&) = default;
};

// "32.77 USD" (a number >= 0, white space, three capital letters) as a price; nullopt otherwise.
std::optional<Price> parse_price(std::string_view text);
// "32.77 USD": the amount with two decimals (more where it has them), then the code.
std::string format_price(const Price& price);

// Settings of the placement search (ralp place, cut "auto").
struct PlacementSpec {
  // Split only when the best cut is faster than the best uncut strategy by more than this
  // fraction of its step time.
  double split_threshold = 0.05;
  friend bool operator==(const PlacementSpec&, const PlacementSpec&) = default;
};

struct Scenario {
  std::string file;  // where it was read from, for messages
  std::string name;
  std::string source;  // where the scenario's numbers come from (published rows, datasheets)
  std::string model_ref;  // zoo name or model file path, as written
  LayerGraph model;
  int64_t batch_per_worker = 0;
  int64_t workers = 0;
  int64_t parameter_servers = 0;
  DeviceProfile worker_device;
  DeviceProfile ps_device;
  NodeSpec nodes;
  PlatformSpec platform;
  // One entry per host, parameter servers first: hosts with the same number compute on one shared
  // device (two ranks on one CPU core or one GPU), dividing it equally while both compute. Empty:
  // every host has its own device. The simulator models the sharing; a real run has it.
  std::vector<int64_t> shared_devices;
  MessageCpuSpec message_cpu;  // measured by ralp validate's link probe
  // What one host (a node, or a parameter server of its own) costs an hour: cluster.price_per_hour.
  std::optional<Price> price_per_hour;
  NetworkModelSpec network_model;
  std::vector<StrategySpec> strategies;
  int64_t steps = 0;
  int64_t warmup_steps = 0;
  uint64_t seed = 0;
  bool pcie_copies = true;  // host-device copies where a device is a GPU
  CompressionSpec compression;
  StragglerSpec stragglers;
  TrainingSpec training;
  PlacementSpec placement;
  // What the step computes in (core/precision.hpp); every device that computes must run it.
  Precision precision = Precision::fp32;
  // Whether a footprint above a device's memory_capacity refuses the scenario (else it warns).
  bool memory_check = true;
};

// One "warning: ..." line (no newline) per device that runs the scenario's precision slowly (FP16
// on a GPU without fast FP16); a device that cannot run it at all makes parse_scenario throw.
std::vector<std::string> precision_warnings(const Scenario& scenario);

// The groups of hosts that share a device (Scenario::shared_devices), each of two or more host
// indices (parameter servers first, then workers) in increasing order, by their first host.
std::vector<std::vector<int64_t>> shared_device_groups(const Scenario& scenario);

// Reads and validates a scenario. Relative paths inside it (model and profile files, platform
// files) are relative to the scenario's folder. Throws InputError naming the file, the JSON path
// and the expectation of the first problem found.
Scenario load_scenario(const std::filesystem::path& file);
Scenario parse_scenario(const Json& value, const std::string& file,
                        const std::filesystem::path& base_dir);

// The scenario as JSON with every default filled in (profiles by name, models by reference), for
// echoing in outputs.
Json scenario_to_json(const Scenario& scenario);

// cluster.message_cpu as the scenario format writes it: {"send_ns_per_byte", "receive_ns_per_byte",
// "send_us_per_message", "receive_us_per_message"}.
Json message_cpu_to_json(const MessageCpuSpec& spec);

}  // namespace ralp
