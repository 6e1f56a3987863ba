#!/usr/bin/python3
"""Exports ONNX models for kiln's tests and examples (run with Debian's /usr/bin/python3).

  /usr/bin/python3 models/export_models.py --out DIR [MODEL ...]

Models: tiny_cnn (bundled in models/tiny/, dynamic batch), resnet50, mobilenet_v2,
ssdlite320 (torchvision SSDLite320-MobileNetV3-Large with its post-processing),
bert_base (a 12-layer, 768-wide BERT encoder written in torch.nn, sequence 128)
and bert_tiny (the same code, 2 layers, 64 wide). All weights are random.
Exports are deterministic: the seed is fixed and the same torch version gives
byte-identical files.
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


class BertEncoder(torch.nn.Module):
    """BERT as in the paper: token, position and segment embeddings with
    LayerNorm, then post-norm layers of multi-head self-attention and a GELU
    (erf) feed-forward block. Returns the last hidden states."""

    def __init__(self, layers, hidden, heads, vocab=30522, max_len=512):
        super().__init__()
        self.heads = heads
        self.words = torch.nn.Embedding(vocab, hidden)
        self.positions = torch.nn.Embedding(max_len, hidden)
        self.segments = torch.nn.Embedding(2, hidden)
        self.norm = torch.nn.LayerNorm(hidden, eps=1e-12)
        self.layers = torch.nn.ModuleList([BertLayer(hidden, heads) for _ in range(layers)])

    def forward(self, input_ids, attention_mask):
        n = input_ids.shape[1]
        positions = torch.arange(n, dtype=torch.long).unsqueeze(0)
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
    if name == "ssdlite320":
        from torchvision.models.detection import ssdlite320_mobilenet_v3_large
        # Note: with random weights the class scores are nearly uniform and
        # the final detections tie by the hundred, so their order is not
        # comparable across runtimes; compare the network outputs instead.
        model = ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)
        return randomize_batchnorm(model), [torch.rand(3, 320, 320)], None
    raise SystemExit(f"unknown model '{name}'")


def build_bert(name):
    torch.manual_seed(0)
    layers, hidden, heads = (12, 768, 12) if name == "bert_base" else (2, 64, 4)
    ids = torch.randint(0, 30522, (1, 128))
    mask = torch.ones(1, 128, dtype=torch.long)
    mask[0, 100:] = 0
    return BertEncoder(layers, hidden, heads), (ids, mask)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--opset", type=int, default=13)
    parser.add_argument("models", nargs="*", default=["tiny_cnn"])
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.models:
        path = os.path.join(args.out, name + ".onnx")
        if name.startswith("bert"):
            model, inputs = build_bert(name)
            model.eval()
            torch.onnx.export(model, inputs, path, input_names=["input_ids", "attention_mask"],
                              output_names=["hidden_states"], opset_version=args.opset)
        elif name == "ssdlite320":
            model, example, _ = build(name)
            model.eval()
            torch.onnx.export(model, (example,), path, input_names=["images"],
                              output_names=["boxes", "scores", "labels"], opset_version=args.opset)
        else:
            model, example, dynamic = build(name)
            model.eval()
            torch.onnx.export(model, (example,), path, input_names=["input"],
                              output_names=["probabilities" if name == "tiny_cnn" else "logits"],
                              dynamic_axes=dynamic, opset_version=args.opset)
        print(f"wrote {path} ({os.path.getsize(path)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
