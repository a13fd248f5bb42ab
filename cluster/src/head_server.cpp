// The head PS: micro-batches through the head, activation gradients back, one update per step.
#include "head_server.hpp"

#include <algorithm>

namespace ralp::cluster {
namespace {

int64_t per_image(const LayerGraph& graph, LayerId id) { return graph.layer(id).output.elements(); }

bool needs_gradient(const LayerGraph& graph, LayerId id) {
  const Layer& layer = graph.layer(id);
  return layer.params() > 0 || layer.needs_input_gradient;
}

template <class T>
Piece piece_of(std::vector<T>& values) {
  return {values.data(), values.size() * sizeof(T)};
}

}  // namespace

BoundaryMessage::BoundaryMessage(const LayerGraph& graph, const CutInfo& cut, int64_t batch) {
  for (const LayerId id : cut.boundary) {
    activations.emplace_back(static_cast<size_t>(batch * per_image(graph, id)));
    if (needs_gradient(graph, id)) {
      gradient_layers.push_back(id);
      gradients.emplace_back(static_cast<size_t>(batch * per_image(graph, id)));
    }
  }
  if (cut.boundary_has_model_input) {
    images.resize(static_cast<size_t>(batch * graph.input_shape().elements()));
  }
  labels.resize(static_cast<size_t>(batch));
}

std::vector<Piece> BoundaryMessage::activation_pieces() {
  std::vector<Piece> pieces;
  for (auto& a : activations) pieces.push_back(piece_of(a));
  if (!images.empty()) pieces.push_back(piece_of(images));
  pieces.push_back(piece_of(labels));
  return pieces;
}

std::vector<Piece> BoundaryMessage::gradient_pieces() {
  std::vector<Piece> pieces;
  for (auto& g : gradients) pieces.push_back(piece_of(g));
  return pieces;
}

HeadServer::HeadServer(StrategyContext& context)
    : ctx_(context),
      cut_(context.scenario.model.describe_cut(*context.cut)),
      batched_(context.spec.head_mode == HeadMode::all_workers) {
  const LayerGraph& graph = ctx_.scenario.model;
  const int64_t batch = batched_ ? ctx_.batch() * ctx_.workers() : ctx_.batch();
  network_ = std::make_unique<kernels::Network>(ctx_.backend, graph, *ctx_.cut, graph.size(), batch,
                                                ctx_.scenario.seed);
  for (int64_t w = 0; w < ctx_.workers(); ++w) messages_.emplace_back(graph, cut_, ctx_.batch());
}

void HeadServer::begin_step(int64_t step) {
  step_ = step;
  updated_ = false;
  processed_count_ = 0;
  processed_.assign(static_cast<size_t>(ctx_.workers()), false);
  arrivals_.clear();
  for (int64_t w = 0; w < ctx_.workers(); ++w) {
    arrivals_.push_back(
        ctx_.transport.receive(ctx_.roles().worker_rank(w), MessageKind::activations, step,
                               messages_[static_cast<size_t>(w)].activation_pieces()));
  }
}

bool HeadServer::has_work() const {
  if (updated_) return false;
  const Transport& t = ctx_.transport;
  if (batched_) {
    return std::all_of(arrivals_.begin(), arrivals_.end(), [&](auto h) { return t.done(h); });
  }
  for (size_t w = 0; w < arrivals_.size(); ++w) {
    if (!processed_[w] && t.done(arrivals_[w])) return true;
  }
  return false;
}

void HeadServer::advance() {
  if (!has_work()) return;
  if (batched_) {
    run_all();
  } else {
    for (size_t w = 0; w < arrivals_.size(); ++w) {
      if (!processed_[w] && ctx_.transport.done(arrivals_[w])) run_one(static_cast<int64_t>(w));
    }
  }
  if (processed_count_ < ctx_.workers()) return;
  ctx_.faults.at("update", step_);
  {
    PhaseScope updating(ctx_.clock, Phase::aggregation);
    // Per worker, the gradients are sums of W per-micro-batch means: scale by 1/W. Batched, the
    // loss is already the mean over all W * B images.
    network_->sgd_step(ctx_.sgd, batched_ ? 1.0F : 1.0F / static_cast<float>(ctx_.workers()));
    ctx_.backend.synchronize();
  }
  updated_ = true;
  updated_at_ = ctx_.transport.now_reference();
}

void HeadServer::run_one(int64_t worker) {
  const auto w = static_cast<size_t>(worker);
  Transport& t = ctx_.transport;
  kernels::Backend& backend = ctx_.backend;
  BoundaryMessage& m = messages_[w];
  t.release(arrivals_[w]);
  ctx_.faults.at("head", step_);
  {
    PhaseScope receiving(ctx_.clock, Phase::receive);
    for (size_t i = 0; i < cut_.boundary.size(); ++i) {
      backend.copy_from_host(network_->boundary_input(cut_.boundary[i]), m.activations[i]);
    }
    if (!m.images.empty()) backend.copy_from_host(network_->model_input(), m.images);
    backend.copy_labels_from_host(network_->labels(), m.labels);
  }
  const kernels::StepContext context{ctx_.scenario.seed, static_cast<uint64_t>(step_),
                                     static_cast<uint32_t>(worker)};
  {
    PhaseScope computing(ctx_.clock, Phase::compute);
    network_->forward(context);
    ctx_.record.losses.push_back({step_, worker, network_->loss()});
    network_->backward(context, processed_count_ > 0);
  }
  {
    PhaseScope sending(ctx_.clock, Phase::send);
    for (size_t i = 0; i < m.gradient_layers.size(); ++i) {
      backend.copy_to_host(network_->boundary_input_gradient(m.gradient_layers[i]), m.gradients[i]);
    }
    replies_.push_back(t.send(ctx_.roles().worker_rank(worker), MessageKind::activation_gradient,
                              step_, worker, m.gradient_pieces()));
    t.progress();
  }
  processed_[w] = true;
  ++processed_count_;
}

void HeadServer::run_all() {
  Transport& t = ctx_.transport;
  kernels::Backend& backend = ctx_.backend;
  const int64_t workers = ctx_.workers();
  for (const auto h : arrivals_) t.release(h);
  ctx_.faults.at("head", step_);
  // One batch of W * B images: the micro-batches one after another in plain (NCHW) order.
  const auto concatenated = [&](auto member) {
    std::remove_reference_t<decltype(messages_[0].*member)> all;
    for (auto& m : messages_) all.insert(all.end(), (m.*member).begin(), (m.*member).end());
    return all;
  };
  {
    PhaseScope receiving(ctx_.clock, Phase::receive);
    for (size_t i = 0; i < cut_.boundary.size(); ++i) {
      std::vector<float> all;
      for (auto& m : messages_)
        all.insert(all.end(), m.activations[i].begin(), m.activations[i].end());
      backend.copy_from_host(network_->boundary_input(cut_.boundary[i]), all);
    }
    if (cut_.boundary_has_model_input) {
      backend.copy_from_host(network_->model_input(), concatenated(&BoundaryMessage::images));
    }
    backend.copy_labels_from_host(network_->labels(), concatenated(&BoundaryMessage::labels));
  }
  // Dropout draws one mask for the whole batch, keyed as worker 0's.
  const kernels::StepContext context{ctx_.scenario.seed, static_cast<uint64_t>(step_), 0};
  {
    PhaseScope computing(ctx_.clock, Phase::compute);
    network_->forward(context);
    const float loss = network_->loss();
    for (int64_t w = 0; w < workers; ++w) ctx_.record.losses.push_back({step_, w, loss});
    network_->backward(context, false);
  }
  PhaseScope sending(ctx_.clock, Phase::send);
  const auto& layers = messages_.front().gradient_layers;
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::vector<float> all = backend.download(network_->boundary_input_gradient(layers[i]));
    const size_t part = messages_.front().gradients[i].size();
    for (int64_t w = 0; w < workers; ++w) {
      auto& out = messages_[static_cast<size_t>(w)].gradients[i];
      // The gradient of the mean over W * B images is 1/W of the micro-batch mean's, which is
      // what the worker's tail expects (its pushes are scaled by 1/W again where they are summed).
      for (size_t e = 0; e < part; ++e) {
        out[e] = all[static_cast<size_t>(w) * part + e] * static_cast<float>(workers);
      }
    }
  }
  for (int64_t w = 0; w < workers; ++w) {
    replies_.push_back(t.send(ctx_.roles().worker_rank(w), MessageKind::activation_gradient, step_,
                              w, messages_[static_cast<size_t>(w)].gradient_pieces()));
  }
  t.progress();
  std::fill(processed_.begin(), processed_.end(), true);
  processed_count_ = workers;
}

void HeadServer::end_step() { ctx_.transport.wait_all(replies_); }

}  // namespace ralp::cluster
