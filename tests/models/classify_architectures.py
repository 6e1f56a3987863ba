#!/usr/bin/python3
"""Architecture classification on models the classifier was not designed on.

Exports torchvision architectures (random weights) and a few encoders
written with torch.nn to ONNX, runs `kiln passes classify --json` on each
and checks the classes against what the research's four classes say they
are (RN residual/plain CNNs, MN depthwise-separable CNNs, SSD detectors with
NMS post-processing or box heads joined across scales, BR attention models,
RN and BR both for a transformer over a ResNet trunk; an LSTM has none). The tiny forms
(small widths and inputs, exported in seconds) are a CI test; the full forms
(torchvision's own configurations) give the table in docs/pass-selection.md.

    classify_architectures.py --kiln build/tools/kiln/kiln --work DIR [--size tiny|full] [--markdown] [--only A,B]

Exit status 1 when a model is classified other than expected.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models"))
from export_models import Detector as SsdDetector  # noqa: E402  torchvision SSD's inference path, as the zoo exports it

tv = torchvision.models
det = torchvision.models.detection


class Detector(torch.nn.Module):
    """A torchvision RetinaNet / FCOS inference path for one image (their
    eval-mode forward, with the per-level split it does), exportable."""

    def __init__(self, model):
        super().__init__()
        self.m = model

    def forward(self, image):
        m = self.m
        images, _ = m.transform([image])
        features = list(m.backbone(images.tensors).values())
        head, anchors = m.head(features), m.anchor_generator(images, features)
        per_level = [x.size(2) * x.size(3) for x in features]
        per_anchor = head["cls_logits"].size(1) // sum(per_level)
        per_level = [n * per_anchor for n in per_level]
        split_head = {k: list(head[k].split(per_level, dim=1)) for k in head}
        split_anchors = [list(a.split(per_level)) for a in anchors]
        found = m.postprocess_detections(split_head, split_anchors, images.image_sizes)
        d = m.transform.postprocess(found, images.image_sizes, [(image.shape[-2], image.shape[-1])])[0]
        return d["boxes"], d["scores"], d["labels"]


class YoloHead(torch.nn.Module):
    """A YOLOv5-style single-shot detector exported without NMS: a CSP backbone of
    SiLU convs with residual bottlenecks, three scales' 1x1 heads decoded against
    their grids and anchors and joined along the boxes, [N, boxes, 5 + classes]."""

    def __init__(self, width, classes=80, anchors=3):
        super().__init__()

        def conv(a, b, k=1, stride=1):
            return torch.nn.Sequential(torch.nn.Conv2d(a, b, k, stride, k // 2, bias=False), torch.nn.BatchNorm2d(b),
                                       torch.nn.SiLU())

        class Bottleneck(torch.nn.Module):
            def __init__(self, c):
                super().__init__()
                self.body = torch.nn.Sequential(conv(c, c), conv(c, c, 3))

            def forward(self, x):
                return x + self.body(x)

        w = width
        self.stem = torch.nn.Sequential(conv(3, w, 6, 2), conv(w, 2 * w, 3, 2), Bottleneck(2 * w))
        self.stages = torch.nn.ModuleList([torch.nn.Sequential(conv(2 ** i * w, 2 ** (i + 1) * w, 3, 2),
                                                               Bottleneck(2 ** (i + 1) * w)) for i in (1, 2, 3)])
        self.outputs, self.anchors = classes + 5, anchors
        self.heads = torch.nn.ModuleList([torch.nn.Conv2d(2 ** (i + 1) * w, anchors * self.outputs, 1) for i in (1, 2, 3)])
        self.register_buffer("sizes", torch.rand(3, anchors, 2) * 50)

    def forward(self, x):
        x, scales = self.stem(x), []
        for stage in self.stages:
            x = stage(x)
            scales.append(x)
        boxes = []
        for i, (p, stride) in enumerate(zip(scales, (8, 16, 32))):
            y = self.heads[i](p)
            n, _, h, w = y.shape
            y = y.view(n, self.anchors, self.outputs, h, w).permute(0, 1, 3, 4, 2).sigmoid()
            gy, gx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
            grid = torch.stack((gx, gy), 2).view(1, 1, h, w, 2).float()
            xy = (y[..., 0:2] * 2 - 0.5 + grid) * stride
            wh = (y[..., 2:4] * 2) ** 2 * self.sizes[i].view(1, self.anchors, 1, 1, 2)
            boxes.append(torch.cat((xy, wh, y[..., 4:]), -1).view(n, -1, self.outputs))
        return torch.cat(boxes, 1)


class DetrLike(torch.nn.Module):
    """DETR: a torchvision ResNet trunk, a 1x1 projection, a transformer encoder and
    decoder over object queries, class and box heads (no NMS)."""

    def __init__(self, trunk, width, layers, queries=100):
        super().__init__()
        self.trunk = torch.nn.Sequential(*list(trunk.children())[:-2])
        self.project = torch.nn.Conv2d(trunk.fc.in_features, width, 1)
        self.transformer = torch.nn.Transformer(width, 8, layers, layers, 4 * width, batch_first=True)
        self.queries = torch.nn.Parameter(torch.rand(1, queries, width))
        self.classes = torch.nn.Linear(width, 92)
        self.boxes = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, 4))

    def forward(self, x):
        memory = self.project(self.trunk(x)).flatten(2).transpose(1, 2)
        h = self.transformer(memory, self.queries.expand(x.shape[0], -1, -1))
        return self.classes(h), self.boxes(h).sigmoid()


class Decoder(torch.nn.Module):
    """A GPT-style decoder: pre-norm encoder layers under a causal mask."""

    def __init__(self, width, layers, heads, tokens=32):
        super().__init__()
        self.tokens = tokens
        self.embed = torch.nn.Embedding(1000, width)
        self.position = torch.nn.Parameter(torch.randn(1, tokens, width) * 0.02)
        layer = torch.nn.TransformerEncoderLayer(width, heads, 4 * width, batch_first=True, norm_first=True)
        self.layers = torch.nn.TransformerEncoder(layer, layers)
        self.head = torch.nn.Linear(width, 1000)

    def forward(self, ids):
        mask = torch.triu(torch.full((self.tokens, self.tokens), float("-inf")), 1)
        return self.head(self.layers(self.embed(ids) + self.position, mask=mask))


class LstmLanguageModel(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.embed = torch.nn.Embedding(1000, width)
        self.lstm = torch.nn.LSTM(width, 2 * width, 2, batch_first=True)
        self.head = torch.nn.Linear(2 * width, 1000)

    def forward(self, ids):
        return self.head(self.lstm(self.embed(ids))[0])


def image(size):
    return torch.randn(1, 3, size, size)


def tokens(n=32):
    return torch.randint(0, 1000, (1, n))


def tiny_swin():
    return tv.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2], window_size=[2, 2],
                              num_classes=10)


def tiny_convnext():
    from torchvision.models.convnext import CNBlockConfig
    return tv.convnext.ConvNeXt([CNBlockConfig(16, 32, 2), CNBlockConfig(32, None, 2)], num_classes=10)


def tiny_fpn_detector(kind):
    from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
    from torchvision.ops.feature_pyramid_network import LastLevelP6P7
    backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=5, returned_layers=[2, 3, 4],
                                   extra_blocks=LastLevelP6P7(256, 256))
    make = det.RetinaNet if kind == "retinanet" else det.FCOS
    return Detector(make(backbone, num_classes=5, min_size=128, max_size=128))


def tiny_faster_rcnn():
    """A two-stage detector (region proposals, RoIAlign, NMS in both stages)
    on a ResNet-18 FPN; torchvision exports its eval path for a list of images."""
    from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
    backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=5)
    return det.FasterRCNN(backbone, num_classes=5, min_size=128, max_size=128)


def tiny_maxvit():
    """MaxViT: MBConv blocks (depthwise convolutions) and block / grid attention written as einsum."""
    return tv.MaxVit(input_size=(32, 32), stem_channels=8, partition_size=2, block_channels=[16, 32], block_layers=[1, 1],
                     head_dim=8, stochastic_depth_prob=0.0, num_classes=10)


class OpticalFlow(torch.nn.Module):
    """RAFT's last flow estimate after four refinement updates (GridSample: opset 16)."""

    def __init__(self):
        super().__init__()
        self.m = torchvision.models.optical_flow.raft_small()

    def forward(self, first, second):
        return self.m(first, second, num_flow_updates=4)[-1]


def tiny_video_resnet():
    """R3D: a ResNet of 3-D convolutions over video clips (rank-5 feature maps)."""
    from torchvision.models.video.resnet import BasicBlock, BasicStem, Conv3DSimple, VideoResNet
    return VideoResNet(BasicBlock, [Conv3DSimple] * 4, [1, 1, 1, 1], BasicStem, num_classes=10)


# (name, expected classes, tiny: (builder, example input[, opset]), full: (builder, example input[, opset]))
MODELS = [
    ("resnet", ["RN"], (lambda: tv.resnet18(num_classes=10), image(64)), (lambda: tv.resnet50(), image(224))),
    ("resnext50_32x4d", ["RN"], None, (lambda: tv.resnext50_32x4d(), image(224))),
    ("wide_resnet50_2", ["RN"], None, (lambda: tv.wide_resnet50_2(), image(224))),
    ("regnet_x_400mf", ["RN"], (lambda: tv.regnet_x_400mf(num_classes=10), image(64)),
     (lambda: tv.regnet_x_400mf(), image(224))),
    ("regnet_y_400mf", ["RN"], None, (lambda: tv.regnet_y_400mf(), image(224))),
    ("densenet", ["RN"], (lambda: tv.DenseNet(8, (2, 2, 2), 16, num_classes=10), image(64)),
     (lambda: tv.densenet121(), image(224))),
    ("vgg16", ["RN"], None, (lambda: tv.vgg16(), image(224))),
    ("alexnet", ["RN"], None, (lambda: tv.alexnet(), image(224))),
    ("squeezenet", ["RN"], (lambda: tv.squeezenet1_1(num_classes=10), image(64)),
     (lambda: tv.squeezenet1_0(), image(224))),
    ("googlenet", ["RN"], (lambda: tv.googlenet(num_classes=10, aux_logits=False, init_weights=True), image(64)),
     (lambda: tv.googlenet(aux_logits=False, init_weights=True), image(224))),
    ("inception_v3", ["RN"], None, (lambda: tv.inception_v3(aux_logits=False, init_weights=True), image(299))),
    ("resnet101", ["RN"], None, (lambda: tv.resnet101(), image(224))),
    ("vgg19_bn", ["RN"], None, (lambda: tv.vgg19_bn(), image(224))),
    ("regnet_y_1_6gf", ["RN"], None, (lambda: tv.regnet_y_1_6gf(), image(224))),
    ("video_resnet", ["RN"], (tiny_video_resnet, torch.rand(1, 3, 4, 32, 32)),
     (lambda: tv.video.r3d_18(), torch.rand(1, 3, 8, 112, 112))),
    ("r2plus1d_18", ["RN"], None, (lambda: tv.video.r2plus1d_18(), torch.rand(1, 3, 8, 112, 112))),
    ("mc3_18", ["RN"], None, (lambda: tv.video.mc3_18(), torch.rand(1, 3, 8, 112, 112))),
    ("s3d", ["RN"], None, (lambda: tv.video.s3d(), torch.rand(1, 3, 16, 224, 224))),
    ("raft_small", ["RN"], None, (OpticalFlow, (image(128), image(128)), 16)),
    ("deeplabv3_resnet50", ["RN"], None,
     (lambda: tv.segmentation.deeplabv3_resnet50(weights_backbone=None), image(256))),
    ("fcn_resnet50", ["RN"], None, (lambda: tv.segmentation.fcn_resnet50(weights_backbone=None), image(256))),
    ("mobilenet_v3_small", ["MN"], (lambda: tv.mobilenet_v3_small(num_classes=10), image(64)),
     (lambda: tv.mobilenet_v3_small(), image(224))),
    ("mobilenet_v3_large", ["MN"], None, (lambda: tv.mobilenet_v3_large(), image(224))),
    ("shufflenet_v2", ["MN"], (lambda: tv.shufflenet_v2_x0_5(num_classes=10), image(64)),
     (lambda: tv.shufflenet_v2_x1_0(), image(224))),
    ("mnasnet", ["MN"], (lambda: tv.mnasnet0_5(num_classes=10), image(64)), (lambda: tv.mnasnet1_0(), image(224))),
    ("efficientnet_b0", ["MN"], (lambda: tv.efficientnet_b0(num_classes=10), image(64)),
     (lambda: tv.efficientnet_b0(), image(224))),
    ("efficientnet_v2_s", ["MN"], None, (lambda: tv.efficientnet_v2_s(), image(224))),
    ("efficientnet_b3", ["MN"], None, (lambda: tv.efficientnet_b3(), image(224))),
    ("lraspp_mobilenet_v3", ["MN"], None,
     (lambda: tv.segmentation.lraspp_mobilenet_v3_large(weights_backbone=None), image(256))),
    ("convnext_small", ["MN"], None, (lambda: tv.convnext_small(), image(224))),
    ("convnext", ["MN"], (tiny_convnext, image(32)), (lambda: tv.convnext_tiny(), image(224))),
    ("deeplabv3_mobilenet_v3", ["MN"], None,
     (lambda: tv.segmentation.deeplabv3_mobilenet_v3_large(weights_backbone=None), image(256))),
    ("ssd300_vgg16", ["SSD", "RN"], None,
     (lambda: SsdDetector(det.ssd300_vgg16(weights_backbone=None)), torch.rand(3, 300, 300))),
    ("retinanet", ["SSD", "RN"], (lambda: tiny_fpn_detector("retinanet"), torch.rand(3, 128, 128)),
     (lambda: Detector(det.retinanet_resnet50_fpn(weights_backbone=None)), torch.rand(3, 320, 320))),
    ("fcos", ["SSD", "RN"], (lambda: tiny_fpn_detector("fcos"), torch.rand(3, 128, 128)),
     (lambda: Detector(det.fcos_resnet50_fpn(weights_backbone=None)), torch.rand(3, 320, 320))),
    ("faster_rcnn", ["SSD", "RN"], (tiny_faster_rcnn, ([torch.rand(3, 128, 128)],)),
     (lambda: det.fasterrcnn_resnet50_fpn(weights_backbone=None, min_size=320, max_size=320),
      ([torch.rand(3, 320, 320)],))),
    ("faster_rcnn_mobilenet_v3", ["SSD", "MN"], None,
     (lambda: det.fasterrcnn_mobilenet_v3_large_320_fpn(weights_backbone=None), ([torch.rand(3, 320, 320)],))),
    ("maskrcnn_resnet50_fpn", ["SSD", "RN"], None,
     (lambda: det.maskrcnn_resnet50_fpn(weights_backbone=None, min_size=320, max_size=320), ([torch.rand(3, 320, 320)],))),
    ("keypointrcnn_resnet50_fpn", ["SSD", "RN"], None,
     (lambda: det.keypointrcnn_resnet50_fpn(weights_backbone=None, min_size=320, max_size=320),
      ([torch.rand(3, 320, 320)],))),
    # Further torchvision configurations (full size only).
    ("resnet152", ["RN"], None, (lambda: tv.resnet152(), image(224))),
    ("vgg11", ["RN"], None, (lambda: tv.vgg11(), image(224))),
    ("densenet201", ["RN"], None, (lambda: tv.densenet201(), image(224))),
    ("regnet_x_800mf", ["RN"], None, (lambda: tv.regnet_x_800mf(), image(224))),
    ("regnet_y_8gf", ["RN"], None, (lambda: tv.regnet_y_8gf(), image(224))),
    ("squeezenet1_1", ["RN"], None, (lambda: tv.squeezenet1_1(), image(224))),
    ("fcn_resnet101", ["RN"], None, (lambda: tv.segmentation.fcn_resnet101(weights_backbone=None), image(256))),
    ("mnasnet1_3", ["MN"], None, (lambda: tv.mnasnet1_3(), image(224))),
    ("shufflenet_v2_x2_0", ["MN"], None, (lambda: tv.shufflenet_v2_x2_0(), image(224))),
    ("efficientnet_b1", ["MN"], None, (lambda: tv.efficientnet_b1(), image(240))),
    ("convnext_base", ["MN"], None, (lambda: tv.convnext_base(), image(224))),
    ("vit_b_32", ["BR"], None, (lambda: tv.vit_b_32(), image(224))),
    ("retinanet_v2", ["SSD", "RN"], None,
     (lambda: Detector(det.retinanet_resnet50_fpn_v2(weights_backbone=None)), torch.rand(3, 320, 320))),
    ("faster_rcnn_v2", ["SSD", "RN"], None,
     (lambda: det.fasterrcnn_resnet50_fpn_v2(weights_backbone=None, min_size=320, max_size=320),
      ([torch.rand(3, 320, 320)],))),
    ("yolo_like", ["SSD", "RN"], (lambda: YoloHead(8, classes=4), image(64)), (lambda: YoloHead(32), image(320))),
    ("detr_like", ["BR", "RN"], (lambda: DetrLike(tv.resnet18(), 32, 1, queries=10), image(64)),
     (lambda: DetrLike(tv.resnet50(), 256, 6), image(320))),
    ("vit", ["BR"], (lambda: tv.VisionTransformer(32, 8, 2, 2, 32, 64, num_classes=10), image(32)),
     (lambda: tv.vit_b_16(), image(224))),
    ("swin", ["BR"], (tiny_swin, image(32)), (lambda: tv.swin_t(), image(224))),
    ("swin_s", ["BR"], None, (lambda: tv.swin_s(), image(224))),
    ("vit_l_32", ["BR"], None, (lambda: tv.vit_l_32(), image(224))),
    ("maxvit", ["MN", "BR"], (tiny_maxvit, image(32)), (lambda: tv.maxvit_t(), image(224))),
    ("gpt_decoder", ["BR"], (lambda: Decoder(32, 2, 2), tokens()), (lambda: Decoder(256, 4, 4, 64), tokens(64))),
    ("lstm_language_model", [], (lambda: LstmLanguageModel(32), tokens()), (lambda: LstmLanguageModel(128), tokens())),
]


def export(build, example, path, opset=13):
    with warnings.catch_warnings():  # not under no_grad: MultiheadAttention would take its fused path, which does not export
        warnings.simplefilter("ignore")
        model = build().eval()
        torch.onnx.export(model, example, path, opset_version=opset)


def classify(kiln, path):
    out = subprocess.run([kiln, "passes", "classify", path, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip()
    return json.loads(out.stdout), None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--work", required=True, help="directory for the exported models")
    ap.add_argument("--size", choices=["tiny", "full"], default="tiny")
    ap.add_argument("--markdown", action="store_true", help="print the docs table")
    ap.add_argument("--only", help="comma-separated model names (default: all)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    torch.manual_seed(0)
    failures, rows = [], []
    for name, expected, tiny, full in MODELS:
        spec = tiny if a.size == "tiny" else full
        if spec is None or (a.only and name not in a.only.split(",")):
            continue
        path = os.path.join(a.work, "%s-%s.onnx" % (name, a.size))
        start = time.time()
        if not os.path.exists(path):
            export(spec[0], spec[1], path, *spec[2:])
        record, error = classify(a.kiln, path)
        if record is None:
            failures.append(name)
            print("%-24s FAILED: kiln passes classify: %s" % (name, error), flush=True)
            continue
        got = record["classes"]
        scores = ", ".join("%s %.2f" % (s["name"], s["score"]) for s in record["scores"] if s["score"] > 0)
        ok = sorted(got) == sorted(expected)
        if not ok:
            failures.append(name)
        print("%-24s %-8s expected %-8s %s (%s)  %.1fs" % (name, ",".join(got) or "-", ",".join(expected) or "-",
                                                         "ok" if ok else "WRONG", scores or "no score", time.time() - start),
              flush=True)
        rows.append((name, got, scores))
    if a.markdown:
        print("\n| model | classes (scores) |\n|---|---|")
        for name, got, scores in rows:
            print("| %s | %s |" % (name, ("%s (%s)" % (", ".join(got), scores)) if got else "none (generic passes only)"))
    if failures:
        print("classified other than expected: %s" % ", ".join(failures), file=sys.stderr)
        return 1
    print("%d models classified as expected" % len(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
