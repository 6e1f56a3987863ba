#!/usr/bin/python3
"""Exports a small two-stage detector (torchvision's Faster R-CNN on a two-level
convolutional backbone, random weights) for the model tests.

Its inference path is what the big R-CNNs export: region proposals per level
with TopK and NMS, RoIAlign over the levels (opset 13, so RoiAlign-10's
sampling), box decoding and a second NMS, and `If`s whose branches differ in
rank (torch's squeeze of a data-dependent count). About 0.4 MB; exports in
seconds.

    export_two_stage_detector.py --out FILE.onnx
"""
import argparse
import collections
import warnings

import torch
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.ops import MultiScaleRoIAlign


class TwoLevelBackbone(torch.nn.Module):
    """Two feature maps, strides 4 and 8, 16 channels each."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, 2, 1), torch.nn.ReLU(),
                                        torch.nn.Conv2d(8, 16, 3, 2, 1), torch.nn.ReLU())
        self.down = torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, 2, 1), torch.nn.ReLU())
        self.out_channels = 16

    def forward(self, x):
        a = self.stem(x)
        return collections.OrderedDict([("0", a), ("1", self.down(a))])


def build():
    anchors = AnchorGenerator(sizes=((16,), (32,)), aspect_ratios=((0.5, 1.0, 2.0),) * 2)
    pool = MultiScaleRoIAlign(["0", "1"], output_size=7, sampling_ratio=2)
    return FasterRCNN(TwoLevelBackbone(), rpn_anchor_generator=anchors, box_roi_pool=pool,
                      box_head=TwoMLPHead(16 * 7 * 7, 64), box_predictor=FastRCNNPredictor(64, 5),
                      min_size=96, max_size=96, rpn_pre_nms_top_n_test=200, rpn_post_nms_top_n_test=50,
                      box_detections_per_img=20, box_score_thresh=0.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.manual_seed(0)
    model = build().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, ([torch.rand(3, 96, 96)],), a.out, opset_version=13,
                          output_names=["boxes", "labels", "scores"])
    print("wrote", a.out)


if __name__ == "__main__":
    main()
