"""Exports torchvision models to ONNX and compares ralp's import of each with the zoo model.

Run by check-torchvision. Each model is exported the way docs/model-format.md tells users to:
training mode and no constant folding, so that BatchNormalization and Dropout stay in the file
as the zoo counts them. Auxiliary heads are off (the zoo has none) and Inception-v3 does not
transform its input. EfficientNet-B0 is exported with stochastic_depth_prob=0 (torch 1.13 cannot
export its Bernoulli draw; it scales the branch and costs nothing in the step). The models with
no zoo counterpart (MobileNetV3-Large, RegNetY-400MF, ResNeXt-50 32x4d) must import with
torchvision's exact parameter count."""
import json
import os
import subprocess
import sys
import warnings

import torch
import torchvision

SKIP = 77
RESNET50_PARAMS = 25_557_032
M = torchvision.models
MODELS = {
    "alexnet": (lambda: M.alexnet(), 224),
    "vgg16": (lambda: M.vgg16(), 224),
    "resnet50": (lambda: M.resnet50(), 224),
    "googlenet": (lambda: M.googlenet(aux_logits=False, init_weights=True), 224),
    "inception_v3": (lambda: M.inception_v3(aux_logits=False, init_weights=True,
                                            transform_input=False), 299),
    "efficientnet_b0": (lambda: M.efficientnet_b0(stochastic_depth_prob=0.0), 224),
    "mobilenet_v3_large": (lambda: M.mobilenet_v3_large(), 224),
    "regnet_y_400mf": (lambda: M.regnet_y_400mf(), 224),
    "resnext50_32x4d": (lambda: M.resnext50_32x4d(), 224),
}
# Models the zoo lacks: the import must give sum(p.numel() for p in model.parameters()).
IMPORT_ONLY = {"mobilenet_v3_large", "regnet_y_400mf", "resnext50_32x4d"}
SIMULATED = {
    "batch_per_worker": 32,
    "cluster": {"workers": 4, "parameter_servers": 1, "worker_device": "gtx1080ti",
                "ps_device": "gtx1080ti",
                "platform": {"kind": "star", "nic_bandwidth": "1Gbps", "latency": "50us"}},
    "strategies": ["ps", "allreduce", {"name": "ralp", "cut": "avgpool"}],
    "steps": 3, "warmup_steps": 1, "seed": 1,
}


def run(ralp, *args):
    done = subprocess.run([ralp, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"FAIL: ralp {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def export(name, path):
    build, size = MODELS[name]
    torch.manual_seed(0)
    model = build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, torch.randn(1, 3, size, size), path,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)


def layer_key(layer):
    return (layer["type"], tuple(layer["output_shape"]), layer["params"], layer["fwd_flops"],
            layer["bwd_data_flops"], layer["bwd_weight_flops"])


def compare(name, imported, zoo):
    """Totals must be equal, and every layer but the concatenations one to one in order: they
    hold no parameters and do no FLOPs, and the exporter merges nested ones (Inception-v3's)."""
    problems = []
    for key in ("params", "fwd_flops", "bwd_flops", "input_shape"):
        if imported[key] != zoo[key]:
            problems.append(f"{key} {imported[key]} != zoo {zoo[key]}")
    ours = [l for l in imported["layers"] if l["type"] != "concat"]
    theirs = [l for l in zoo["layers"] if l["type"] != "concat"]
    if len(ours) != len(theirs):
        problems.append(f"{len(ours)} layers (not counting concat) != zoo {len(theirs)}")
    for a, b in zip(ours, theirs):
        if layer_key(a) != layer_key(b):
            problems.append(f"layer {a['name']} {layer_key(a)} != zoo {b['name']} {layer_key(b)}")
            break
    return problems


def simulate(ralp, work, model, tag):
    scenario = dict(SIMULATED, name="resnet50-onnx-check", model=model)
    path = os.path.join(work, f"{tag}.json")
    with open(path, "w") as f:
        json.dump(scenario, f)
    out = os.path.join(work, f"{tag}.out.json")
    run(ralp, "simulate", path, "--quiet", "--jobs", "1", "--json", out)
    with open(out) as f:
        return json.load(f)["results"]


def main():
    if len(sys.argv) < 3:
        raise SystemExit("usage: check-torchvision RALP_BINARY WORK_DIR [MODEL...]")
    ralp, work = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or list(MODELS)
    probe = subprocess.run([ralp, "model", "import", os.devnull], capture_output=True, text=True)
    if "built without ONNX" in probe.stderr:
        print("skipped: ralp was built without ONNX import (libonnx-dev, libprotobuf-dev)")
        return SKIP
    os.makedirs(work, exist_ok=True)
    failures = 0
    for name in names:
        path = os.path.join(work, f"{name}.onnx")
        export(name, path)
        imported = json.loads(run(ralp, "model", "show", path, "--json"))
        if name in IMPORT_ONLY:
            torch_params = sum(p.numel() for p in MODELS[name][0]().parameters())
            problems = [] if imported["params"] == torch_params else [
                f"params {imported['params']} != torchvision {torch_params}"]
        else:
            zoo = json.loads(run(ralp, "model", "show", name, "--json"))
            problems = compare(name, imported, zoo)
        if name == "resnet50":
            if imported["params"] != RESNET50_PARAMS:
                problems.append(f"params {imported['params']} != {RESNET50_PARAMS}")
            # A build without SimGrid has a `simulate` that only says so.
            helped = subprocess.run([ralp, "simulate", "--help"], capture_output=True, text=True)
            has_sim = helped.returncode == 0 and "not in this build" not in helped.stdout
            if not has_sim:
                print("note: this ralp has no simulator: the simulated comparison is left out")
            else:
                ours = simulate(ralp, work, {"onnx": path, "name": "resnet50"}, "onnx")
                theirs = simulate(ralp, work, "resnet50", "zoo")
                if ours != theirs:
                    problems.append("simulated results differ from the zoo's resnet50")
        os.remove(path)
        status = "FAIL" if problems else "ok"
        print(f"{status}: {name}: {imported['params']:,} parameters, "
              f"{imported['fwd_flops']:.6g} forward FLOP/image, {len(imported['layers'])} layers")
        for problem in problems:
            print(f"  {problem}")
        failures += bool(problems)
    print(f"{len(names) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
