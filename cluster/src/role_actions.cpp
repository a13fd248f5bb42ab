// Workers' and parameter servers' operations on real tensors.
#include "role_actions.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "ralp/cluster/parameter_layout.hpp"
#include "ralp/cluster/synthetic_data.hpp"
#include "ralp/kernels/bf16.hpp"
#include "ralp/kernels/network.hpp"
#include "segmented_network.hpp"

namespace ralp::cluster {
namespace {

using schedule::MessageKind;
using schedule::Op;
using schedule::OpKind;
using schedule::Pass;

// Micro-batches in each worker's shard of the synthetic data set.
constexpr int64_t kShardBatches = 16;

template <class T>
Piece piece_of(std::vector<T>& values) {
  return {values.data(), values.size() * sizeof(T)};
}

bool needs_gradient(const LayerGraph& graph, LayerId id) {
  const Layer& layer = graph.layer(id);
  return layer.params() > 0 || layer.needs_input_gradient;
}

// The activation message of one worker's micro-batch: each boundary tensor (plain order), the
// model input when a head layer reads it, and the labels; and the gradients that go back, for the
// boundary layers that need one.
//
// The values are floats on the host. Under 16-bit mixed precision the network's activations and
// their gradients are BF16, and so is what travels: 2 bytes a value (`wire`), converted from the
// floats before a send (exactly: they hold BF16 values) and back after a receive. Labels stay
// 32-bit. A node's first device passes its members' messages on as they came.
struct BoundaryMessage {
  std::vector<std::vector<float>> activations;  // one per CutInfo::boundary layer
  std::vector<float> images;                    // when CutInfo::boundary_has_model_input
  std::vector<int32_t> labels;
  std::vector<LayerId> gradient_layers;
  std::vector<std::vector<float>> gradients;  // one per gradient layer
  bool bf16_wire = false;
  std::vector<std::vector<uint16_t>> activations16, gradients16;
  std::vector<uint16_t> images16;

  BoundaryMessage(const LayerGraph& graph, const CutInfo& cut, int64_t batch, bool bf16)
      : bf16_wire(bf16) {
    for (const LayerId id : cut.boundary) {
      const auto size = static_cast<size_t>(batch * graph.layer(id).output.elements());
      activations.emplace_back(size);
      if (needs_gradient(graph, id)) {
        gradient_layers.push_back(id);
        gradients.emplace_back(size);
      }
    }
    if (cut.boundary_has_model_input) {
      images.resize(static_cast<size_t>(batch * graph.input_shape().elements()));
    }
    labels.resize(static_cast<size_t>(batch));
    if (!bf16_wire) return;
    for (const auto& a : activations) activations16.emplace_back(a.size());
    for (const auto& g : gradients) gradients16.emplace_back(g.size());
    images16.resize(images.size());
  }
  Piece activation_piece(size_t i) {
    return bf16_wire ? piece_of(activations16[i]) : piece_of(activations[i]);
  }
  Piece gradient_piece(size_t i) {
    return bf16_wire ? piece_of(gradients16[i]) : piece_of(gradients[i]);
  }
  Piece images_piece() { return bf16_wire ? piece_of(images16) : piece_of(images); }
  std::vector<Piece> activation_pieces() {
    std::vector<Piece> pieces;
    for (size_t i = 0; i < activations.size(); ++i) pieces.push_back(activation_piece(i));
    if (!images.empty()) pieces.push_back(images_piece());
    pieces.push_back(piece_of(labels));
    return pieces;
  }
  std::vector<Piece> gradient_pieces() {
    std::vector<Piece> pieces;
    for (size_t i = 0; i < gradients.size(); ++i) pieces.push_back(gradient_piece(i));
    return pieces;
  }
  // Before sending the activations, and after receiving them; the same for the gradients.
  void pack_activations() {
    if (!bf16_wire) return;
    for (size_t i = 0; i < activations.size(); ++i) pack(activations[i], activations16[i]);
    pack(images, images16);
  }
  void unpack_activations() {
    if (!bf16_wire) return;
    for (size_t i = 0; i < activations.size(); ++i) unpack(activations16[i], activations[i]);
    unpack(images16, images);
  }
  void pack_gradients() {
    if (!bf16_wire) return;
    for (size_t i = 0; i < gradients.size(); ++i) pack(gradients[i], gradients16[i]);
  }
  void unpack_gradients() {
    if (!bf16_wire) return;
    for (size_t i = 0; i < gradients.size(); ++i) unpack(gradients16[i], gradients[i]);
  }

 private:
  static void pack(const std::vector<float>& from, std::vector<uint16_t>& to) {
    std::transform(from.begin(), from.end(), to.begin(), kernels::to_bf16);
  }
  static void unpack(const std::vector<uint16_t>& from, std::vector<float>& to) {
    std::transform(from.begin(), from.end(), to.begin(), kernels::from_bf16);
  }
};

// Whether boundary messages travel in BF16: when the backend's activations are BF16.
bool bf16_boundaries(const kernels::Backend& backend) {
  return backend.activation_type() == kernels::DataType::bf16;
}

[[noreturn]] void unexpected(const Op& op, const char* role) {
  throw std::logic_error(std::string(role) + " has no action for " +
                         std::string(schedule::to_string(op.kind)) + " " +
                         std::string(schedule::to_string(op.message.kind)));
}

// ---------------------------------------------------------------- workers

class WorkerActions final : public RankActions {
 public:
  WorkerActions(StrategyContext& ctx, const schedule::Schedule& schedule, int64_t worker)
      : ctx_(ctx),
        schedule_(schedule),
        worker_(worker),
        net_(ctx.backend, ctx.scenario.model, ctx.tail_end, ctx.batch(), ctx.scenario.seed) {
    const LayerGraph& graph = ctx.scenario.model;
    // The worker's shard: kShardBatches micro-batches, made before the first step so that making
    // them is not timed, and visited in order, epoch after epoch.
    const SyntheticData data(ctx.scenario.seed, graph.input_shape(),
                             graph.layer(graph.size() - 1).input_shapes.front().elements());
    for (int64_t i = 0; i < std::min(ctx.steps, kShardBatches); ++i) {
      shard_.push_back(data.batch(worker, i, ctx.batch()));
    }
    // ps and ralp: each variable group's values and gradients in the network's own tensors.
    for (const VariableGroup& g : schedule.groups) {
      Group group;
      for (const size_t v : g.variables) {
        const bool bias = ctx.shards.variables[v].bias;
        for (auto* p : net_.parameters_of(g.layer)) {
          if (p->name.ends_with(".bias") != bias) continue;
          group.values.push_back(std::make_unique<HostView>(ctx.backend, *p->value));
          group.gradients.push_back(std::make_unique<HostView>(ctx.backend, *p->gradient));
        }
      }
      groups_.push_back(std::move(group));
    }
    // allreduce and hybrid: the gradients in the plan's tensor order (per layer, weight first).
    const auto& tensors = schedule.plan.tensors;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const auto params = net_.parameters_of(tensors[i].layer);
      const size_t nth = i > 0 && tensors[i - 1].layer == tensors[i].layer ? 1 : 0;
      ring_views_.push_back(std::make_unique<HostView>(ctx.backend, *params.at(nth)->gradient));
      ring_layers_.push_back(tensors[i].layer);
    }
    if (ctx.has_head()) {
      cut_ = graph.describe_cut(*ctx.cut);
      boundary_ = std::make_unique<BoundaryMessage>(graph, *cut_, ctx.batch(),
                                                    bf16_boundaries(ctx.backend));
    }
    // A node's first device gathering the head's boundaries receives the others' micro-batches.
    const int64_t per_node = schedule.plan.devices_per_node;
    if (schedule.plan.gathers_boundaries() && worker % per_node == 0) {
      for (int64_t m = 1; m < per_node; ++m) {
        member_boundaries_.emplace_back(graph, *cut_, ctx.batch(), bf16_boundaries(ctx.backend));
      }
    }
    // Hierarchical all-reduce: a node's first device receives the others' fusion buffers.
    if (schedule.plan.hierarchical() && worker % per_node == 0) {
      member_buffers_.resize(schedule.buffers.size());
      for (size_t b = 0; b < schedule.buffers.size(); ++b) {
        int64_t elements = 0;
        for (const size_t i : schedule.buffers[b].tensors) elements += ring_views_[i]->elements();
        member_buffers_[b].assign(static_cast<size_t>(per_node - 1),
                                  std::vector<float>(static_cast<size_t>(elements)));
      }
    }
    // Local aggregation: a node's first device receives the others' gradients, per group and
    // member, one buffer per variable as the member sends them.
    if (schedule.plan.aggregates_locally() && worker % per_node == 0) {
      member_gradients_.resize(groups_.size());
      for (size_t g = 0; g < groups_.size(); ++g) {
        member_gradients_[g].resize(static_cast<size_t>(per_node - 1));
        for (auto& buffers : member_gradients_[g]) {
          for (auto& v : groups_[g].gradients) {
            buffers.emplace_back(static_cast<size_t>(v->elements()));
          }
        }
      }
    }
  }

  void begin_step(int64_t step) override {
    batch_ = &shard_[static_cast<size_t>(step) % shard_.size()];
  }

  void run_device(const Op& op, int64_t step) override {
    const kernels::StepContext context{ctx_.scenario.seed, static_cast<uint64_t>(step),
                                       static_cast<uint32_t>(worker_)};
    kernels::Backend& backend = ctx_.backend;
    const LayerId last = ctx_.tail_end - 1;
    if (op.kind == OpKind::compute && op.pass == Pass::forward) {
      if (op.layer == 0) {
        net_.set_input(batch_->images);
        if (net_.holds_loss()) net_.set_labels(batch_->labels);
      }
      for (size_t g = 0; g < groups_.size(); ++g) {
        if (schedule_.groups[g].layer != op.layer) continue;
        for (auto& v : groups_[g].values) v->upload();
      }
      net_.forward_layer(op.layer, context);
      if (op.layer != last) return;
      if (!boundary_) {
        ctx_.record.losses.push_back({step, worker_, net_.loss()});
        return;
      }
      for (size_t i = 0; i < cut_->boundary.size(); ++i) {
        backend.copy_to_host(net_.output(cut_->boundary[i]), boundary_->activations[i]);
      }
      if (cut_->boundary_has_model_input) boundary_->images = batch_->images;
      boundary_->labels = batch_->labels;
      boundary_->pack_activations();
      return;
    }
    if (op.kind == OpKind::compute && op.pass == Pass::backward) {
      if (op.layer == last && boundary_) {
        boundary_->unpack_gradients();
        for (size_t i = 0; i < boundary_->gradient_layers.size(); ++i) {
          backend.copy_from_host(net_.output_gradient(boundary_->gradient_layers[i]),
                                 boundary_->gradients[i]);
        }
      }
      net_.backward_layer(op.layer, context);
      for (size_t g = 0; g < groups_.size(); ++g) {
        if (schedule_.groups[g].layer != op.layer) continue;
        for (auto& v : groups_[g].gradients) v->download();
      }
      for (size_t i = 0; i < ring_views_.size(); ++i) {
        if (ring_layers_[i] == op.layer) ring_views_[i]->download();
      }
      return;
    }
    if (op.kind == OpKind::aggregate && op.buffer >= 0) {
      // Hierarchical all-reduce: a member's buffer into this device's, before the ring.
      const auto& in = member_buffers_.at(static_cast<size_t>(op.buffer))
                           .at(static_cast<size_t>(op.worker - worker_ - 1));
      size_t at = 0;
      for (const size_t i : schedule_.buffers.at(static_cast<size_t>(op.buffer)).tensors) {
        float* sum = ring_views_[i]->data();
        for (int64_t e = 0; e < ring_views_[i]->elements(); ++e) sum[e] += in[at++];
      }
      return;
    }
    if (op.kind == OpKind::aggregate) {
      // Local aggregation: a member's gradients into this device's, before the push.
      auto& buffers = member_buffers(op);
      auto& gradients = groups_.at(static_cast<size_t>(op.group)).gradients;
      for (size_t i = 0; i < gradients.size(); ++i) {
        float* sum = gradients[i]->data();
        for (size_t e = 0; e < buffers[i].size(); ++e) sum[e] += buffers[i][e];
      }
      return;
    }
    if (op.kind == OpKind::update) {
      for (auto& v : ring_views_) v->upload();
      net_.sgd_step(ctx_.sgd, 1.0F / static_cast<float>(ctx_.workers()));
      return;
    }
    unexpected(op, "a worker");
  }

  std::vector<Piece> send_pieces(const Op& op) override {
    switch (op.message.kind) {
      case MessageKind::push: {
        std::vector<Piece> pieces;
        for (auto& v : groups_.at(static_cast<size_t>(op.group)).gradients) {
          pieces.push_back(v->piece());
        }
        return pieces;
      }
      case MessageKind::activations:  // to the head: the node's micro-batch when gathering
        return member_boundaries_.empty() ? boundary_->activation_pieces() : node_pieces(false);
      case MessageKind::activation_gradient:  // a member's part of the node's, passed on
        return member_boundary(op).gradient_pieces();
      case MessageKind::pull:  // local aggregation: the node's values, passed on
        return value_pieces(op);
      case MessageKind::reduce:  // hierarchical: this device's buffer, to the node's first
      case MessageKind::broadcast:  // and the all-reduced buffer back
        return buffer_pieces(op);
      case MessageKind::ready:
      case MessageKind::go:
        return {};
      default:
        unexpected(op, "a worker");
    }
  }

  std::vector<Piece> receive_pieces(const Op& op) override {
    switch (op.message.kind) {
      case MessageKind::pull:
        return value_pieces(op);
      case MessageKind::reduce: {  // hierarchical: a member's buffer
        auto& in = member_buffers_.at(static_cast<size_t>(op.message.item))
                       .at(static_cast<size_t>(op.message.peer - schedule_.worker_host(worker_) - 1));
        return {{in.data(), in.size() * sizeof(float)}};
      }
      case MessageKind::broadcast:
        return buffer_pieces(op);
      case MessageKind::push: {  // local aggregation: a member's gradients
        std::vector<Piece> pieces;
        for (auto& b : member_buffers(op)) pieces.push_back({b.data(), b.size() * sizeof(float)});
        return pieces;
      }
      case MessageKind::activations:  // a member's micro-batch, gathered for the head
        return member_boundary(op).activation_pieces();
      case MessageKind::activation_gradient:
        return member_boundaries_.empty() ? boundary_->gradient_pieces() : node_pieces(true);
      case MessageKind::ready:
      case MessageKind::go:
        return {};
      default:
        unexpected(op, "a worker");
    }
  }

  std::vector<std::span<float>> ring_tensors(size_t buffer) override {
    std::vector<std::span<float>> out;
    for (const size_t i : schedule_.buffers.at(buffer).tensors) {
      HostView& v = *ring_views_[i];
      out.emplace_back(v.data(), static_cast<size_t>(v.elements()));
    }
    return out;
  }

  FinalParameters final_parameters() override {
    // The workers hold the all-reduced tail; worker-0 reports it.
    FinalParameters out;
    if (!ctx_.uses_ring() || worker_ != 0) return out;
    size_t index = 0;
    for (const ParameterEntry& e : dump_layout(ctx_.scenario.model)) {
      if (e.layer < ctx_.tail_end) {
        for (auto* p : net_.parameters_of(e.layer)) {
          if (p->name.ends_with(".bias") == e.bias) {
            out.emplace_back(index, ctx_.backend.download(*p->value));
          }
        }
      }
      ++index;
    }
    return out;
  }

 private:
  struct Group {
    std::vector<std::unique_ptr<HostView>> values, gradients;
  };

  // A fusion buffer's tensors (op.message.item), as the ring reads and writes them.
  std::vector<Piece> buffer_pieces(const Op& op) {
    std::vector<Piece> pieces;
    for (const size_t i : schedule_.buffers.at(static_cast<size_t>(op.message.item)).tensors) {
      pieces.push_back(ring_views_[i]->piece());
    }
    return pieces;
  }

  std::vector<Piece> value_pieces(const Op& op) {
    std::vector<Piece> pieces;
    for (auto& v : groups_.at(static_cast<size_t>(op.group)).values) pieces.push_back(v->piece());
    return pieces;
  }

  // The boundary of the member that op's message comes from or goes to (its item).
  BoundaryMessage& member_boundary(const Op& op) {
    return member_boundaries_.at(static_cast<size_t>(op.message.item - worker_ - 1));
  }
  // The node's micro-batch as the head reads it, this device's samples first: each boundary
  // tensor of every device, then the images and the labels (or each gradient of every device).
  std::vector<Piece> node_pieces(bool gradients) {
    std::vector<BoundaryMessage*> node = {boundary_.get()};
    for (BoundaryMessage& m : member_boundaries_) node.push_back(&m);
    std::vector<Piece> pieces;
    const size_t tensors = gradients ? boundary_->gradients.size() : boundary_->activations.size();
    for (size_t i = 0; i < tensors; ++i) {
      for (BoundaryMessage* m : node) {
        pieces.push_back(gradients ? m->gradient_piece(i) : m->activation_piece(i));
      }
    }
    if (gradients) return pieces;
    for (BoundaryMessage* m : node) {
      if (!m->images.empty()) pieces.push_back(m->images_piece());
    }
    for (BoundaryMessage* m : node) pieces.push_back(piece_of(m->labels));
    return pieces;
  }

  // The buffers of member op.worker's gradients of op.group (local aggregation).
  std::vector<std::vector<float>>& member_buffers(const Op& op) {
    const auto member = static_cast<size_t>(op.worker - worker_ - 1);
    return member_gradients_.at(static_cast<size_t>(op.group)).at(member);
  }

  StrategyContext& ctx_;
  const schedule::Schedule& schedule_;
  int64_t worker_;
  SegmentedNetwork net_;
  std::vector<SyntheticBatch> shard_;
  const SyntheticBatch* batch_ = nullptr;
  std::vector<Group> groups_;  // by schedule group index
  // Local aggregation on a node's first device: per group, per other device of the node, per
  // variable, the gradients it pushed.
  std::vector<std::vector<std::vector<std::vector<float>>>> member_gradients_;
  // Hierarchical all-reduce on a node's first device: per buffer, per other device, its buffer.
  std::vector<std::vector<std::vector<float>>> member_buffers_;
  std::vector<std::unique_ptr<HostView>> ring_views_;  // by plan tensor index
  std::vector<LayerId> ring_layers_;
  std::optional<CutInfo> cut_;
  std::unique_ptr<BoundaryMessage> boundary_;
  // Gathering the head's boundaries on a node's first device: the other devices' micro-batches.
  std::vector<BoundaryMessage> member_boundaries_;
};

// ---------------------------------------------------------------- parameter servers

class ServerActions final : public RankActions {
 public:
  ServerActions(StrategyContext& ctx, const schedule::Schedule& schedule, int64_t shard)
      : ctx_(ctx), schedule_(schedule), shard_(shard) {
    kernels::Backend& backend = ctx.backend;
    const LayerGraph& graph = ctx.scenario.model;
    const auto workers = static_cast<size_t>(ctx.workers());
    std::vector<Variable*> by_plan_index(ctx.shards.variables.size(), nullptr);
    for (size_t i = 0; i < ctx.shards.variables.size(); ++i) {
      const ralp::Variable& v = ctx.shards.variables[i];
      if (v.shard != shard) continue;
      auto var = std::make_unique<Variable>();
      var->plan_index = i;
      const kernels::TensorDesc desc{{v.elements}};
      // The same initial values as every worker's network: a pure function of seed, name, index.
      std::vector<float> init(static_cast<size_t>(v.elements));
      for (int64_t e = 0; e < v.elements; ++e) {
        init[static_cast<size_t>(e)] =
            kernels::initial_parameter(ctx.scenario.seed, graph.layer(v.layer), v.bias, e);
      }
      var->value = backend.upload(desc, init);
      var->velocity = backend.allocate(desc);
      backend.fill(var->velocity, 0.0F);
      var->sum = backend.allocate(desc);
      var->value_view = std::make_unique<HostView>(backend, var->value);
      var->gradients.reserve(workers);
      for (size_t w = 0; w < workers; ++w) var->gradients.push_back(backend.allocate(desc));
      for (size_t w = 0; w < workers; ++w) {
        var->gradient_views.push_back(std::make_unique<HostView>(backend, var->gradients[w]));
      }
      by_plan_index[i] = var.get();
      variables_.push_back(std::move(var));
    }
    for (const VariableGroup& g : schedule.groups) {
      std::vector<Variable*> members;
      if (g.shard == shard) {
        for (const size_t i : g.variables) members.push_back(by_plan_index[i]);
      }
      groups_.push_back(std::move(members));
    }
    if (ctx.has_head() && shard == 0) {
      cut_ = graph.describe_cut(*ctx.cut);
      batched_ = ctx.spec.head_mode == HeadMode::all_workers;
      // A micro-batch is a worker's or, gathered on nodes, a node's: devices x B images.
      devices_ = schedule.plan.micro_batch_devices;
      const int64_t micro_batch = ctx.batch() * devices_;
      const int64_t batch = batched_ ? ctx.batch() * ctx.workers() : micro_batch;
      head_ = std::make_unique<kernels::Network>(backend, graph, *ctx.cut, graph.size(), batch,
                                                 ctx.scenario.seed);
      for (int64_t w = 0; w < ctx.workers(); w += devices_) {
        messages_.try_emplace(w, graph, *cut_, micro_batch, bf16_boundaries(ctx.backend));
      }
    }
  }

  void begin_step(int64_t) override {
    // The pulls read the values as the last step's updates left them.
    for (auto& v : variables_) v->value_view->download();
  }

  void run_device(const Op& op, int64_t step) override {
    kernels::Backend& backend = ctx_.backend;
    switch (op.kind) {
      case OpKind::aggregate: {
        const auto w = static_cast<size_t>(op.worker);
        for (Variable* v : groups_.at(static_cast<size_t>(op.group))) {
          v->gradient_views[w]->upload();
          if (w == 0) {
            backend.copy(v->gradients[0], v->sum);
          } else {
            backend.add_into(v->sum, v->gradients[w]);
          }
        }
        return;
      }
      case OpKind::update:
        if (op.group >= 0) {
          const float scale = 1.0F / static_cast<float>(ctx_.workers());
          for (Variable* v : groups_.at(static_cast<size_t>(op.group))) {
            backend.sgd_update(v->value, v->sum, v->velocity, ctx_.sgd, scale);
          }
        } else {
          // Per micro-batch, the gradients are sums of one mean per micro-batch: scale by one
          // over their number. Batched, the loss is already the mean over all W * B images.
          head_->sgd_step(ctx_.sgd, batched_ ? 1.0F : 1.0F / static_cast<float>(messages_.size()));
        }
        return;
      case OpKind::compute:
        if (op.pass == Pass::head) {
          run_head(op.worker, step);
          return;
        }
        if (op.pass == Pass::head_all) {
          run_head_all(step);
          return;
        }
        break;
      default:
        break;
    }
    unexpected(op, "a parameter server");
  }

  std::vector<Piece> send_pieces(const Op& op) override {
    switch (op.message.kind) {
      case MessageKind::pull: {
        std::vector<Piece> pieces;
        for (Variable* v : groups_.at(static_cast<size_t>(op.group))) {
          pieces.push_back(v->value_view->piece());
        }
        return pieces;
      }
      case MessageKind::activation_gradient:
        return messages_.at(op.message.item).gradient_pieces();
      case MessageKind::step_done:
      case MessageKind::step_complete:
        return {};
      default:
        unexpected(op, "a parameter server");
    }
  }

  std::vector<Piece> receive_pieces(const Op& op) override {
    switch (op.message.kind) {
      case MessageKind::push: {
        std::vector<Piece> pieces;
        for (Variable* v : groups_.at(static_cast<size_t>(op.group))) {
          pieces.push_back(v->gradient_views[static_cast<size_t>(op.worker)]->piece());
        }
        return pieces;
      }
      case MessageKind::activations:
        return messages_.at(op.message.item).activation_pieces();
      case MessageKind::step_done:
      case MessageKind::step_complete:
        return {};
      default:
        unexpected(op, "a parameter server");
    }
  }

  std::vector<std::span<float>> ring_tensors(size_t) override {
    throw std::logic_error("a parameter server takes no part in ring all-reduce");
  }

  FinalParameters final_parameters() override {
    FinalParameters out;
    const auto layout = dump_layout(ctx_.scenario.model);
    for (size_t index = 0; index < layout.size(); ++index) {
      const ParameterEntry& e = layout[index];
      if (e.layer < ctx_.tail_end) {
        for (auto& v : variables_) {
          const ralp::Variable& var = ctx_.shards.variables[v->plan_index];
          if (var.layer == e.layer && var.bias == e.bias) {
            out.emplace_back(index, ctx_.backend.download(v->value));
          }
        }
      } else if (head_) {
        for (auto* p : head_->parameters_of(e.layer)) {
          if (p->name.ends_with(".bias") == e.bias) {
            out.emplace_back(index, ctx_.backend.download(*p->value));
          }
        }
      }
    }
    return out;
  }

 private:
  struct Variable {
    size_t plan_index = 0;
    kernels::Tensor value, velocity, sum;
    std::vector<kernels::Tensor> gradients;  // per worker
    std::unique_ptr<HostView> value_view;
    std::vector<std::unique_ptr<HostView>> gradient_views;
  };

  // One micro-batch through the head (a worker's, or a node's sent by its first device); the
  // first of a step replaces the head's gradients, the others add to them.
  void run_head(int32_t worker, int64_t step) {
    kernels::Backend& backend = ctx_.backend;
    BoundaryMessage& m = messages_.at(worker);
    m.unpack_activations();
    for (size_t i = 0; i < cut_->boundary.size(); ++i) {
      backend.copy_from_host(head_->boundary_input(cut_->boundary[i]), m.activations[i]);
    }
    if (!m.images.empty()) backend.copy_from_host(head_->model_input(), m.images);
    backend.copy_labels_from_host(head_->labels(), m.labels);
    const kernels::StepContext context{ctx_.scenario.seed, static_cast<uint64_t>(step),
                                       static_cast<uint32_t>(worker)};
    head_->forward(context);
    ctx_.record.losses.push_back({step, worker, head_->loss()});
    head_->backward(context, worker > 0);
    for (size_t i = 0; i < m.gradient_layers.size(); ++i) {
      backend.copy_to_host(head_->boundary_input_gradient(m.gradient_layers[i]), m.gradients[i]);
      // A node's micro-batch: each device's tail expects the gradient of its own B images'
      // mean, devices times that of the node's mean.
      for (float& g : m.gradients[i]) g *= static_cast<float>(devices_);
    }
    m.pack_gradients();
  }

  // Every worker's micro-batch as one batch of W * B images, one after another in plain order.
  void run_head_all(int64_t step) {
    kernels::Backend& backend = ctx_.backend;
    const int64_t workers = ctx_.workers();
    const auto concatenated = [&](auto member) {
      std::remove_reference_t<decltype(messages_.begin()->second.*member)> all;
      for (auto& [w, m] : messages_) all.insert(all.end(), (m.*member).begin(), (m.*member).end());
      return all;
    };
    for (auto& [w, m] : messages_) m.unpack_activations();
    for (size_t i = 0; i < cut_->boundary.size(); ++i) {
      std::vector<float> all;
      for (auto& [w, m] : messages_) {
        all.insert(all.end(), m.activations[i].begin(), m.activations[i].end());
      }
      backend.copy_from_host(head_->boundary_input(cut_->boundary[i]), all);
    }
    if (cut_->boundary_has_model_input) {
      backend.copy_from_host(head_->model_input(), concatenated(&BoundaryMessage::images));
    }
    backend.copy_labels_from_host(head_->labels(), concatenated(&BoundaryMessage::labels));
    // Dropout draws one mask for the whole batch, keyed as worker 0's.
    const kernels::StepContext context{ctx_.scenario.seed, static_cast<uint64_t>(step), 0};
    head_->forward(context);
    const float loss = head_->loss();
    for (int64_t w = 0; w < workers; ++w) ctx_.record.losses.push_back({step, w, loss});
    head_->backward(context, false);
    const auto& layers = messages_.begin()->second.gradient_layers;
    for (size_t i = 0; i < layers.size(); ++i) {
      const std::vector<float> all = backend.download(head_->boundary_input_gradient(layers[i]));
      size_t at = 0;
      for (auto& [w, m] : messages_) {
        // The gradient of the mean over W * B images is 1/W of a worker's micro-batch mean's,
        // which is what each worker's tail expects (its pushes are scaled by 1/W again where
        // they are summed).
        for (float& out : m.gradients[i]) out = all[at++] * static_cast<float>(workers);
      }
    }
    for (auto& [w, m] : messages_) m.pack_gradients();
  }

  StrategyContext& ctx_;
  const schedule::Schedule& schedule_;
  int64_t shard_;
  std::vector<std::unique_ptr<Variable>> variables_;
  std::vector<std::vector<Variable*>> groups_;  // by schedule group index; empty elsewhere
  std::optional<CutInfo> cut_;
  bool batched_ = false;
  int64_t devices_ = 1;  // per micro-batch
  std::unique_ptr<kernels::Network> head_;
  std::map<int64_t, BoundaryMessage> messages_;  // per sender: every worker, or node's first
};

}  // namespace

std::unique_ptr<RankActions> make_rank_actions(StrategyContext& context,
                                               const schedule::Schedule& schedule) {
  const Role role = context.roles().of(context.transport.rank());
  if (role.is_worker()) return std::make_unique<WorkerActions>(context, schedule, role.index);
  return std::make_unique<ServerActions>(context, schedule, role.index);
}

}  // namespace ralp::cluster
