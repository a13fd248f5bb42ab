// The network executor: tensors for a layer range, forward in id order, backward in reverse with
// gradient sums where a tensor feeds several layers, and the SGD step.
#include "ralp/kernels/network.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include "ralp/kernels/dropout_mask.hpp"

namespace ralp::kernels {
namespace {

// FNV-1a: folds a parameter name into the initialisation stream key.
uint64_t hash_name(std::string_view name) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (const char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3ULL;
  }
  return h;
}

bool requires_gradient(const Layer& layer) {
  return layer.params() > 0 || layer.needs_input_gradient;
}

int64_t fan_in(const Layer& layer) {
  const TensorShape& in = layer.input_shapes.front();
  if (layer.kind() == LayerKind::conv2d) {
    const auto& a = std::get<Conv2dAttrs>(layer.spec.attrs);
    return in.channels / a.groups * a.kernel_h * a.kernel_w;
  }
  return in.elements();
}

}  // namespace

float initial_parameter(uint64_t seed, const Layer& layer, bool bias, int64_t index) {
  if (layer.kind() == LayerKind::batch_norm) return bias ? 0.0F : 1.0F;
  const std::string name = layer.name() + (bias ? ".bias" : ".weight");
  const uint64_t stream = mix64(seed ^ hash_name(name));
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in(layer)));
  const double u = stream_uniform(stream, static_cast<uint64_t>(index));
  return static_cast<float>((2.0 * u - 1.0) * bound);
}

uint32_t dropout_key(const Layer& layer) {
  return static_cast<uint32_t>(hash_name(layer.name()));
}

// A tensor produced by a range layer, a boundary input or the model input, with its gradient.
struct Network::Slot {
  Tensor value;
  Tensor gradient;  // allocated when needs_gradient
  Tensor scratch;   // a second contribution's landing place, allocated on first need
  bool needs_gradient = false;
  bool boundary_output = false;
  bool gradient_written = false;
};

struct Network::Step {
  LayerId id = 0;
  std::unique_ptr<LayerRunner> runner;
  std::vector<Slot*> inputs;
  Slot* output = nullptr;
  Parameter* weight = nullptr;
  Parameter* bias = nullptr;
  Tensor weight_scratch, bias_scratch;  // for accumulation, allocated on first need
  LayerArgs args;
};

Network::Network(Backend& backend, const LayerGraph& graph, LayerId first, LayerId last,
                 int64_t batch, uint64_t init_seed)
    : backend_(backend), graph_(graph), first_(first), last_(last), batch_(batch) {
  if (first >= last || last > graph.size()) {
    throw std::out_of_range("layer range [" + std::to_string(first) + ", " +
                            std::to_string(last) + ") of a " + std::to_string(graph.size()) +
                            "-layer model");
  }
  if (batch < 1) throw std::invalid_argument("batch must be >= 1");
  build(init_seed);
}

Network::Network(Backend& backend, const LayerGraph& graph, int64_t batch, uint64_t init_seed)
    : Network(backend, graph, 0, graph.size(), batch, init_seed) {}

Network::~Network() = default;

void Network::build(uint64_t init_seed) {
  const Layout layout = backend_.activation_layout();
  const auto activation = [&](const TensorShape& s) {
    return activation_desc(batch_, s.channels, s.height, s.width, layout,
                           backend_.activation_type());
  };
  has_loss_ = last_ == graph_.size();
  parameters_.reserve(2 * (last_ - first_));

  for (LayerId id = first_; id < last_; ++id) {
    const Layer& layer = graph_.layer(id);
    auto step = std::make_unique<Step>();
    step->id = id;
    step->runner = backend_.make_runner(layer, batch_);

    for (const std::string& name : layer.spec.inputs) {
      Slot* slot = nullptr;
      if (name == kModelInputName) {
        reads_model_input_ = true;
        if (!input_slot_) {
          input_slot_ = std::make_unique<Slot>();
          input_slot_->value = backend_.allocate(activation(graph_.input_shape()));
        }
        slot = input_slot_.get();
      } else {
        const LayerId source = *graph_.find(name);
        auto& owned = slots_[source];
        if (!owned) {
          // Only a boundary input can be unseen here: range layers made their slots already.
          owned = std::make_unique<Slot>();
          const Layer& producer = graph_.layer(source);
          owned->value = backend_.allocate(activation(producer.output));
          owned->needs_gradient = requires_gradient(producer);
          if (owned->needs_gradient) owned->gradient = backend_.allocate(owned->value.desc());
          boundary_inputs_.push_back(source);
        }
        slot = owned.get();
      }
      for (const Slot* seen : step->inputs) {
        if (seen == slot) {
          throw std::invalid_argument("layer '" + layer.name() + "' reads '" + name +
                                      "' twice, which the executor does not support");
        }
      }
      step->inputs.push_back(slot);
    }

    auto out = std::make_unique<Slot>();
    out->value = backend_.allocate(step->runner->output_desc());
    out->needs_gradient = requires_gradient(layer) && id + 1 != graph_.size();
    for (const LayerId succ : graph_.successors(id)) {
      if (succ >= last_) out->boundary_output = true;
    }
    if (out->boundary_output) boundary_outputs_.push_back(id);
    if (out->needs_gradient) out->gradient = backend_.allocate(out->value.desc());
    step->output = out.get();
    slots_[id] = std::move(out);

    const auto add_parameter = [&](bool bias) {
      const TensorDesc desc = bias ? step->runner->bias_desc() : step->runner->weight_desc();
      std::vector<float> init(static_cast<size_t>(desc.elements()));
      for (size_t i = 0; i < init.size(); ++i) {
        init[i] = initial_parameter(init_seed, layer, bias, static_cast<int64_t>(i));
      }
      const auto keep = [this](Tensor t) {
        return parameter_tensors_.emplace_back(std::make_unique<Tensor>(std::move(t))).get();
      };
      Tensor* value = keep(backend_.upload(desc, init));
      Tensor* gradient = keep(backend_.allocate(desc));
      Tensor* velocity = keep(backend_.allocate(desc));
      backend_.fill(*gradient, 0.0F);
      backend_.fill(*velocity, 0.0F);
      parameters_.push_back(
          {id, layer.name() + (bias ? ".bias" : ".weight"), value, gradient, velocity});
      return &parameters_.back();
    };
    if (step->runner->has_weights()) step->weight = add_parameter(false);
    if (step->runner->has_bias()) step->bias = add_parameter(true);

    LayerArgs& a = step->args;
    for (Slot* s : step->inputs) a.inputs.push_back(&s->value);
    a.output = &step->output->value;
    a.diff_output = step->output->needs_gradient ? &step->output->gradient : nullptr;
    a.diff_inputs.assign(step->inputs.size(), nullptr);
    if (step->weight != nullptr) a.weights = step->weight->value;
    if (step->bias != nullptr) a.bias = step->bias->value;
    if (layer.kind() == LayerKind::softmax_cross_entropy) {
      labels_ = backend_.allocate(step->runner->labels_desc());
      loss_ = backend_.allocate({{1}});
      a.labels = &labels_;
      a.loss = &loss_;
    }
    steps_.push_back(std::move(step));
  }
  std::sort(boundary_inputs_.begin(), boundary_inputs_.end());
}

Network::Slot& Network::slot_of(LayerId id) {
  const auto it = slots_.find(id);
  if (it == slots_.end()) {
    throw std::out_of_range("layer " + std::to_string(id) + " is neither in the range [" +
                            std::to_string(first_) + ", " + std::to_string(last_) +
                            ") nor one of its boundary inputs");
  }
  return *it->second;
}

const Network::Slot& Network::slot_of(LayerId id) const {
  return const_cast<Network*>(this)->slot_of(id);
}

Tensor& Network::model_input() {
  if (!input_slot_) throw std::out_of_range("this range does not read the model input");
  return input_slot_->value;
}

Tensor& Network::labels() {
  if (!has_loss_) throw std::out_of_range("this range does not hold the loss");
  return labels_;
}

Tensor& Network::boundary_input(LayerId id) {
  if (id >= first_) throw std::out_of_range("layer " + std::to_string(id) + " is in the range");
  return slot_of(id).value;
}

Tensor& Network::boundary_output_gradient(LayerId id) {
  Slot& slot = slot_of(id);
  if (!slot.boundary_output || !slot.needs_gradient) {
    throw std::out_of_range("layer " + std::to_string(id) +
                            " is not a boundary output that needs a gradient");
  }
  return slot.gradient;
}

const Tensor& Network::output(LayerId id) const {
  if (id < first_) throw std::out_of_range("layer " + std::to_string(id) + " is not in the range");
  return slot_of(id).value;
}

const Tensor& Network::boundary_input_gradient(LayerId id) const {
  const Slot& slot = slot_of(id);
  if (id >= first_ || !slot.needs_gradient) {
    throw std::out_of_range("layer " + std::to_string(id) +
                            " is not a boundary input that needs a gradient");
  }
  return slot.gradient;
}

void Network::set_timing(bool on) {
  timer_ = on ? backend_.make_timer() : nullptr;
  const size_t n = steps_.size();
  times_ = on ? LayerTimes{std::vector<Seconds>(n), std::vector<Seconds>(n), std::vector<Seconds>(n)}
              : LayerTimes{};
}

template <class Pass>
void Network::timed(std::vector<Seconds>* times, LayerId id, Pass pass) {
  if (!timer_) {
    pass();
    return;
  }
  timer_->start();
  pass();
  timer_->stop();
  (*times)[id - first_] = timer_->elapsed();
}

void Network::forward(const StepContext& context) {
  for (LayerId id = first_; id < last_; ++id) forward_layer(id, context);
}

void Network::forward_layer(LayerId id, const StepContext& context) {
  if (id < first_ || id >= last_) throw std::out_of_range("layer " + std::to_string(id) + " is not in range");
  Step& step = *steps_[id - first_];
  step.args.mask = {context.seed, context.step, context.worker, dropout_key(step.runner->layer())};
  timed(&times_.forward, step.id, [&] { step.runner->forward(step.args); });
}

void Network::backward(const StepContext& context, bool accumulate) {
  begin_backward();
  for (LayerId id = last_; id-- > first_;) backward_layer(id, context, accumulate);
}

void Network::begin_backward() {
  for (auto& [id, slot] : slots_) slot->gradient_written = slot->boundary_output;
}

void Network::backward_layer(LayerId id, const StepContext& context, bool accumulate) {
  if (id < first_ || id >= last_) throw std::out_of_range("layer " + std::to_string(id) + " is not in range");
  Step& step = *steps_[id - first_];
  const Layer& layer = step.runner->layer();
  const bool is_loss = layer.kind() == LayerKind::softmax_cross_entropy;
  if (!is_loss && !step.output->needs_gradient) return;
  if (!is_loss && !step.output->gradient_written) {
    throw std::logic_error("no gradient reached layer '" + layer.name() + "'");
  }
  LayerArgs& a = step.args;
  a.mask = {context.seed, context.step, context.worker, dropout_key(step.runner->layer())};

  if (layer.needs_input_gradient) {
    std::vector<Slot*> summed;
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      Slot* in = step.inputs[i];
      a.diff_inputs[i] = nullptr;
      if (!in->needs_gradient) continue;
      if (in->gradient_written) {
        if (in->scratch.empty()) in->scratch = backend_.allocate(in->value.desc());
        a.diff_inputs[i] = &in->scratch;
        summed.push_back(in);
      } else {
        a.diff_inputs[i] = &in->gradient;
      }
    }
    timed(&times_.backward_data, step.id, [&] { step.runner->backward_data(a); });
    for (Slot* in : summed) backend_.add_into(in->gradient, in->scratch);
    for (Slot* in : step.inputs) in->gradient_written = in->gradient_written || in->needs_gradient;
  }

  if (step.weight != nullptr || step.bias != nullptr) {
    const auto target = [&](Parameter* p, Tensor& scratch) -> Tensor* {
      if (p == nullptr) return nullptr;
      if (!accumulate) return p->gradient;
      if (scratch.empty()) scratch = backend_.allocate(p->gradient->desc());
      return &scratch;
    };
    a.diff_weights = target(step.weight, step.weight_scratch);
    a.diff_bias = target(step.bias, step.bias_scratch);
    timed(&times_.backward_weight, step.id, [&] { step.runner->backward_weight(a); });
    if (accumulate) {
      if (step.weight != nullptr) backend_.add_into(*step.weight->gradient, step.weight_scratch);
      if (step.bias != nullptr) backend_.add_into(*step.bias->gradient, step.bias_scratch);
    }
  }
}

float Network::loss() {
  if (!has_loss_) throw std::out_of_range("this range does not hold the loss");
  float value = 0.0F;
  backend_.copy_to_host(loss_, std::span<float>(&value, 1));
  return value;
}

std::vector<Network::Parameter*> Network::parameters_of(LayerId id) {
  std::vector<Parameter*> out;
  for (Parameter& p : parameters_) {
    if (p.layer == id) out.push_back(&p);
  }
  return out;
}

void Network::zero_gradients() {
  for (Parameter& p : parameters_) backend_.fill(*p.gradient, 0.0F);
}

void Network::sgd_step(const SgdOptions& options, float gradient_scale) {
  for (Parameter& p : parameters_) {
    backend_.sgd_update(*p.value, *p.gradient, *p.velocity, options, gradient_scale);
  }
}

}  // namespace ralp::kernels
