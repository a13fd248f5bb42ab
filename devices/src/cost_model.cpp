// Layer keys and whole-model cost tables.
#include "ralp/devices/cost_model.hpp"

namespace ralp {

std::string_view to_string(CostSource source) {
  switch (source) {
    case CostSource::measured:
      return "measured";
    case CostSource::fitted:
      return "fitted";
    case CostSource::published:
      return "published";
    case CostSource::datasheet:
      return "datasheet";
  }
  return "unknown";
}

LayerKey make_layer_key(const Layer& layer, int64_t batch) {
  LayerKey key{layer.signature(), layer.kind(), batch, layer.work(batch)};
  if (!layer.input_shapes.empty()) key.input = layer.input_shapes.front();
  key.output = layer.output;
  key.attrs = layer.spec.attrs;
  key.needs_input_gradient = layer.needs_input_gradient;
  return key;
}

ModelCost model_cost(const LayerGraph& graph, const CostModel& model, int64_t batch) {
  return model_cost(graph, model, batch, 0, graph.size());
}

ModelCost model_cost(const LayerGraph& graph, const CostModel& model, int64_t batch, LayerId first,
                     LayerId last) {
  ModelCost out;
  out.layers.reserve(last - first);
  for (LayerId id = first; id < last; ++id) {
    const LayerCost cost = model.estimate(make_layer_key(graph.layer(id), batch));
    out.forward += cost.forward;
    out.backward += cost.backward();
    const bool has_work = cost.forward.value() > 0.0 || cost.backward().value() > 0.0;
    if (has_work) {
      switch (cost.source) {
        case CostSource::measured:
          ++out.measured;
          break;
        case CostSource::fitted:
          ++out.fitted;
          break;
        case CostSource::published:
          ++out.published;
          break;
        case CostSource::datasheet:
          ++out.datasheet;
          break;
      }
    }
    out.layers.push_back(cost);
  }
  return out;
}

}  // namespace ralp
