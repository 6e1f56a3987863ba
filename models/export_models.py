#!/usr/bin/python3
"""Exports ONNX models for kiln's tests and examples (run with Debian's /usr/bin/python3).

  /usr/bin/python3 models/export_models.py --out DIR [MODEL ...]

Models: tiny_cnn (bundled in models/tiny/, dynamic batch), resnet50, mobilenet_v2
(torchvision, random weights). Exports are deterministic: the seed is fixed and
the same torch version gives byte-identical files.
"""
import argparse
import os
import sys

import torch


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
    torch.manual_seed(0)
    if name == "tiny_cnn":
        return randomize_batchnorm(TinyCnn()), torch.randn(1, 3, 32, 32), {"input": {0: "batch"}, "probabilities": {0: "batch"}}
    import torchvision
    if name == "resnet50":
        return randomize_batchnorm(torchvision.models.resnet50()), torch.randn(1, 3, 224, 224), None
    if name == "mobilenet_v2":
        return randomize_batchnorm(torchvision.models.mobilenet_v2()), torch.randn(1, 3, 224, 224), None
    raise SystemExit(f"unknown model '{name}'")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--opset", type=int, default=13)
    parser.add_argument("models", nargs="*", default=["tiny_cnn"])
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.models:
        model, example, dynamic = build(name)
        model.eval()
        path = os.path.join(args.out, name + ".onnx")
        torch.onnx.export(model, (example,), path, input_names=["input"],
                          output_names=["probabilities" if name == "tiny_cnn" else "logits"],
                          dynamic_axes=dynamic, opset_version=args.opset)
        print(f"wrote {path} ({os.path.getsize(path)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
