#!/usr/bin/python3
"""The handwritten-digits task of `kiln evolve` (docs/evolve.md).

scikit-learn's digits (1797 8x8 images, shipped with Debian's python3-sklearn)
split once into 1437 training and 360 test images by a fixed shuffle, and two
small classifiers trained on the training images with Debian's torch: a CNN
(digits_cnn.onnx, input `image` 1x1x8x8) and an MLP (digits_mlp.onnx, input
`pixels` 1x64), the analogues of GEVO-ML's MobileNet and 2fcNet.

  digits_task.py data OUT     writes OUT/{cnn,mlp}/{train,test}/ with one .npy
                              per model input (N, then its shape) and labels.npy
  digits_task.py train DIR    trains both models and writes DIR/digits_{cnn,mlp}.onnx

The models are committed beside this script; `data` needs only numpy and
scikit-learn and is what the tests run.
"""
import os
import sys

import numpy as np

TEST_COUNT = 360


def split():
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int64)
    order = np.random.RandomState(0).permutation(len(labels))
    test, train = order[:TEST_COUNT], order[TEST_COUNT:]
    return (images[train], labels[train]), (images[test], labels[test])


def write_data(out):
    for part, (images, labels) in zip(("train", "test"), split()):
        n = len(labels)
        arrays = {"cnn": ("image", images.reshape(n, 1, 1, 8, 8)), "mlp": ("pixels", images.reshape(n, 1, 64))}
        for model, (name, array) in arrays.items():
            d = os.path.join(out, model, part)
            os.makedirs(d, exist_ok=True)
            np.save(os.path.join(d, name + ".npy"), np.ascontiguousarray(array))
            np.save(os.path.join(d, "labels.npy"), labels)


def train(out):
    import torch
    from torch import nn

    torch.manual_seed(0)
    (x, y), (tx, ty) = split()
    cnn = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 10))
    for name, model, shape, input_name in (("cnn", cnn, (1, 8, 8), "image"), ("mlp", mlp, (64,), "pixels")):
        inputs = torch.from_numpy(x.reshape(len(x), *shape))
        targets = torch.from_numpy(y)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        for epoch in range(300):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(inputs), targets)
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            test_inputs = torch.from_numpy(tx.reshape(len(tx), *shape))
            accuracy = (model(test_inputs).argmax(1).numpy() == ty).mean()
        print(f"digits_{name}: training loss {loss.item():.4f}, test accuracy {100 * accuracy:.2f}%")
        torch.onnx.export(model, torch.zeros(1, *shape), os.path.join(out, f"digits_{name}.onnx"),
                          input_names=[input_name], output_names=["logits"], opset_version=13)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("data", "train"):
        sys.exit(__doc__)
    (write_data if sys.argv[1] == "data" else train)(sys.argv[2])


if __name__ == "__main__":
    main()
