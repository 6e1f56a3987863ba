#!/usr/bin/python3
"""Unit checks of the comparison rules in compare_with_ort.py (values and
detection matching), on synthetic outputs where the right verdict is known."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_with_ort import check_detection_outputs, detection_pairs, detection_rule, match_detections, per_detection_error, relative_error  # noqa: E402


def detections(n, seed):
    rng = np.random.RandomState(seed)
    xy = rng.uniform(0, 300, (n, 2)).astype(np.float32)
    boxes = np.concatenate([xy, xy + rng.uniform(5, 20, (n, 2)).astype(np.float32)], axis=1)
    scores = np.sort(rng.uniform(0.1, 0.9, n).astype(np.float32))[::-1].copy()
    labels = rng.randint(1, 91, n).astype(np.int64)
    return boxes, scores, labels


def main():
    ref = detections(300, 0)
    # Identical and reordered detections match completely.
    assert match_detections(ref, ref, 1e-4) == (300, 300)
    perm = np.random.RandomState(1).permutation(300)
    assert match_detections(tuple(a[perm] for a in ref), ref, 1e-4) == (300, 300)
    # Differences within tolerance match; beyond it they do not.
    boxes, scores, labels = ref
    assert match_detections((boxes + 1e-3, scores + 1e-6, labels), ref, 1e-4) == (300, 300)
    assert match_detections((boxes + 1.0, scores, labels), ref, 1e-4)[0] == 0
    assert match_detections((boxes, scores + 0.01, labels), ref, 1e-4)[0] == 0
    # A wrong label is a miss; missing detections count against the larger list.
    wrong = labels.copy()
    wrong[:10] = (wrong[:10] % 90) + 1 + (wrong[:10] == 90)
    assert match_detections((boxes, scores, wrong), ref, 1e-4) == (290, 300)
    assert match_detections((boxes[:250], scores[:250], labels[:250]), ref, 1e-4) == (250, 300)
    # No detections at all: nothing matched.
    empty = (np.zeros((0, 4), np.float32), np.zeros(0, np.float32), np.zeros(0, np.int64))
    assert match_detections(empty, ref, 1e-4) == (0, 300)
    # Per-detection outputs (masks) follow the matching: reordered detections with their
    # masks reordered alike compare equal; a changed mask of a matched detection does not.
    masks = np.random.RandomState(2).uniform(0, 1, (300, 1, 4, 4)).astype(np.float32)
    pairs, total = detection_pairs(tuple(a[perm] for a in ref), ref, 1e-4)
    assert total == 300 and len(pairs) == 300
    assert per_detection_error(masks[perm], masks, pairs)[2] == 0.0
    assert relative_error(masks[perm], masks)[2] > 0.5  # in output order they differ
    changed = masks[perm].copy()
    changed[7] += 0.5
    assert abs(per_detection_error(changed, masks, pairs)[2] - 0.5 / float(masks.max())) < 1e-6
    # Values: relative to the reference's scale.
    err, scale, rel = relative_error(np.array([1.0, 101.0]), np.array([1.0, 100.0]))
    assert (err, scale) == (1.0, 100.0) and abs(rel - 0.01) < 1e-12
    # --detections: three existing output names and a share in (0, 1], else a clear error.
    outs = ["boxes", "scores", "labels", "features"]
    assert detection_rule("boxes, scores,labels", 0.9, outs) == \
        {"boxes": "boxes", "scores": "scores", "labels": "labels", "min_matched": 0.9}
    assert detection_rule("boxes,scores,labels,features", 0.9, outs)["per_detection"] == ["features"]
    for bad, share, words in [("boxes,scores", 0.98, "BOXES,SCORES,LABELS"), ("boxes,scores,label", 0.98, "no output 'label'"),
                              ("boxes,scores,labels", 0.0, "--min-matched")]:
        try:
            detection_rule(bad, share, outs)
            raise AssertionError(f"accepted {bad} {share}")
        except ValueError as e:
            assert words in str(e), e
    # Outputs named in another order (torchvision's detectors return boxes, labels, scores) are refused.
    check_detection_outputs(["b", "s", "l"], list(ref))
    boxes, scores, labels = ref
    for arrays, words in [([boxes, labels, scores], "SCORES output 's' is int64[300]"),
                          ([scores, boxes, labels], "BOXES output 'b' is float32[300]"),
                          ([boxes, scores, labels[:5]], "different numbers of detections")]:
        try:
            check_detection_outputs(["b", "s", "l"], arrays)
            raise AssertionError(f"accepted {words}")
        except ValueError as e:
            assert words in str(e), e
    print("compare_with_ort rules ok")


if __name__ == "__main__":
    main()
