// LayerGraph: building the Boost.Graph DAG, shape inference in execution order, and cuts.
#include "ralp/model/layer_graph.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include <boost/graph/adjacency_list.hpp>

namespace ralp {

struct LayerGraph::Graph {
  // Vertex i is layer i; an edge u -> v means v reads u's output.
  boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS> dag;
};

LayerGraph::LayerGraph(std::string name, TensorShape input, std::vector<LayerSpec> specs)
    : name_(std::move(name)), input_(input), graph_(std::make_unique<Graph>()) {
  if (input_.channels < 1 || input_.height < 1 || input_.width < 1) {
    throw ModelError(0, "input", "the model input must have every dimension >= 1, got " +
                                     input_.to_string());
  }
  if (specs.empty()) throw ModelError(0, "", "a model needs at least one layer");

  std::map<std::string, LayerId, std::less<>> ids;
  std::vector<bool> requires_grad;  // does layer i's output depend on a parameter?
  layers_.reserve(specs.size());
  graph_->dag = decltype(graph_->dag)(specs.size());

  for (size_t index = 0; index < specs.size(); ++index) {
    LayerSpec& spec = specs[index];
    if (spec.name.empty()) throw ModelError(index, "name", "must not be empty");
    if (spec.name == kModelInputName || ids.contains(spec.name)) {
      throw ModelError(index, "name", "'" + spec.name + "' is already taken");
    }
    if (spec.inputs.empty()) {
      spec.inputs.push_back(index == 0 ? std::string(kModelInputName) : specs[index - 1].name);
    }
    std::vector<TensorShape> shapes;
    bool any_grad = false;
    bool reads_input = false;
    for (const auto& source : spec.inputs) {
      if (source == kModelInputName) {
        shapes.push_back(input_);
        reads_input = true;
        continue;
      }
      const auto found = ids.find(source);
      if (found == ids.end()) {
        throw ModelError(index, "inputs",
                         "names '" + source + "', expected \"input\" or an earlier layer's name");
      }
      if (!boost::edge(found->second, index, graph_->dag).second) {
        boost::add_edge(found->second, index, graph_->dag);
      }
      shapes.push_back(layers_[found->second].output);
      any_grad = any_grad || requires_grad[found->second];
    }
    Layer layer = infer_layer(spec, std::move(shapes), index);
    layer.needs_input_gradient = any_grad;
    layer.reads_model_input = reads_input;
    requires_grad.push_back(any_grad || layer.params() > 0);
    ids.emplace(spec.name, index);
    layers_.push_back(std::move(layer));
  }

  const LayerId last = layers_.size() - 1;
  for (LayerId id = 0; id < layers_.size(); ++id) {
    const bool is_loss = layers_[id].kind() == LayerKind::softmax_cross_entropy;
    if (id == last && !is_loss) {
      throw ModelError(id, "type", "the last layer must be softmax_cross_entropy (the loss)");
    }
    if (id != last && is_loss) {
      throw ModelError(id, "type", "softmax_cross_entropy must be the last layer");
    }
    if (id != last && boost::out_degree(id, graph_->dag) == 0) {
      throw ModelError(id, "", "layer '" + layers_[id].name() +
                                   "' feeds no other layer: only the loss may end the model");
    }
  }
}

LayerGraph::~LayerGraph() = default;
LayerGraph::LayerGraph(LayerGraph&&) noexcept = default;
LayerGraph& LayerGraph::operator=(LayerGraph&&) noexcept = default;

LayerGraph::LayerGraph(const LayerGraph& other)
    : name_(other.name_),
      input_(other.input_),
      layers_(other.layers_),
      graph_(std::make_unique<Graph>(*other.graph_)) {}

LayerGraph& LayerGraph::operator=(const LayerGraph& other) {
  if (this != &other) *this = LayerGraph(other);
  return *this;
}

std::optional<LayerId> LayerGraph::find(std::string_view layer_name) const {
  for (LayerId id = 0; id < layers_.size(); ++id) {
    if (layers_[id].name() == layer_name) return id;
  }
  return std::nullopt;
}

std::vector<LayerId> LayerGraph::predecessors(LayerId id) const {
  std::vector<LayerId> out;
  for (auto [it, end] = boost::in_edges(id, graph_->dag); it != end; ++it) {
    out.push_back(boost::source(*it, graph_->dag));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<LayerId> LayerGraph::successors(LayerId id) const {
  std::vector<LayerId> out;
  for (auto [it, end] = boost::out_edges(id, graph_->dag); it != end; ++it) {
    out.push_back(boost::target(*it, graph_->dag));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int64_t LayerGraph::total_params() const {
  int64_t sum = 0;
  for (const auto& layer : layers_) sum += layer.params();
  return sum;
}

Bytes LayerGraph::total_param_bytes() const {
  return Bytes(static_cast<double>(total_params()) * kBytesPerFloat);
}

Flops LayerGraph::forward_flops_per_image() const {
  Flops sum;
  for (const auto& layer : layers_) sum += layer.work(1).forward.flops;
  return sum;
}

Bytes LayerGraph::activation_bytes_per_image() const {
  Bytes sum;
  for (const auto& layer : layers_) sum += layer.activation_bytes_per_image();
  return sum;
}

std::vector<LayerId> LayerGraph::cut_points() const {
  std::vector<LayerId> out;
  for (LayerId id = 1; id < layers_.size(); ++id) out.push_back(id);
  return out;
}

CutInfo LayerGraph::describe_cut(LayerId first_head) const {
  if (first_head == 0 || first_head >= layers_.size()) {
    throw std::out_of_range("cut at layer " + std::to_string(first_head) + " of " +
                            std::to_string(layers_.size()));
  }
  CutInfo info;
  info.first_head = first_head;
  std::set<LayerId> boundary;
  for (LayerId id = 0; id < layers_.size(); ++id) {
    if (id < first_head) {
      info.tail_params += layers_[id].params();
      continue;
    }
    info.head_params += layers_[id].params();
    if (layers_[id].reads_model_input) info.boundary_has_model_input = true;
    for (const LayerId pred : predecessors(id)) {
      if (pred < first_head) boundary.insert(pred);
    }
  }
  info.boundary.assign(boundary.begin(), boundary.end());
  for (const LayerId id : info.boundary) {
    info.boundary_bytes_per_image += layers_[id].activation_bytes_per_image();
  }
  if (info.boundary_has_model_input) {
    info.boundary_bytes_per_image += Bytes(input_.elements() * kBytesPerFloat);
  }
  return info;
}

LayerGraph LayerGraph::reordered(const std::vector<LayerId>& order) const {
  const size_t n = layers_.size();
  if (order.size() != n) {
    throw std::invalid_argument("a reordering of " + std::to_string(n) + " layers lists " +
                                std::to_string(order.size()));
  }
  constexpr LayerId kUnplaced = static_cast<LayerId>(-1);
  std::vector<LayerId> new_id(n, kUnplaced);
  for (LayerId i = 0; i < n; ++i) {
    if (order[i] >= n || new_id[order[i]] != kUnplaced) {
      throw std::invalid_argument("a reordering must list every layer id once");
    }
    new_id[order[i]] = i;
  }
  LayerGraph out;
  out.name_ = name_;
  out.input_ = input_;
  out.layers_.reserve(n);
  out.graph_ = std::make_unique<Graph>();
  out.graph_->dag = decltype(out.graph_->dag)(n);
  for (LayerId i = 0; i < n; ++i) {
    const LayerId old = order[i];
    for (const LayerId pred : predecessors(old)) {
      if (new_id[pred] >= i) {
        throw std::invalid_argument("a reordering puts layer '" + layers_[old].name() +
                                    "' before its input '" + layers_[pred].name() + "'");
      }
      boost::add_edge(new_id[pred], i, out.graph_->dag);
    }
    out.layers_.push_back(layers_[old]);
  }
  return out;
}

}  // namespace ralp
