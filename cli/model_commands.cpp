// `ralp model list|show|export|import`: the zoo, a model's per-layer maths, ONNX import.
#include <filesystem>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "ralp/devices/cost_model.hpp"
#include "ralp/devices/profile_cost_model.hpp"
#include "ralp/model/model_file.hpp"
#include "ralp/model/model_zoo.hpp"
#include "ralp/onnx/onnx_import.hpp"

namespace ralp::cli {
namespace {

struct ShowOptions {
  std::string model;
  int64_t batch = 1;
  bool json = false;
  std::string device;
};

Json show_json(const LayerGraph& graph, int64_t batch, const CostModel* cost) {
  Json layers = Json::array();
  Flops forward;
  Flops backward;
  for (const Layer& layer : graph.layers()) {
    const LayerWork work = layer.work(batch);
    forward += work.forward.flops;
    backward += work.backward_data.flops + work.backward_weight.flops;
    Json j = {
        {"name", layer.name()},
        {"type", std::string(to_string(layer.kind()))},
        {"inputs", layer.spec.inputs},
        {"output_shape", {layer.output.channels, layer.output.height, layer.output.width}},
        {"params", layer.params()},
        {"weight_params", layer.weight_params},
        {"bias_params", layer.bias_params},
        {"fwd_flops", work.forward.flops.value()},
        {"bwd_data_flops", work.backward_data.flops.value()},
        {"bwd_weight_flops", work.backward_weight.flops.value()},
        {"activation_bytes", layer.activation_bytes_per_image().value() * batch},
    };
    if (cost != nullptr) {
      const LayerCost c = cost->estimate(make_layer_key(layer, batch));
      j["fwd_time_s"] = c.forward.value();
      j["bwd_time_s"] = c.backward().value();
      j["time_source"] = std::string(to_string(c.source));
    }
    layers.push_back(std::move(j));
  }
  const TensorShape& in = graph.input_shape();
  Json out = {{"name", graph.name()},
              {"input_shape", {in.channels, in.height, in.width}},
              {"batch", batch},
              {"params", graph.total_params()},
              {"param_bytes", graph.total_param_bytes().value()},
              {"fwd_flops", forward.value()},
              {"bwd_flops", backward.value()},
              {"layers", std::move(layers)}};
  if (cost != nullptr) out["cost_model"] = cost->describe();
  return out;
}

void show_table(const LayerGraph& graph, int64_t batch, const CostModel* cost) {
  std::vector<TextTable::Column> columns = {{"#"},
                                            {"layer", TextTable::Align::left},
                                            {"type", TextTable::Align::left},
                                            {"output", TextTable::Align::left},
                                            {"params"},
                                            {"fwd FLOP"},
                                            {"bwd FLOP"},
                                            {"activations"}};
  if (cost != nullptr) {
    columns.push_back({"fwd time"});
    columns.push_back({"bwd time"});
    columns.push_back({"source", TextTable::Align::left});
  }
  TextTable table(columns);
  Seconds fwd_total;
  Seconds bwd_total;
  Flops fwd_flops;
  Flops bwd_flops;
  Bytes activations;
  for (LayerId id = 0; id < graph.size(); ++id) {
    const Layer& layer = graph.layer(id);
    const LayerWork work = layer.work(batch);
    const Flops bwd = work.backward_data.flops + work.backward_weight.flops;
    fwd_flops += work.forward.flops;
    bwd_flops += bwd;
    activations += layer.activation_bytes_per_image() * static_cast<double>(batch);
    std::vector<std::string> row = {
        std::to_string(id),
        layer.name(),
        std::string(to_string(layer.kind())),
        layer.output.to_string(),
        with_commas(layer.params()),
        si(work.forward.flops.value(), ""),
        si(bwd.value(), ""),
        format_bytes(layer.activation_bytes_per_image() * static_cast<double>(batch))};
    if (cost != nullptr) {
      const LayerCost c = cost->estimate(make_layer_key(layer, batch));
      fwd_total += c.forward;
      bwd_total += c.backward();
      row.push_back(format_seconds(c.forward));
      row.push_back(format_seconds(c.backward()));
      row.push_back(std::string(to_string(c.source)));
    }
    table.add_row(std::move(row));
  }
  table.add_separator();
  std::vector<std::string> total = {"",
                                    "total",
                                    "",
                                    "",
                                    with_commas(graph.total_params()),
                                    si(fwd_flops.value(), ""),
                                    si(bwd_flops.value(), ""),
                                    format_bytes(activations)};
  if (cost != nullptr) {
    total.push_back(format_seconds(fwd_total));
    total.push_back(format_seconds(bwd_total));
    total.push_back("");
  }
  table.add_row(std::move(total));
  const TensorShape& in = graph.input_shape();
  std::cout << graph.name() << ": input " << in.to_string() << ", batch " << batch << ", "
            << with_commas(graph.total_params()) << " parameters ("
            << format_bytes(graph.total_param_bytes()) << ")\n";
  if (cost != nullptr) std::cout << "times: " << cost->describe() << "\n";
  table.print(std::cout);
}

}  // namespace

LayerGraph resolve_model(const std::string& name_or_file) {
  if (auto model = zoo_model(name_or_file)) return std::move(*model);
  std::error_code ec;
  if (std::filesystem::is_regular_file(name_or_file, ec)) {
    if (std::filesystem::path(name_or_file).extension() == ".onnx") {
      return load_onnx_model(name_or_file);
    }
    return load_model_file(name_or_file);
  }
  std::string names;
  std::vector<std::string> list;
  for (const auto& entry : zoo_entries()) {
    names += (names.empty() ? "" : ", ") + entry.name;
    list.push_back(entry.name);
  }
  throw InputError(name_or_file, "",
                   "neither a zoo model (" + names + ") nor a readable model file" +
                       did_you_mean(name_or_file, list));
}

void add_model_commands(CLI::App& app, Action& action) {
  auto* model = app.add_subcommand("model", "List the model zoo, show a model's layers, import ONNX files")
                    ->require_subcommand(1);

  auto* list = model->add_subcommand("list", "List the zoo models with parameters and FLOPs");
  auto list_json = std::make_shared<bool>(false);
  list->add_flag("--json", *list_json, "Print JSON instead of a table");
  list->callback([&action, list_json] {
    action = [json = *list_json] {
      Json out = Json::array();
      TextTable table({{"model", TextTable::Align::left},
                       {"input", TextTable::Align::left},
                       {"params"},
                       {"fwd FLOP/image"},
                       {"description", TextTable::Align::left}});
      for (const auto& entry : zoo_entries()) {
        const LayerGraph graph = *zoo_model(entry.name);
        out.push_back({{"name", entry.name},
                       {"description", entry.description},
                       {"params", graph.total_params()},
                       {"fwd_flops", graph.forward_flops_per_image().value()}});
        table.add_row({entry.name, graph.input_shape().to_string(),
                       with_commas(graph.total_params()),
                       si(graph.forward_flops_per_image().value(), ""), entry.description});
      }
      if (json) {
        std::cout << out.dump(2) << '\n';
      } else {
        table.print(std::cout);
      }
      return kExitOk;
    };
  });

  auto options = std::make_shared<ShowOptions>();
  auto* show = model->add_subcommand(
      "show", "Per-layer shapes, parameters, FLOPs and activations of a zoo model or model file");
  show->add_option("model", options->model, "Zoo model name, model file (JSON) or ONNX file (.onnx)")->required();
  show->add_option("--batch", options->batch, "Batch size for FLOPs, activations and times")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  show->add_flag("--json", options->json, "Print JSON instead of a table");
  show->add_option("--device", options->device,
                   "Device profile: adds each layer's forward and backward time");
  show->callback([&action, options] {
    action = [options] {
      const LayerGraph graph = resolve_model(options->model);
      std::unique_ptr<CostModel> cost;
      if (!options->device.empty()) {
        const auto path = find_profile(options->device);
        const auto profile = path ? load_device_profile(*path)
                                  : load_device_profile(options->device);
        cost = make_cost_model(profile);
      }
      if (options->json) {
        std::cout << show_json(graph, options->batch, cost.get()).dump(2) << '\n';
      } else {
        show_table(graph, options->batch, cost.get());
      }
      return kExitOk;
    };
  });

  auto export_model = std::make_shared<std::string>();
  auto* exp = model->add_subcommand(
      "export", "Print a model as a model file, a starting point for your own models");
  exp->add_option("model", *export_model, "Zoo model name or model file")->required();
  exp->callback([&action, export_model] {
    action = [export_model] {
      std::cout << model_to_json(resolve_model(*export_model)).dump(2) << '\n';
      return kExitOk;
    };
  });

  struct ImportOptions {
    std::string file;
    std::string input;
    std::string name;
  };
  auto import_options = std::make_shared<ImportOptions>();
  auto* imp = model->add_subcommand(
      "import", "Read an ONNX file (PyTorch, TensorFlow) and print it as a model file");
  imp->add_option("file", import_options->file, "ONNX file")->required();
  imp->add_option("--input", import_options->input,
                  "Image shape CxHxW (e.g. 3x224x224): needed when the file leaves it dynamic");
  imp->add_option("--name", import_options->name, "Model name (default: the file's stem)");
  imp->callback([&action, import_options] {
    action = [import_options] {
      OnnxImportOptions onnx;
      onnx.name = import_options->name;
      if (!import_options->input.empty()) {
        onnx.input = parse_shape_text(import_options->input);
        if (!onnx.input) {
          throw InputError("--input", "", "is '" + import_options->input +
                                              "', expected CxHxW such as 3x224x224");
        }
      }
      std::cout << model_to_json(load_onnx_model(import_options->file, onnx)).dump(2) << '\n';
      return kExitOk;
    };
  });
}

}  // namespace ralp::cli
