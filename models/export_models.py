#!/usr/bin/python3
"""Exports kiln's model zoo to ONNX (run with Debian's /usr/bin/python3).

  /usr/bin/python3 models/export_models.py --out DIR [--forms default,raw] [--size tiny|full|all] [MODEL ...]

The zoo is listed in models/zoo.json: ResNet-50, MobileNetV2, SSDLite320-
MobileNetV3 (with pre- and post-processing) and a BERT-base encoder, plus a
tiny variant of each class. Every model is written in two forms:
  DIR/<model>-default.onnx  as torch.onnx exports it (Conv+BatchNorm fused,
                            constants folded)
  DIR/<model>-raw.onnx      BatchNorm kept, no constant folding
The demo model tiny_cnn (models/tiny/tiny_cnn.onnx, dynamic batch) is exported
with `tiny_cnn` as MODEL. All weights are random (BatchNorm statistics too, so
activations keep a realistic scale); the seed is fixed, so the same torch
version writes byte-identical files.
"""
import argparse
import functools
import inspect
import json
import os
import sys

import torch

ZOO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zoo.json")


class TinyCnn(torch.nn.Module):
    """A small residual CNN with the ops of the ResNet family (Conv, BN, ReLU,
    MaxPool, Add, GlobalAveragePool, Gemm) and a Softmax head."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2))
        self.block = torch.nn.Sequential(
            torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3, padding=1))
        self.head = torch.nn.Linear(8, 10)

    def forward(self, x):
        y = self.stem(x)
        y = torch.relu(y + self.block(y))
        y = torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)
        return torch.softmax(self.head(y), dim=1)


class TinyResNet(torch.nn.Module):
    """ResNet-50's structure with torchvision's Bottleneck block, one block
    per stage and 1/16 of the width."""

    def __init__(self, num_classes=10):
        super().__init__()
        from torchvision.models.resnet import Bottleneck
        nn = torch.nn
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(3, stride=2, padding=1))
        blocks, inplanes = [], 8
        for planes, stride in [(4, 1), (8, 2), (16, 2), (32, 2)]:
            down = nn.Sequential(nn.Conv2d(inplanes, planes * 4, 1, stride=stride, bias=False),
                                 nn.BatchNorm2d(planes * 4))
            blocks.append(Bottleneck(inplanes, planes, stride, down))
            inplanes = planes * 4
        self.stages = nn.Sequential(*blocks)
        self.fc = nn.Linear(inplanes, num_classes)

    def forward(self, x):
        y = self.stages(self.stem(x))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))


class BertEncoder(torch.nn.Module):
    """BERT as in the paper: token, position and segment embeddings with
    LayerNorm, then post-norm layers of multi-head self-attention and a GELU
    (erf) feed-forward block. Returns the last hidden states."""

    def __init__(self, layers, hidden, heads, vocab=30522, max_len=512):
        super().__init__()
        self.words = torch.nn.Embedding(vocab, hidden)
        self.positions = torch.nn.Embedding(max_len, hidden)
        self.segments = torch.nn.Embedding(2, hidden)
        self.norm = torch.nn.LayerNorm(hidden, eps=1e-12)
        self.layers = torch.nn.ModuleList([BertLayer(hidden, heads) for _ in range(layers)])

    def forward(self, input_ids, attention_mask):
        n = input_ids.shape[1]
        positions = torch.arange(n, dtype=torch.long, device=input_ids.device).unsqueeze(0)
        x = self.norm(self.words(input_ids) + self.positions(positions) + self.segments(torch.zeros_like(input_ids)))
        bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, bias)
        return x


class BertLayer(torch.nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.q = torch.nn.Linear(hidden, hidden)
        self.k = torch.nn.Linear(hidden, hidden)
        self.v = torch.nn.Linear(hidden, hidden)
        self.out = torch.nn.Linear(hidden, hidden)
        self.norm1 = torch.nn.LayerNorm(hidden, eps=1e-12)
        self.up = torch.nn.Linear(hidden, 4 * hidden)
        self.down = torch.nn.Linear(4 * hidden, hidden)
        self.norm2 = torch.nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, bias):
        b, n, h = x.shape
        d = h // self.heads
        split = lambda t: t.view(b, n, self.heads, d).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / (d ** 0.5) + bias
        context = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, n, h)
        x = self.norm1(x + self.out(context))
        return self.norm2(x + self.down(torch.nn.functional.gelu(self.up(x))))


class GptDecoder(torch.nn.Module):
    """A GPT-2-style decoder over a KV cache: token and position embeddings,
    pre-LayerNorm blocks of causal multi-head self-attention (one fused QKV
    projection) and a GELU (tanh) MLP, a final LayerNorm and a linear head
    to the logits (untied: with random weights a tied head makes greedy
    decoding repeat the last token). Takes input_ids [batch, seq] and each layer's
    past key and value [batch, heads, past, head_dim] (past = tokens already
    seen); returns logits [batch, seq, vocab] and each layer's present key and
    value [batch, heads, past + seq, head_dim], which the next step takes as
    its past. Query i (position past + i) attends keys 0..past + i."""

    def __init__(self, layers, hidden, heads, vocab, max_len):
        super().__init__()
        self.heads = heads
        self.words = torch.nn.Embedding(vocab, hidden)
        self.positions = torch.nn.Embedding(max_len, hidden)
        self.blocks = torch.nn.ModuleList([GptBlock(hidden, heads) for _ in range(layers)])
        self.norm = torch.nn.LayerNorm(hidden)
        self.head = torch.nn.Linear(hidden, vocab, bias=False)
        with torch.no_grad():  # logits far apart: greedy decoding meets no near tie
            self.words.weight.normal_(0.0, 1.0)
            self.positions.weight.normal_(0.0, 1.0)
            self.head.weight.normal_(0.0, 1.0)

    def forward(self, input_ids, *past):
        past_len, seq = past[0].shape[2], input_ids.shape[1]
        positions = torch.arange(past_len, past_len + seq, dtype=torch.long, device=input_ids.device)
        x = self.words(input_ids) + self.positions(positions).unsqueeze(0)
        keys = torch.arange(0, past_len + seq, dtype=torch.long, device=input_ids.device)
        future = keys.unsqueeze(0) > positions.unsqueeze(1)  # [seq, past + seq]
        presents = []
        for i, block in enumerate(self.blocks):
            x, key, value = block(x, past[2 * i], past[2 * i + 1], future)
            presents += [key, value]
        return (self.head(self.norm(x)), *presents)


class GptBlock(torch.nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.out = torch.nn.Linear(hidden, hidden)
        self.norm2 = torch.nn.LayerNorm(hidden)
        self.up = torch.nn.Linear(hidden, 4 * hidden)
        self.down = torch.nn.Linear(4 * hidden, hidden)

    def forward(self, x, past_key, past_value, future):
        b, n, h = x.shape
        d = h // self.heads
        split = lambda t: t.view(b, n, self.heads, d).transpose(1, 2)
        q, k, v = self.qkv(self.norm1(x)).split(h, dim=2)
        key = torch.cat([past_key, split(k)], dim=2)
        value = torch.cat([past_value, split(v)], dim=2)
        scores = torch.matmul(split(q), key.transpose(-1, -2)) / (d ** 0.5)
        scores = scores.masked_fill(future, float("-inf"))
        context = torch.matmul(torch.softmax(scores, dim=-1), value).transpose(1, 2).reshape(b, n, h)
        x = x + self.out(context)
        x = x + self.down(torch.nn.functional.gelu(self.up(self.norm2(x)), approximate="tanh"))
        return x, key, value


class Detector(torch.nn.Module):
    """torchvision's SSD inference path (SSD.forward in eval mode) for one
    image, returning the detections and also the raw head outputs, so a
    comparison can check the network tightly and the post-processing (whose
    top-k and NMS may order near-equal scores differently) by matching."""

    def __init__(self, ssd):
        super().__init__()
        self.ssd = ssd

    def forward(self, image):
        m = self.ssd
        images, _ = m.transform([image])
        features = list(m.backbone(images.tensors).values())
        head = m.head(features)
        anchors = m.anchor_generator(images, features)
        detections = m.postprocess_detections(head, anchors, images.image_sizes)
        d = m.transform.postprocess(detections, images.image_sizes, [(image.shape[-2], image.shape[-1])])[0]
        return d["boxes"], d["scores"], d["labels"], head["cls_logits"], head["bbox_regression"]


def ssdlite(width_mult, extra_width, num_classes, size):
    """SSDLite with a MobileNetV3-Large backbone, built as torchvision's
    ssdlite320_mobilenet_v3_large builds it, with the widths as parameters."""
    from torch import nn
    from torchvision.models import mobilenet_v3_large
    from torchvision.models.detection import _utils as det_utils
    from torchvision.models.detection.anchor_utils import DefaultBoxGenerator
    from torchvision.models.detection.ssd import SSD
    from torchvision.models.detection.ssdlite import SSDLiteFeatureExtractorMobileNet, SSDLiteHead, _normal_init
    norm = functools.partial(nn.BatchNorm2d, eps=0.001, momentum=0.03)
    mobilenet = mobilenet_v3_large(weights=None, norm_layer=norm, reduced_tail=True, width_mult=width_mult)
    _normal_init(mobilenet)
    features = mobilenet.features
    stages = [0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)] + [len(features) - 1]
    backbone = SSDLiteFeatureExtractorMobileNet(features, stages[-2], norm, width_mult=extra_width)
    anchors = DefaultBoxGenerator([[2, 3] for _ in range(6)], min_ratio=0.2, max_ratio=0.95)
    head = SSDLiteHead(det_utils.retrieve_out_channels(backbone, size), anchors.num_anchors_per_location(),
                       num_classes, norm)
    return SSD(backbone, anchors, size, num_classes, head=head, score_thresh=0.001, nms_thresh=0.55,
               detections_per_img=300, topk_candidates=300, image_mean=[0.5] * 3, image_std=[0.5] * 3)


def scale_preserving_init(model, gain=0.85):
    """He (fan-in) initialisation scaled by `gain` for every convolution, small
    random biases. torchvision's SSDLite initialises with N(0, 0.03), under
    which random-weight activations fade until the output no longer depends on
    the image and class scores tie by the hundred (so top-k and NMS compare
    ties). Full He init (gain 1) overshoots into a chaotic regime where float32
    rounding is amplified ~1000x through the depth. At 0.85 the detections
    depend on the image, the 300 kept scores are distinct and spread over
    0.4-0.8, and float32 stays within 3e-6 of float64 (measured with torch)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Conv2d):
                torch.nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
                m.weight.mul_(gain)
                if m.bias is not None:
                    m.bias.uniform_(-0.1, 0.1)
    return model


def randomize_batchnorm(model):
    """Random running statistics and affine parameters for every BatchNorm, so
    activations keep a realistic scale (torchvision's init leaves mean 0, var 1,
    which makes some random-weight models output values near 1e-9)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    return model


def build(name):
    """The torch module for a zoo model (seeded)."""
    torch.manual_seed(0)
    import torchvision
    if name == "tiny_cnn":
        return randomize_batchnorm(TinyCnn())
    if name == "resnet50":
        return randomize_batchnorm(torchvision.models.resnet50())
    if name == "resnet_tiny":
        return randomize_batchnorm(TinyResNet())
    if name == "mobilenet_v2":
        return randomize_batchnorm(torchvision.models.mobilenet_v2())
    if name == "mobilenet_tiny":
        from torchvision.ops.misc import Conv2dNormActivation
        stages = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 2, 2], [6, 64, 2, 2], [6, 96, 1, 1]]
        model = torchvision.models.mobilenet_v2(num_classes=10, width_mult=0.25, inverted_residual_setting=stages)
        model.features[-1] = Conv2dNormActivation(24, 128, kernel_size=1, activation_layer=torch.nn.ReLU6)
        model.classifier[1] = torch.nn.Linear(128, 10)
        return randomize_batchnorm(model)
    if name == "ssdlite320":
        from torchvision.models.detection import ssdlite320_mobilenet_v3_large
        model = ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)
        return Detector(randomize_batchnorm(scale_preserving_init(model)))
    if name == "ssdlite_tiny":
        return Detector(randomize_batchnorm(scale_preserving_init(ssdlite(0.125, 0.0625, 11, (160, 160)))))
    if name == "bert_base":
        return BertEncoder(12, 768, 12)
    if name == "bert_tiny":
        return BertEncoder(2, 32, 4, vocab=512, max_len=64)
    if name == "gpt_tiny":
        return GptDecoder(2, 64, 4, vocab=512, max_len=256)
    if name == "gpt_small":
        return GptDecoder(6, 512, 8, vocab=8192, max_len=1024)
    raise SystemExit(f"export_models: unknown model '{name}' (see {ZOO})")


def example_inputs(spec):
    """Seeded example inputs from a zoo.json input spec (tracing only; the
    exported graphs do not depend on the values)."""
    gen = torch.Generator().manual_seed(1)
    out = []
    for s in spec["inputs"].values():
        if s["dtype"] == "int64":
            out.append(torch.randint(int(s["low"]), int(s["high"]), s["shape"], generator=gen))
        else:
            out.append(torch.rand(s["shape"], generator=gen) * (s["high"] - s["low"]) + s["low"])
    return tuple(out)


def export(name, spec, form, path, opset):
    model = build(name).eval()
    options = {"do_constant_folding": True} if form == "default" else {
        # PRESERVE keeps the module's (eval) mode but skips the eval peephole
        # that fuses BatchNorm into Conv.
        "do_constant_folding": False, "training": torch.onnx.TrainingMode.PRESERVE}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        options["dynamo"] = False  # newer torch: the TorchScript exporter these options belong to
    dynamic = spec.get("dynamic_axes")
    if dynamic:  # zoo.json writes the axes as strings
        dynamic = {name: {int(axis): dim for axis, dim in axes.items()} for name, axes in dynamic.items()}
    with torch.no_grad():
        torch.onnx.export(model, example_inputs(spec), path, input_names=list(spec["inputs"]),
                          output_names=spec["outputs"], opset_version=opset, dynamic_axes=dynamic, **options)


TINY_CNN = {"name": "tiny_cnn", "inputs": {"input": {"shape": [1, 3, 32, 32], "dtype": "float32", "low": -1, "high": 1}},
            "outputs": ["probabilities"], "dynamic_axes": {"input": {0: "batch"}, "probabilities": {0: "batch"}}}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--forms", default="default,raw", help="comma-separated: default, raw")
    parser.add_argument("--size", choices=["tiny", "full", "all"], default="all",
                        help="which zoo models when none are named")
    parser.add_argument("--opset", type=int, default=13)
    parser.add_argument("--batch", type=int, default=0,
                        help="export at this batch size (first input dim) as <model>-b<N>-<form>.onnx")
    parser.add_argument("--dynamic", action="store_true",
                        help="export with dynamic axes as <model>-dyn-<form>.onnx: every input's and output's dim 0 "
                             "is 'batch', and a BERT's dim 1 'seq'")
    parser.add_argument("models", nargs="*", help="zoo model names (default: every model of --size)")
    args = parser.parse_args()
    with open(ZOO) as f:
        zoo = {m["name"]: m for m in json.load(f)["models"]}
    forms = [f for f in args.forms.split(",") if f]
    for f in forms:
        if f not in ("default", "raw"):
            raise SystemExit(f"export_models: unknown form '{f}' (default, raw)")
    names = args.models or [n for n, m in zoo.items() if args.size in ("all", m["size"])]
    os.makedirs(args.out, exist_ok=True)
    for name in names:
        if name == "tiny_cnn":
            path = os.path.join(args.out, "tiny_cnn.onnx")
            export(name, TINY_CNN, "default", path, args.opset)
            print(f"wrote {path} ({os.path.getsize(path)} bytes)", file=sys.stderr)
            continue
        if name not in zoo:
            raise SystemExit(f"export_models: unknown model '{name}' (see {ZOO})")
        spec, stem = zoo[name], name
        if args.batch:
            if zoo[name]["class"] == "SSD":
                raise SystemExit(f"export_models: {name} takes one image; --batch does not apply")
            spec, stem = json.loads(json.dumps(spec)), f"{name}-b{args.batch}"
            for s in spec["inputs"].values():
                s["shape"][0] = args.batch
        if args.dynamic:
            axes = {0: "batch", 1: "seq"} if spec["class"] == "BR" else {0: "batch"}
            spec, stem = dict(spec), f"{stem}-dyn"
            spec["dynamic_axes"] = {n: axes for n in list(spec["inputs"]) + spec["outputs"]}
        for form in forms:
            path = os.path.join(args.out, f"{stem}-{form}.onnx")
            export(name, spec, form, path, args.opset)
            print(f"wrote {path} ({os.path.getsize(path)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
