#!/usr/bin/python3
"""Generates the conformance cases for op versions from opset 18 on and for the
com.microsoft ops kiln imports: one small model per (op, version, attribute
form), with ONNX Runtime's outputs as the expected ones, in the ONNX
backend-suite layout the conformance runner reads:

    OUT/<case>/model.onnx, OUT/<case>/test_data_set_0/{input_i,output_k}.pb

    /usr/bin/python3 scripts/generate_newer_opset_tests.py OUT

Debian's python3-onnx knows the schemas up to opset 17 only, so the models are
written with its helper and never checked by it. ONNX Runtime
(scripts/ort_run_suite.js) is the oracle; a case it refuses is dropped and
named in OUT/ort_refused.txt. FLOAT4E2M1, which ONNX Runtime cannot cast,
takes its expected outputs from the ONNX spec (float4_reference), and
ImageDecoder, which ONNX Runtime lacks, from Pillow (the ONNX reference
implementation's decoder; image_reference). Skips the work when OUT holds a
suite made by this version of the script.
"""
import hashlib
import io
import os
import shutil
import subprocess
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32, F16, I64, I32, U8, I8, BOOL = np.float32, np.float16, np.int64, np.int32, np.uint8, np.int8, np.bool_

CASES = []


class Const:
    """An input stored as an initializer (known at import)."""

    def __init__(self, value):
        self.value = np.asarray(value)


def elem_type(dtype):
    """The TensorProto type of a numpy dtype (numpy's unicode arrays: STRING)."""
    if dtype.kind in "UO":
        return TensorProto.STRING
    return helper.np_dtype_to_tensor_dtype(dtype) if hasattr(helper, "np_dtype_to_tensor_dtype") else \
        onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[dtype]


def tensor_proto(arr, name):
    """numpy_helper.from_array, taking unicode arrays as STRING tensors."""
    return numpy_helper.from_array(arr.astype(object) if arr.dtype.kind == "U" else arr, name)


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def add(name, opset, op, inputs, n_out=1, domain="", **attrs):
    """One case: a single `op` node of default-domain `opset` (and `domain`
    version 1). `inputs` holds arrays (graph inputs), Const(...) (initializers)
    or None (omitted); `n_out` counts the outputs, or lists which of them the
    model uses (False: left unnamed)."""
    CASES.append((name, opset, op, inputs, n_out, domain, attrs))


def randn(name, shape, dtype=F32, lo=None, hi=None):
    r = rng_for(name + str(shape))
    x = r.uniform(lo, hi, shape) if lo is not None else r.standard_normal(shape)
    return x.astype(dtype)


REDUCE = ["ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
          "ReduceProd", "ReduceSumSquare"]
TYPE_WIDENED = [19, 21, 23, 24, 25]


def reduce_cases():
    for op in REDUCE:
        x = randn(op, (2, 3, 4), lo=0.2, hi=1.5)
        add(f"{op}_v18_axes", 18, op, [x, Const(np.array([1], I64))])
        add(f"{op}_v18_axes_no_keepdims", 18, op, [x, Const(np.array([0, 2], I64))], keepdims=0)
        add(f"{op}_v18_all_axes", 18, op, [x])
        add(f"{op}_v18_noop_empty_axes", 18, op, [randn(op + "noop", (2, 3))], noop_with_empty_axes=1)
    for op in ["ReduceMax", "ReduceMin"]:
        add(f"{op}_v20_axes", 20, op, [randn(op, (3, 4)), Const(np.array([-1], I64))], keepdims=0)
    add("ReduceMean_v18_axes_at_run_time", 18, "ReduceMean", [randn("rm", (2, 3)), np.array([1], I64)])
    for op in ["ReduceSum", "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare"]:
        add(f"{op}_v18_axes_at_run_time_no_keepdims", 18, op, [randn(op + "rt", (2, 3, 4), lo=0.1, hi=1.0),
                                                               np.array([0, 2], I64)], keepdims=0)
    add("ReduceMax_v18_axes_at_run_time", 18, "ReduceMax", [randn("rmx", (2, 3)), np.array([0], I64)])
    add("ReduceMin_v20_axes_at_run_time_no_keepdims", 20, "ReduceMin", [randn("rmn20", (2, 3, 4)),
                                                                         np.array([2, 0], I64)], keepdims=0)
    add("ReduceProd_v18_axes_at_run_time", 18, "ReduceProd", [randn("rpr", (3, 4), lo=0.5, hi=1.5),
                                                             np.array([-1], I64)])
    add("ReduceMax_v18_empty_axes_at_run_time", 18, "ReduceMax", [randn("rme", (2, 3)), np.zeros((0,), I64)])
    add("ReduceMin_v18_empty_axes_at_run_time_noop", 18, "ReduceMin", [randn("rmo", (2, 3)), np.zeros((0,), I64)],
        noop_with_empty_axes=1)
    add("ReduceMean_v18_empty_axes_at_run_time_noop", 18, "ReduceMean",
        [randn("rmn", (2, 3)), np.zeros((0,), I64)], noop_with_empty_axes=1)


def pad_split_resize_cases():
    x = randn("pad", (1, 2, 3, 4))
    add("Pad_v18_axes_constant", 18, "Pad",
        [x, Const(np.array([1, 2, 0, 1], I64)), Const(np.array(1.5, F32)), Const(np.array([2, 3], I64))])
    add("Pad_v18_axes_reflect", 18, "Pad", [x, Const(np.array([2, 1], I64)), None, Const(np.array([-1], I64))],
        mode="reflect")
    add("Pad_v19_wrap", 19, "Pad", [x, Const(np.array([0, 0, 1, 2, 0, 0, 2, 1], I64))], mode="wrap")
    add("Pad_v21_edge", 21, "Pad", [x, Const(np.array([0, 1, 1, 0, 0, 0, 1, 1], I64))], mode="edge")
    for v in [23, 24, 25]:
        add(f"Pad_v{v}_axes", v, "Pad", [x, Const(np.array([1, 1], I64)), None, Const(np.array([1], I64))])
    add("Split_v18_num_outputs_equal", 18, "Split", [randn("s1", (2, 6))], n_out=3, axis=1, num_outputs=3)
    add("Split_v18_num_outputs_uneven", 18, "Split", [randn("s2", (2, 7))], n_out=3, axis=1, num_outputs=3)
    add("Split_v18_split_input", 18, "Split", [randn("s3", (2, 7)), Const(np.array([2, 5], I64))], n_out=2, axis=-1)
    img = randn("resize", (1, 1, 4, 6))
    add("Resize_v18_axes_scales", 18, "Resize", [img, None, Const(np.array([2.0, 0.5], F32))], mode="linear",
        axes=[2, 3])
    add("Resize_v18_axes_sizes", 18, "Resize", [img, None, None, Const(np.array([9], I64))], mode="nearest", axes=[3])
    add("Resize_v18_antialias_off", 18, "Resize", [img, None, Const(np.array([1, 1, 0.5, 0.5], F32))], mode="linear",
        antialias=0)
    add("Resize_v18_stretch", 18, "Resize", [img, None, None, Const(np.array([1, 1, 6, 3], I64))], mode="cubic",
        keep_aspect_ratio_policy="stretch")
    add("Resize_v19_half_pixel", 19, "Resize", [img, None, Const(np.array([1, 1, 1.5, 1.5], F32))], mode="linear")
    add("Resize_v19_half_pixel_symmetric", 19, "Resize", [img, None, Const(np.array([1, 1, 1.5, 0.7], F32))],
        mode="linear", coordinate_transformation_mode="half_pixel_symmetric")
    add("Resize_v18_antialias", 18, "Resize", [img, None, Const(np.array([1, 1, 0.5, 0.5], F32))], mode="linear",
        antialias=1)
    add("Resize_v18_antialias_cubic_sizes", 18, "Resize", [img, None, None, Const(np.array([1, 1, 3, 4], I64))],
        mode="cubic", antialias=1)
    add("Resize_v18_antialias_mixed", 18, "Resize", [randn("raa", (2, 3, 10, 4)), None,
                                                      Const(np.array([1, 1, 0.6, 1.5], F32))],
        mode="linear", antialias=1, coordinate_transformation_mode="pytorch_half_pixel")
    add("Resize_v18_antialias_channels_cubic", 18, "Resize", [randn("rac", (1, 4, 6, 6)), None,
                                                              Const(np.array([1, 0.5, 1, 1], F32))],
        mode="cubic", antialias=1)
    add("Resize_v18_antialias_rank3_all_axes", 18, "Resize", [randn("ra3", (6, 4, 5)), None,
                                                             Const(np.array([0.5, 1, 0.6], F32))],
        mode="linear", antialias=1)
    add("Resize_v18_antialias_rank5_volume", 18, "Resize", [randn("ra5", (1, 1, 6, 6, 6)), None,
                                                           Const(np.array([1, 1, 0.5, 0.5, 0.5], F32))],
        mode="linear", antialias=1)
    add("Resize_v18_not_larger", 18, "Resize", [img, None, None, Const(np.array([3, 3], I64))], mode="linear",
        axes=[2, 3], keep_aspect_ratio_policy="not_larger")
    add("Resize_v18_not_smaller", 18, "Resize", [img, None, None, Const(np.array([1, 1, 3, 5], I64))], mode="nearest",
        keep_aspect_ratio_policy="not_smaller")
    # Output lengths that round up (6 * 3/7 = 2.57 -> 3): the common scale samples, on an edge-padded input.
    tall = randn("resize_up", (1, 2, 6, 7))
    for mode, ct in [("linear", "half_pixel"), ("nearest", "asymmetric"), ("cubic", "pytorch_half_pixel"),
                     ("linear", "align_corners"), ("nearest", "tf_half_pixel_for_nn")]:
        add(f"Resize_v18_not_larger_rounds_up_{mode}_{ct}", 18, "Resize",
            [tall, None, None, Const(np.array([3, 3], I64))], mode=mode, coordinate_transformation_mode=ct,
            axes=[2, 3], keep_aspect_ratio_policy="not_larger")
    add("Resize_v19_not_smaller_rounds_up", 19, "Resize", [randn("resize_up2", (1, 1, 5, 6)), None, None,
                                                           Const(np.array([3, 2], I64))],
        mode="linear", axes=[2, 3], keep_aspect_ratio_policy="not_smaller")


def scatter_pool_cases():
    data = randn("sc", (3, 4))
    idx = np.array([[0, 0], [3, 1], [2, 2]], I64)
    upd = randn("scu", (3, 2))
    for red in ["max", "min", "none"]:
        add(f"ScatterElements_v18_{red}", 18, "ScatterElements", [data, idx, upd], axis=1, reduction=red)
        add(f"ScatterND_v18_{red}", 18, "ScatterND",
            [randn("snd", (4, 3)), np.array([[1], [3]], I64), randn("sndu", (2, 3))], reduction=red)
    x = randn("pool", (1, 2, 5, 5))
    add("LpPool_v18_ceil_off", 18, "LpPool", [x], kernel_shape=[2, 2], p=2, ceil_mode=0)
    add("LpPool_v18_dilations_1", 18, "LpPool", [x], kernel_shape=[3, 3], dilations=[1, 1], p=1)
    add("LpPool_v18_ceil_mode", 18, "LpPool", [x], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    add("LpPool_v22", 22, "LpPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    add("AveragePool_v19_dilations_1", 19, "AveragePool", [x], kernel_shape=[3, 3], dilations=[1, 1])
    add("AveragePool_v19_dilations_2", 19, "AveragePool", [x], kernel_shape=[2, 2], dilations=[2, 2])
    add("AveragePool_v19_dilations_pads", 19, "AveragePool", [x], kernel_shape=[2, 3], dilations=[2, 1],
        strides=[2, 1], pads=[1, 1, 1, 0])
    add("AveragePool_v19_dilations_count_pads", 19, "AveragePool", [x], kernel_shape=[2, 2], dilations=[2, 2],
        pads=[1, 1, 1, 1], count_include_pad=1)
    add("AveragePool_v22_pads", 22, "AveragePool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)
    add("AveragePool_v19_dilations_ceil_mode", 19, "AveragePool", [x], kernel_shape=[2, 2], dilations=[2, 1],
        strides=[2, 2], ceil_mode=1)
    add("AveragePool_v19_dilations_ceil_mode_count_pads", 19, "AveragePool", [x], kernel_shape=[2, 2],
        dilations=[2, 2], strides=[2, 3], pads=[1, 0, 0, 1], ceil_mode=1, count_include_pad=1)
    add("AveragePool_v19_dilations_same_upper", 19, "AveragePool", [x], kernel_shape=[3, 2], dilations=[2, 2],
        strides=[2, 1], auto_pad="SAME_UPPER")
    add("AveragePool_v19_dilations_same_lower_count_pads", 19, "AveragePool", [x], kernel_shape=[2, 3],
        dilations=[3, 2], strides=[1, 2], auto_pad="SAME_LOWER", count_include_pad=1)


def cast_quantize_cases():
    x = randn("cast", (3, 4)) * 3
    add("Cast_v19_saturate", 19, "Cast", [x], to=TensorProto.FLOAT16, saturate=1)
    add("Cast_v21_to_int32", 21, "Cast", [x], to=TensorProto.INT32)
    add("Cast_v23_from_int64", 23, "Cast", [np.arange(12, dtype=I64).reshape(3, 4)], to=TensorProto.FLOAT)
    add("Cast_v24_to_double", 24, "Cast", [x], to=TensorProto.DOUBLE)
    add("Cast_v25_from_bool", 25, "Cast", [x > 0], to=TensorProto.FLOAT)
    for v in [19, 21]:
        add(f"CastLike_v{v}", v, "CastLike", [x, Const(np.zeros((1,), F16))])
    q = randn("q", (2, 3, 4))
    add("QuantizeLinear_v19", 19, "QuantizeLinear", [q, Const(np.array(0.05, F32)), Const(np.array(128, U8))])
    add("QuantizeLinear_v21_output_dtype", 21, "QuantizeLinear", [q, Const(np.array(0.05, F32))],
        output_dtype=TensorProto.INT8)
    add("QuantizeLinear_v21_blocked", 21, "QuantizeLinear", [q, Const(np.full((2, 3, 2), 0.05, F32))], axis=2,
        block_size=2)
    add("QuantizeLinear_v23", 23, "QuantizeLinear", [q, Const(np.array(0.02, F32)), Const(np.array(-3, I8))])
    qi = np.arange(24, dtype=U8).reshape(2, 3, 4) * 7
    add("DequantizeLinear_v19", 19, "DequantizeLinear", [qi, Const(np.array(0.1, F32)), Const(np.array(20, U8))])
    add("DequantizeLinear_v21_per_axis", 21, "DequantizeLinear",
        [qi.astype(I8), Const(np.array([0.1, 0.2, 0.3], F32)), Const(np.array([1, -2, 3], I8))], axis=1)
    add("DequantizeLinear_v23_output_dtype", 23, "DequantizeLinear", [qi, Const(np.array(0.1, F32))],
        output_dtype=TensorProto.FLOAT16)
    for v in [24, 25]:
        add(f"DequantizeLinear_v{v}", v, "DequantizeLinear", [qi, Const(np.array(0.5, F32)), Const(np.array(2, U8))])
    add("QuantizeLinear_v21_blocked_zero_point_partial", 21, "QuantizeLinear",
        [q, Const(randn("qbs", (2, 2, 4), lo=0.02, hi=0.1)), Const(np.array([[[-3, 0, 2, 5]] * 2] * 2, I8))], axis=1,
        block_size=2)
    add("DequantizeLinear_v21_blocked", 21, "DequantizeLinear",
        [qi, Const(randn("dqbs", (2, 3, 2), lo=0.05, hi=0.2)), Const(np.array([[[3, 9]] * 3] * 2, U8))], axis=-1,
        block_size=2)
    add("DequantizeLinear_v23_blocked_int8_partial", 23, "DequantizeLinear",
        [qi.astype(I8), Const(randn("dqbs3", (1, 3, 4), lo=0.05, hi=0.2))], axis=0, block_size=3)
    add("QLinearMatMul_v21", 21, "QLinearMatMul",
        [np.arange(6, dtype=U8).reshape(2, 3) * 20, Const(np.array(0.1, F32)), Const(np.array(10, U8)),
         np.arange(6, dtype=U8).reshape(3, 2) * 15, Const(np.array(0.2, F32)), Const(np.array(5, U8)),
         Const(np.array(0.5, F32)), Const(np.array(3, U8))])


def type_widened_cases():
    x = randn("tw", (2, 3, 4))
    for v in TYPE_WIDENED:
        add(f"Identity_v{v}", v, "Identity", [x])
        add(f"Reshape_v{v}", v, "Reshape", [x, Const(np.array([3, -1], I64))])
        add(f"Shape_v{v}_start", v, "Shape", [x], start=1)
        add(f"Size_v{v}", v, "Size", [x])
        add(f"ConstantOfShape_v{v if v != 19 else 20}", v if v != 19 else 20, "ConstantOfShape",
            [Const(np.array([2, 3], I64))], value=numpy_helper.from_array(np.array([0.5], F32), "value"))
        add(f"Constant_v{v}", v, "Constant", [], value=numpy_helper.from_array(x, "value"))
        if v >= 21:
            add(f"Flatten_v{v}", v, "Flatten", [x], axis=2)
            add(f"Squeeze_v{v}", v, "Squeeze", [randn("sq", (2, 1, 4)), Const(np.array([1], I64))])
            add(f"Unsqueeze_v{v}", v, "Unsqueeze", [x, Const(np.array([0, 4], I64))])
            add(f"Transpose_v{v}", v, "Transpose", [x], perm=[2, 0, 1])
    add("Equal_v19", 19, "Equal", [np.array([1, 2, 3], I64), np.array([1, 5, 3], I64)])
    add("OptionalHasElement_v18_tensor", 18, "OptionalHasElement", [x])
    add("OptionalGetElement_v18_tensor", 18, "OptionalGetElement", [x])
    inf = np.array([1.0, np.inf, -np.inf, np.nan, 0.0], F32)
    add("IsInf_v20", 20, "IsInf", [inf], detect_positive=0)
    add("IsNaN_v20", 20, "IsNaN", [inf])
    add("TopK_v24", 24, "TopK", [randn("topk", (3, 5)), Const(np.array([2], I64))], n_out=2)


def signal_grid_cases():
    sig = randn("dft", (1, 8, 1))
    add("DFT_v20_default_axis", 20, "DFT", [sig])
    add("DFT_v20_onesided_axis", 20, "DFT", [sig, None, Const(np.array(1, I64))], onesided=1)
    add("DFT_v20_inverse_length", 20, "DFT", [randn("dfti", (1, 6, 2)), Const(np.array(6, I64)),
                                              Const(np.array(-2, I64))], inverse=1)
    img = randn("gs", (1, 1, 4, 4))
    grid = randn("gsg", (1, 3, 3, 2), lo=-1.0, hi=1.0)
    for mode in ["linear", "nearest", "cubic"]:
        add(f"GridSample_v20_{mode}", 20, "GridSample", [img, grid], mode=mode)
    add("GridSample_v20_align_corners", 20, "GridSample", [img, grid], align_corners=1, padding_mode="border")
    add("GridSample_v22", 22, "GridSample", [img, grid])
    vol = randn("gs3", (1, 2, 3, 4, 5))
    grid3 = randn("gsg3", (1, 2, 3, 2, 3), lo=-1.2, hi=1.2)
    for mode, pad, align in [("linear", "zeros", 0), ("nearest", "border", 0), ("linear", "reflection", 1),
                             ("linear", "border", 0)]:
        add(f"GridSample_v20_volume_{mode}_{pad}_align{align}", 20, "GridSample", [vol, grid3], mode=mode,
            padding_mode=pad, align_corners=align)


def bfloat16_widened_cases():
    x = randn("u22", (2, 3, 4))
    for op, attrs in [("Elu", {}), ("Selu", {}), ("HardSigmoid", {}), ("HardSwish", {}), ("Softsign", {}),
                      ("Softplus", {}), ("Sin", {}), ("Cos", {}), ("Tan", {}), ("Atan", {}), ("Sinh", {}),
                      ("Cosh", {}), ("Asinh", {}), ("Round", {}), ("ThresholdedRelu", {"alpha": 0.5}),
                      ("Mish", {})]:
        add(f"{op}_v22", 22, op, [x], **attrs)
    unit = randn("unit", (2, 3, 4), lo=-0.9, hi=0.9)
    for op in ["Asin", "Acos", "Atanh"]:
        add(f"{op}_v22", 22, op, [unit])
    add("Acosh_v22", 22, "Acosh", [randn("acosh", (2, 3), lo=1.0, hi=4.0)])
    img = randn("img22", (1, 2, 5, 5))
    add("MaxPool_v22", 22, "MaxPool", [img], kernel_shape=[2, 2], strides=[2, 2])
    add("Conv_v22", 22, "Conv", [img, Const(randn("w22", (3, 2, 3, 3))), Const(randn("b22", (3,)))], pads=[1, 1, 1, 1])
    add("ConvTranspose_v22", 22, "ConvTranspose", [img, Const(randn("wt22", (2, 3, 2, 2)))], strides=[2, 2])
    wt, bt = Const(randn("wt3", (2, 4, 3, 3))), Const(randn("bt3", (4,)))
    add("ConvTranspose_v22_bias_pads_output_padding", 22, "ConvTranspose", [img, wt, bt], strides=[2, 2],
        pads=[1, 0, 1, 1], output_padding=[1, 0])
    add("ConvTranspose_v22_group_dilations", 22, "ConvTranspose", [img, Const(randn("wtg", (2, 3, 2, 3)))], group=2,
        dilations=[2, 1], strides=[1, 2])
    add("ConvTranspose_v22_auto_pad_same", 22, "ConvTranspose", [img, wt, bt], strides=[2, 2], auto_pad="SAME_UPPER")
    add("ConvTranspose_v22_output_shape", 22, "ConvTranspose", [img, wt], strides=[3, 2], output_shape=[14, 9])
    add("ConvTranspose_v22_crop", 22, "ConvTranspose", [img, wt], pads=[3, 2, 3, 3])
    add("ConvTranspose_v22_1d_bias", 22, "ConvTranspose",
        [randn("ct1", (2, 3, 6)), Const(randn("ct1w", (3, 2, 4))), Const(randn("ct1b", (2,)))], strides=[4])
    add("ConvTranspose_v22_3d", 22, "ConvTranspose", [randn("ct3", (1, 2, 2, 3, 2)), Const(randn("ct3w", (2, 2, 2, 2, 2)))],
        strides=[2, 2, 2])
    for op in ["GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"]:
        add(f"{op}_v22", 22, op, [img])
    add("InstanceNormalization_v22", 22, "InstanceNormalization",
        [img, Const(randn("is", (2,))), Const(randn("ib", (2,)))])
    add("LpNormalization_v22", 22, "LpNormalization", [x], axis=-1)
    add("Dropout_v22", 22, "Dropout", [x])
    add("RoiAlign_v22", 22, "RoiAlign",
        [img, Const(np.array([[0.5, 0.5, 3.5, 3.0]], F32)), Const(np.array([0], I64))], output_height=2, output_width=2)
    add("Det_v22", 22, "Det", [randn("det", (2, 3, 3))])
    add("EyeLike_v22", 22, "EyeLike", [randn("eye", (3, 4))], k=1)
    seq = randn("rnn", (4, 1, 3))
    add("RNN_v22", 22, "RNN", [seq, Const(randn("rw", (1, 5, 3))), Const(randn("rr", (1, 5, 5)))], n_out=2,
        hidden_size=5)
    add("GRU_v22", 22, "GRU", [seq, Const(randn("gw", (1, 15, 3))), Const(randn("gr", (1, 15, 5)))], n_out=2,
        hidden_size=5)
    add("LSTM_v22", 22, "LSTM", [seq, Const(randn("lw", (1, 20, 3))), Const(randn("lr", (1, 20, 5)))], n_out=3,
        hidden_size=5)
    add("NegativeLogLikelihoodLoss_v22", 22, "NegativeLogLikelihoodLoss",
        [randn("nll", (3, 5)), np.array([0, 4, 2], I64)], reduction="mean")


def expanded_function_cases():
    x = randn("fn", (2, 3, 4))
    add("Mish_v18", 18, "Mish", [x])
    add("Gelu_v20", 20, "Gelu", [x])
    add("Gelu_v20_tanh", 20, "Gelu", [x], approximate="tanh")
    add("Swish_v24", 24, "Swish", [x])
    add("Swish_v24_alpha", 24, "Swish", [x], alpha=0.5)
    add("RMSNormalization_v23", 23, "RMSNormalization", [x, Const(randn("rs", (4,)))])
    add("RMSNormalization_v23_axis1", 23, "RMSNormalization", [x, Const(randn("rs2", (3, 4)))], axis=1, epsilon=1e-3)
    add("RMSNormalization_v23_f16", 23, "RMSNormalization", [x.astype(F16), Const(randn("rs3", (4,), F16))])
    img = randn("gn", (2, 4, 3, 3))
    add("GroupNormalization_v18", 18, "GroupNormalization", [img, Const(randn("g18s", (2,))), Const(randn("g18b", (2,)))],
        num_groups=2)
    add("GroupNormalization_v21", 21, "GroupNormalization", [img, Const(randn("g21s", (4,))), Const(randn("g21b", (4,)))],
        num_groups=2, epsilon=1e-3)
    add("GroupNormalization_v21_one_group", 21, "GroupNormalization",
        [randn("gn1", (1, 6, 5)), Const(randn("g1s", (6,))), Const(randn("g1b", (6,)))], num_groups=1)
    crop = randn("ccp", (2, 5, 4))
    add("CenterCropPad_v18_crop", 18, "CenterCropPad", [crop, Const(np.array([2, 3, 2], I64))])
    add("CenterCropPad_v18_pad", 18, "CenterCropPad", [crop, Const(np.array([3, 7, 6], I64))])
    add("CenterCropPad_v18_axes", 18, "CenterCropPad", [crop, Const(np.array([3, 6], I64))], axes=[1, 2])


def new_op_cases():
    a = np.arange(12, dtype=I32).reshape(3, 4) * 5
    add("BitwiseAnd_v18", 18, "BitwiseAnd", [a, a[::-1].copy()])
    add("BitwiseNot_v18", 18, "BitwiseNot", [a])
    add("BitwiseOr_v18_broadcast", 18, "BitwiseOr", [a, np.array([1, 2, 4, 8], I32)])
    u = np.array([[0, 255, 17], [128, 3, 96]], np.uint8)
    add("BitwiseXor_v18_uint8", 18, "BitwiseXor", [u, u[:, ::-1].copy()])
    add("BitwiseNot_v18_uint8", 18, "BitwiseNot", [u])
    add("Col2Im_v18", 18, "Col2Im", [randn("c2i", (1, 4, 4)), Const(np.array([3, 3], I64)), Const(np.array([2, 2], I64))])
    add("Col2Im_v18_strided_padded", 18, "Col2Im",
        [randn("c2s", (1, 8, 9)), Const(np.array([5, 5], I64)), Const(np.array([2, 2], I64))], strides=[2, 2],
        pads=[1, 1, 1, 1])
    add("Col2Im_v18_dilated", 18, "Col2Im",
        [randn("c2d", (2, 4, 8)), Const(np.array([4, 5], I64)), Const(np.array([2, 2], I64))], dilations=[2, 1])
    add("DeformConv_v19", 19, "DeformConv",
        [randn("dc", (1, 1, 4, 4)), Const(randn("dcw", (1, 1, 2, 2))), randn("dco", (1, 8, 3, 3)) * 0.1])
    add("DeformConv_v19_groups_mask_bias", 19, "DeformConv",
        [randn("dg", (1, 4, 5, 5)), Const(randn("dgw", (2, 2, 3, 3))), randn("dgo", (1, 36, 5, 5)),
         Const(randn("dgb", (2,))), randn("dgm", (1, 18, 5, 5), lo=0.0, hi=1.0)],
        group=2, offset_group=2, pads=[1, 1, 1, 1])
    add("DeformConv_v22_strided", 22, "DeformConv",
        [randn("ds", (2, 1, 6, 6)), Const(randn("dsw", (3, 1, 2, 2))), randn("dso", (2, 8, 3, 3)) * 2],
        strides=[2, 2], dilations=[1, 1])
    add("AffineGrid_v20", 20, "AffineGrid", [randn("ag", (1, 2, 3)), Const(np.array([1, 1, 3, 3], I64))])
    add("AffineGrid_v20_align_corners", 20, "AffineGrid", [randn("ag2", (2, 2, 3)), Const(np.array([2, 3, 4, 5], I64))],
        align_corners=1)
    add("AffineGrid_v20_3d", 20, "AffineGrid", [randn("ag3", (1, 3, 4)), Const(np.array([1, 1, 2, 3, 4], I64))])
    add("TensorScatter_v24", 24, "TensorScatter",
        [randn("ts", (1, 2, 5, 4)), randn("tsu", (1, 2, 1, 4)), Const(np.array([2], I64))])
    add("TensorScatter_v24_circular", 24, "TensorScatter",
        [randn("tsc", (2, 1, 4, 3)), randn("tscu", (2, 1, 3, 3)), np.array([3, 1], I64)], mode="circular")
    add("TensorScatter_v24_no_indices_axis", 24, "TensorScatter",
        [randn("tsa", (2, 6, 3)), randn("tsau", (2, 2, 3))], axis=1)
    add("CumProd_v26", 26, "CumProd", [randn("cp", (2, 3)), Const(np.array(1, I64))])
    add("CumProd_v26_exclusive_reverse", 26, "CumProd", [randn("cp2", (3, 4)), Const(np.array(0, I64))],
        exclusive=1, reverse=1)
    add("CumProd_v26_int64", 26, "CumProd", [np.arange(1, 9, dtype=I64).reshape(2, 4), Const(np.array(-1, I64))])
    add("BitCast_v26", 26, "BitCast", [randn("bc", (4,))], to=TensorProto.INT32)
    add("BitCast_v26_int32_to_float", 26, "BitCast", [np.array([[1065353216, -1082130432], [0, 1]], I32)],
        to=TensorProto.FLOAT)
    add("BitCast_v26_float16_to_uint16", 26, "BitCast", [randn("bc16", (3, 2), F16)], to=TensorProto.UINT16)


def contrib_cases():
    ms = "com.microsoft"
    img = randn("fc", (1, 2, 5, 5))
    w, bias = Const(randn("fcw", (3, 2, 3, 3))), Const(randn("fcb", (3,)))
    for act, params in [("Relu", None), ("Tanh", None), ("Sigmoid", None), ("LeakyRelu", [0.1]),
                        ("HardSigmoid", [0.2, 0.5]), ("Clip", [-0.5, 0.5])]:
        extra = {"activation_params": params} if params else {}
        add(f"FusedConv_{act}", 17, "FusedConv", [img, w, bias], domain=ms, activation=act, pads=[1, 1, 1, 1], **extra)
    add("FusedConv_Relu_sum", 17, "FusedConv", [img, w, bias, randn("fcz", (1, 3, 5, 5))], domain=ms, activation="Relu",
        pads=[1, 1, 1, 1])
    a, bm = randn("fg", (4, 6)), Const(randn("fgb", (6, 5)))
    add("FusedGemm_Relu", 17, "FusedGemm", [a, bm, Const(randn("fgc", (5,)))], domain=ms, activation="Relu")
    add("FusedGemm_LeakyRelu_transB", 17, "FusedGemm", [a, Const(randn("fgt", (5, 6))), Const(randn("fgc2", (5,)))],
        domain=ms, activation="LeakyRelu", activation_alpha=0.2, transB=1, alpha=0.5, beta=2.0)
    add("FusedMatMul", 17, "FusedMatMul", [a, bm], domain=ms)
    add("FusedMatMul_transA_alpha", 17, "FusedMatMul", [randn("fma", (6, 4)), bm], domain=ms, transA=1, alpha=0.25)
    add("FusedMatMul_batch_transB", 17, "FusedMatMul", [randn("fmb", (2, 3, 4)), randn("fmbb", (2, 5, 4))], domain=ms,
        transB=1)
    x = randn("gelu", (2, 3, 8))
    add("Gelu_contrib", 17, "Gelu", [x], domain=ms)
    add("BiasGelu", 17, "BiasGelu", [x, Const(randn("bg", (8,)))], domain=ms)
    add("FastGelu", 17, "FastGelu", [x], domain=ms)
    add("FastGelu_bias", 17, "FastGelu", [x, Const(randn("fgb2", (8,)))], domain=ms)
    add("QuickGelu", 17, "QuickGelu", [x], domain=ms)
    add("QuickGelu_alpha", 17, "QuickGelu", [x], domain=ms, alpha=1.0)
    add("BiasAdd", 17, "BiasAdd", [x, Const(randn("ba", (8,))), randn("bas", (2, 3, 8))], domain=ms)
    gamma, beta, b8 = Const(randn("g", (8,))), Const(randn("bt", (8,))), Const(randn("b8", (8,)))
    skip = randn("skip", (2, 3, 8))
    add("LayerNormalization_v17_unused_mean", 17, "LayerNormalization", [x, gamma, beta], n_out=[True, False, True])
    add("SimplifiedLayerNormalization", 17, "SimplifiedLayerNormalization", [x, gamma], epsilon=1e-5)
    add("SkipLayerNormalization", 17, "SkipLayerNormalization", [x, skip, gamma, beta], domain=ms, epsilon=1e-5)
    add("SkipLayerNormalization_bias_sum", 17, "SkipLayerNormalization", [x, skip, gamma, beta, b8],
        n_out=[True, False, False, True], domain=ms)
    add("SkipSimplifiedLayerNormalization", 17, "SkipSimplifiedLayerNormalization", [x, skip, gamma], domain=ms,
        epsilon=1e-5)
    add("SkipSimplifiedLayerNormalization_bias_sum", 17, "SkipSimplifiedLayerNormalization", [x, skip, gamma, b8],
        n_out=[True, False, False, True], domain=ms, epsilon=1e-5)
    nbits = Const(rng_for("mnbq").integers(0, 256, (6, 2, 8), dtype=U8))
    nscales = Const(randn("mnbs", (12,), lo=0.01, hi=0.2))
    add("MatMulNBits", 17, "MatMulNBits",
        [randn("mnb", (2, 16)), Const(np.arange(32, dtype=U8).reshape(4, 1, 8)), Const(np.full((4,), 0.1, F32))],
        domain=ms, K=16, N=4, bits=4, block_size=16)
    add("MatMulNBits_zero_points_bias", 17, "MatMulNBits",
        [randn("mnb2", (3, 2, 32)), nbits, nscales, Const(rng_for("mnbz").integers(0, 256, (6,), dtype=U8)), None,
         Const(randn("mnbb", (6,)))], domain=ms, K=32, N=6, bits=4, block_size=16)
    add("MatMulNBits_partial_block", 17, "MatMulNBits", [randn("mnb3", (2, 20)), nbits, nscales], domain=ms, K=20, N=6,
        bits=4, block_size=16)
    add("MatMulNBits_8bit", 17, "MatMulNBits",
        [randn("mnb4", (2, 16)), Const(rng_for("mnb8").integers(0, 256, (3, 1, 16), dtype=U8)),
         Const(randn("mnb8s", (3,), lo=0.01, hi=0.05))], domain=ms, K=16, N=3, bits=8, block_size=16)


def gqa_cases():
    """com.microsoft GroupQueryAttention as ONNX Runtime's CPU kernel runs it: a
    first prompt (no past), token generation over a past cache with ragged
    sequence lengths, a later prompt chunk, rotary embeddings (halves and
    interleaved), a local window, softcap, smooth softmax and packed QKV.
    seqlens_k and total_sequence_length are int32, as initializers or inputs."""
    ms, I32s = "com.microsoft", lambda *v: np.array(v, I32)
    b, s, heads, kv, d = 2, 4, 4, 2, 16
    q, k, v = randn("gq", (b, s, heads * d)), randn("gk", (b, s, kv * d)), randn("gv", (b, s, kv * d))
    prompt = [q, k, v, None, None, Const(I32s(s - 1, s - 1)), Const(np.array(s, I32))]
    add("GroupQueryAttention_prompt", 17, "GroupQueryAttention", prompt, n_out=3, domain=ms, num_heads=heads,
        kv_num_heads=kv)
    add("GroupQueryAttention_prompt_local_window_softcap", 17, "GroupQueryAttention", prompt, n_out=3, domain=ms,
        num_heads=heads, kv_num_heads=kv, local_window_size=2, softcap=1.5, scale=0.3)
    add("GroupQueryAttention_prompt_smooth_softmax", 17, "GroupQueryAttention", prompt, domain=ms, num_heads=heads,
        kv_num_heads=kv, smooth_softmax=1)
    packed = randn("gqkv", (b, s, (heads + 2 * kv) * d))
    add("GroupQueryAttention_packed_qkv", 17, "GroupQueryAttention",
        [packed, None, None, None, None, Const(I32s(s - 1, s - 1)), Const(np.array(s, I32))], n_out=3, domain=ms,
        num_heads=heads, kv_num_heads=kv)
    cos = Const(np.cos(np.outer(np.arange(12), 1.0 / 10000 ** (np.arange(8) / 8))).astype(F32))
    sin = Const(np.sin(np.outer(np.arange(12), 1.0 / 10000 ** (np.arange(8) / 8))).astype(F32))
    for inter in (0, 1):
        add(f"GroupQueryAttention_prompt_rotary_interleaved{inter}", 17, "GroupQueryAttention",
            prompt + [cos, sin], n_out=3, domain=ms, num_heads=heads, kv_num_heads=kv, do_rotary=1,
            rotary_interleaved=inter)
    past = 5
    pk, pv = randn("gpk", (b, kv, past, d)), randn("gpv", (b, kv, past, d))
    step = [randn("gq1", (b, 1, heads * d)), randn("gk1", (b, 1, kv * d)), randn("gv1", (b, 1, kv * d)), pk, pv]
    add("GroupQueryAttention_decode_ragged", 17, "GroupQueryAttention",
        step + [I32s(past, 2), np.array(past + 1, I32)], n_out=3, domain=ms, num_heads=heads, kv_num_heads=kv)
    add("GroupQueryAttention_decode_rotary_window", 17, "GroupQueryAttention",
        step + [Const(I32s(past, 3)), Const(np.array(past + 1, I32)), cos, sin], n_out=3, domain=ms,
        num_heads=heads, kv_num_heads=kv, do_rotary=1, local_window_size=3)
    add("GroupQueryAttention_decode_shared_buffer", 17, "GroupQueryAttention",
        step + [I32s(3, 1), np.array(4, I32)], n_out=3, domain=ms, num_heads=heads, kv_num_heads=kv)
    chunk = [randn("gqc", (1, 3, heads * d)), randn("gkc", (1, 3, kv * d)), randn("gvc", (1, 3, kv * d)),
             pk[:1].copy(), pv[:1].copy()]
    add("GroupQueryAttention_prompt_chunk_rotary", 17, "GroupQueryAttention",
        chunk + [Const(I32s(past + 2)), Const(np.array(past + 3, I32)), cos, sin], n_out=3, domain=ms,
        num_heads=heads, kv_num_heads=kv, do_rotary=1)


def attention_cases():
    q, k, v = randn("att", (1, 2, 3, 4)), randn("attk", (1, 2, 5, 4)), randn("attv", (1, 2, 5, 6))
    add("Attention_v23", 23, "Attention", [q, randn("attk", (1, 2, 3, 4)), randn("attv", (1, 2, 3, 4))])
    add("Attention_v23_cross_scale", 23, "Attention", [q, k, v], scale=0.3)
    add("Attention_v23_3d_heads", 23, "Attention", [randn("a3q", (2, 3, 8)), randn("a3k", (2, 4, 8)),
                                                    randn("a3v", (2, 4, 8))], q_num_heads=2, kv_num_heads=2)
    add("Attention_v23_gqa", 23, "Attention", [randn("agq", (1, 4, 3, 4)), k, randn("agv", (1, 2, 5, 4))])
    add("Attention_v23_causal", 23, "Attention", [randn("acq", (1, 2, 4, 4)), randn("acq", (1, 2, 4, 4)) * 0.5,
                                                  randn("acv", (1, 2, 4, 4))], is_causal=1)
    add("Attention_v23_bool_mask", 23, "Attention",
        [q, k, v, np.array([[True, False, True, True, False]] * 3, BOOL)])
    add("Attention_v23_float_mask", 23, "Attention", [q, k, v, randn("afm", (1, 1, 3, 5))])
    past_k, past_v = randn("apk", (1, 2, 2, 4)), randn("apv", (1, 2, 2, 6))
    add("Attention_v23_past_causal_present", 23, "Attention", [q, randn("ank", (1, 2, 3, 4)),
                                                               randn("anv", (1, 2, 3, 6)), None, past_k, past_v],
        n_out=3, is_causal=1)
    add("Attention_v23_softcap_qk_output", 23, "Attention", [q, k, v], n_out=[True, False, False, True], softcap=2.0,
        qk_matmul_output_mode=1)
    add("Attention_v24", 24, "Attention", [q, k, v, randn("am24", (3, 5))])
    x4 = randn("rot", (1, 2, 3, 8))
    add("RotaryEmbedding_v23", 23, "RotaryEmbedding",
        [q, Const(randn("cos", (1, 3, 2))), Const(randn("sin", (1, 3, 2)))])
    cache_cos, cache_sin = Const(np.cos(np.arange(24).reshape(6, 4) * 0.1).astype(F32)), \
        Const(np.sin(np.arange(24).reshape(6, 4) * 0.1).astype(F32))
    add("RotaryEmbedding_v23_position_ids_interleaved", 23, "RotaryEmbedding",
        [x4, cache_cos, cache_sin, np.array([[2, 0, 5]], I64)], interleaved=1)
    add("RotaryEmbedding_v23_3d_partial", 23, "RotaryEmbedding",
        [randn("rot3", (2, 3, 12)), Const(randn("c3", (2, 3, 2))), Const(randn("s3", (2, 3, 2)))], num_heads=2,
        rotary_embedding_dim=4)
    ms = "com.microsoft"
    x = randn("gelu", (2, 3, 8))
    w, bqkv = Const(randn("aw", (8, 24))), Const(randn("ab", (24,)))
    add("Attention_contrib", 17, "Attention", [x, w, bqkv], domain=ms, num_heads=2)
    add("Attention_contrib_mask_unidirectional", 17, "Attention",
        [x, w, bqkv, np.array([[1, 1, 0], [1, 1, 1]], I32)], domain=ms, num_heads=2, unidirectional=1)
    add("Attention_contrib_attention_bias_scale", 17, "Attention",
        [x, w, bqkv, None, None, randn("aab", (2, 1, 3, 3))], domain=ms, num_heads=4, scale=0.2)
    mq, mk, mv = randn("mhq", (2, 3, 8)), randn("mhk", (2, 5, 8)), randn("mhv", (2, 5, 4))
    add("MultiHeadAttention", 17, "MultiHeadAttention", [mq, mk, mv], domain=ms, num_heads=2)
    add("MultiHeadAttention_bias_key_padding_mask", 17, "MultiHeadAttention",
        [mq, mk, mv, Const(randn("mhb", (20,))), np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], I32)], domain=ms,
        num_heads=2)
    add("MultiHeadAttention_past_present", 17, "MultiHeadAttention",
        [mq, randn("mhk2", (2, 3, 8)), randn("mhv2", (2, 3, 8)), None, None, None, randn("mhpk", (2, 2, 2, 4)),
         randn("mhpv", (2, 2, 2, 4))], n_out=3, domain=ms, num_heads=2)
    add("RotaryEmbedding_contrib", 17, "RotaryEmbedding",
        [randn("crx", (1, 3, 16)), np.array([[0, 1, 2]], I64), cache_cos, cache_sin], domain=ms, num_heads=2)
    add("RotaryEmbedding_contrib_offset_interleaved", 17, "RotaryEmbedding",
        [randn("crx2", (2, 3, 8)), Const(np.array([2], I64)), cache_cos, cache_sin], domain=ms, num_heads=1,
        interleaved=1)


MODELS = []  # (name, ModelProto, feeds): cases that are more than one node


def with_default(function, attribute):
    """`function` with a default for one of its attributes: FunctionProto field
    11 (attribute_proto), which Debian's onnx 1.12 lacks, appended as bytes."""
    body = attribute.SerializeToString()
    tag, size = bytes([(11 << 3) | 2]), b""
    n = len(body)
    while True:
        size += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            break
    f = onnx.FunctionProto()
    f.ParseFromString(function.SerializeToString() + tag + size + body)
    return f


def function_model(name, nodes, inputs, outputs, functions, inits=()):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, v.shape)
                                            for n, v in inputs], [onnx.ValueInfoProto(name=o) for o in outputs],
                              list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
                              producer_name="kiln-tests", functions=functions)
    model.ir_version = 8
    MODELS.append((name, model, [v for _, v in inputs]))


def local_function_cases():
    x = randn("fnx", (2, 3, 4))
    op17 = [helper.make_opsetid("", 17)]
    act = helper.make_function("local", "Act", ["x"], ["y"], [
        helper.make_node("LeakyRelu", ["x"], ["t"], alpha=0.0),
        helper.make_node("Mul", ["t", "t"], ["y"])], op17, [])
    act.node[0].attribute[0].ref_attr_name = "alpha"
    act.attribute.append("alpha")
    function_model("Function_twice_with_attribute", [
        helper.make_node("Act", ["x"], ["a"], domain="local", name="first", alpha=0.3),
        helper.make_node("Act", ["a"], ["y"], domain="local", name="second", alpha=0.1)], [("x", x)], ["y"], [act])
    defaulted = with_default(act, helper.make_attribute("alpha", 0.5))
    del defaulted.attribute[:]
    function_model("Function_attribute_default", [helper.make_node("Act", ["x"], ["y"], domain="local")], [("x", x)],
                   ["y"], [defaulted])
    inner = helper.make_function("local", "Inner", ["p", "q"], ["r"], [
        helper.make_node("Add", ["p", "q"], ["s"]), helper.make_node("Tanh", ["s"], ["r"])], op17, [])
    outer = helper.make_function("local", "Outer", ["x"], ["y", "z"], [
        helper.make_node("Inner", ["x", "x"], ["h"], domain="local"),
        helper.make_node("Inner", ["h", "x"], ["y"], domain="local"),
        helper.make_node("Neg", ["h"], ["z"])], op17 + [helper.make_opsetid("local", 1)], [])
    function_model("Function_nested_two_outputs", [helper.make_node("Outer", ["x"], ["y", "z"], domain="local")],
                   [("x", x)], ["y", "z"], [outer, inner])
    clip = helper.make_function("local", "Clamp", ["x", "lo", "hi"], ["y"], [
        helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], op17, [])
    function_model("Function_optional_input_left_out",
                   [helper.make_node("Clamp", ["x", "", "hi"], ["y"], domain="local")], [("x", x)], ["y"], [clip],
                   [numpy_helper.from_array(np.array(0.25, F32), "hi")])
    ident = helper.make_function("local", "Pass", ["x"], ["y"], [helper.make_node("Identity", ["x"], ["y"])], op17, [])
    function_model("Function_output_is_graph_output",
                   [helper.make_node("Pass", ["x"], ["mid"], domain="local"), helper.make_node("Relu", ["mid"], ["y"])],
                   [("x", x)], ["mid", "y"], [ident])


F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, UINT4, INT4 = 17, 18, 19, 20, 21, 22
FLOAT4E2M1, FLOAT8E8M0, UINT2, INT2 = 23, 24, 25, 26
FLOAT8 = {"e4m3fn": F8E4M3FN, "e4m3fnuz": F8E4M3FNUZ, "e5m2": F8E5M2, "e5m2fnuz": F8E5M2FNUZ}
FLOAT8_MAX = {F8E4M3FN: 448.0, F8E4M3FNUZ: 240.0, F8E5M2: 57344.0, F8E5M2FNUZ: 57344.0}


def narrow_tensor(name, code, dims, stored):
    """A narrow-type initializer from its stored patterns (or integer values):
    one byte per element for float8, two per byte for the 4-bit types, four
    for the 2-bit ones, the first in the lowest bits. Debian's onnx 1.12 has
    none of these types, so the bytes are written as raw_data."""
    t = onnx.TensorProto(name=name, data_type=code, dims=list(dims))
    width = 4 if code in (UINT4, INT4, FLOAT4E2M1) else 2 if code in (UINT2, INT2) else 8
    per_byte, mask = 8 // width, (1 << width) - 1
    values = [int(v) & mask for v in stored] + [0] * (-len(stored) % per_byte)
    t.raw_data = bytes(sum(values[i + k] << (width * k) for k in range(per_byte))
                       for i in range(0, len(values), per_byte))
    return t


def chain_model(name, opset, nodes, inputs, inits=(), output="y"):
    """A case of several nodes: f32 (or given-type) graph inputs (name, array)
    and one output."""
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, elem_type(v.dtype), v.shape)
                                            for n, v in inputs],
        [onnx.ValueInfoProto(name=output)], list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="kiln-tests")
    model.ir_version = 10 if opset >= 21 else 9
    MODELS.append((name, model, [v for _, v in inputs]))


def narrow_int_casts(opset, types, floats, ints):
    """Casts of f32 and int32 inputs to each narrow integer type of `types`
    ((tag, code) pairs) and back."""
    for tag, code in types:
        for kind, x, back in [("float", floats, TensorProto.FLOAT), ("int32", ints, TensorProto.INT32)]:
            chain_model(f"Cast_v{opset}_{kind}_to_{tag}", opset, [
                helper.make_node("Cast", ["x"], ["t"], to=code),
                helper.make_node("Cast", ["t"], ["y"], to=back)], [("x", x)])


def narrow_int_quantize(opset, x, signed, unsigned):
    """A per-axis QuantizeLinear round trip through a signed narrow type
    (tag, code, scales, zero points) and a QuantizeLinear to an unsigned one
    chosen by output_dtype (tag, code, scale)."""
    tag, code, scales, zero_points = signed
    chain_model(f"QuantizeLinear_v{opset}_{tag}_per_axis_round_trip", opset, [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)], [("x", x)],
        [numpy_helper.from_array(np.array(scales, F32), "s"), narrow_tensor("z", code, [len(zero_points)], zero_points)])
    tag, code, scale = unsigned
    chain_model(f"QuantizeLinear_v{opset}_{tag}_output_dtype", opset, [
        helper.make_node("QuantizeLinear", ["x", "s"], ["q"], output_dtype=code),
        helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)], [("x", x)],
        [numpy_helper.from_array(np.array(scale, F32), "s")])


def float8_values(code, saturate):
    """Values that exercise rounding to a float8 type: ties to even, subnormals,
    signed zeros, and (saturating) overflow and infinities. Without saturation
    only values up to the largest finite one are used: ONNX Runtime 1.30 maps
    some beyond it (E4M3FN's [480, 496), E5M2's (59392, 65536)) to the largest
    finite value rather than to NaN / inf as the ONNX table asks."""
    top = FLOAT8_MAX[code]
    r = rng_for(f"f8_{code}_{saturate}")
    ties = [1.0625, 1.1875, 1.125, 1.375, -2.125, 5.5, 3.5, 0.3125, -0.0, 0.0]
    small = [1e-3, -1e-4, 2e-3, 6e-5, 1.5e-5, -3e-6]
    spread = r.standard_normal(24) * np.array([0.01, 1, 10, 100] * 6)
    values = ties + small + [top, -top, top * 0.99] + list(np.clip(spread, -top, top))
    if saturate:
        values += [top * 1.5, -top * 4, 1e6, np.inf, -np.inf, np.nan]
    return np.array(values, F32)


def narrow_type_cases():
    """Casts to and from the float8 and 4-bit types and quantization to them,
    between f32 graph inputs and outputs (onnxruntime-node cannot feed or return
    these types)."""
    for tag, code in FLOAT8.items():
        for saturate in [1, 0]:
            x = float8_values(code, saturate)
            chain_model(f"Cast_v19_float8{tag}_saturate{saturate}", 19, [
                helper.make_node("Cast", ["x"], ["t"], to=code, saturate=saturate),
                helper.make_node("Cast", ["t"], ["y"], to=TensorProto.FLOAT)], [("x", x)])
        patterns = [b for b in range(256)]
        chain_model(f"DequantizeLinear_v19_float8{tag}_every_pattern", 19, [
            helper.make_node("DequantizeLinear", ["q", "s"], ["d"]), helper.make_node("Add", ["d", "x"], ["y"])],
            [("x", np.zeros(256, F32))], [narrow_tensor("q", code, [256], patterns),
                                          numpy_helper.from_array(np.array(1.0, F32), "s")])
    q = randn("q8", (2, 3, 4)) * 4
    for tag, code in [("e4m3fn", F8E4M3FN), ("e5m2", F8E5M2)]:
        chain_model(f"QuantizeLinear_v19_float8{tag}_round_trip", 19, [
            helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
            helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])], [("x", q)],
            [numpy_helper.from_array(np.array(0.05, F32), "s"), narrow_tensor("z", code, [], [0])])
    chain_model("QuantizeLinear_v21_float8e4m3fn_per_axis_no_saturate", 21, [
        helper.make_node("QuantizeLinear", ["x", "s"], ["q"], axis=1, saturate=0, output_dtype=F8E4M3FN),
        helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)], [("x", q)],
        [numpy_helper.from_array(np.array([0.5, 0.01, 0.02], F32), "s")])
    chain_model("CastLike_v19_float8e5m2_target", 19, [
        helper.make_node("CastLike", ["x", "like"], ["t"]),
        helper.make_node("Cast", ["t"], ["y"], to=TensorProto.FLOAT)], [("x", float8_values(F8E5M2, 1))],
        [narrow_tensor("like", F8E5M2, [1], [0])])
    chain_model("CastLike_v19_float8e4m3fn_target_through_identity", 19, [
        helper.make_node("Identity", ["like"], ["like2"]),
        helper.make_node("CastLike", ["x", "like2"], ["t"]),
        helper.make_node("Cast", ["t"], ["y"], to=TensorProto.FLOAT)], [("x", float8_values(F8E4M3FN, 0))],
        [narrow_tensor("like", F8E4M3FN, [2], [0x38, 0x40])])
    chain_model("Constant_v19_float8e4m3fnuz", 19, [
        helper.make_node("Constant", [], ["c"], value=narrow_tensor("value", F8E4M3FNUZ, [4], [0x00, 0x3f, 0xc4, 0x7f])),
        helper.make_node("Cast", ["c"], ["f"], to=TensorProto.FLOAT), helper.make_node("Add", ["f", "x"], ["y"])],
        [("x", randn("c8", (4,)))])

    ints = np.array([0.0, 0.4, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.7, -7.9, 7.49, 8.5, -8.5, 15.6, 20, -3, 100.2,
                     -1000.7, 65535.5, np.inf, -np.inf, np.nan], F32)
    narrow_int_casts(21, [("uint4", UINT4), ("int4", INT4)], ints,
                     np.array([0, 1, 7, 8, 15, 16, 17, -1, -8, -9, -16, 1000, -1001, 2**31 - 1, -2**31], np.int32))
    narrow_int_quantize(21, q, ("int4", INT4, [0.2, 0.5, 1.0], [-1, 0, 2]), ("uint4", UINT4, 0.4))
    chain_model("QuantizeLinear_v21_int4_blocked_round_trip", 21, [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=2, block_size=2),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=2, block_size=2)], [("x", q)],
        [numpy_helper.from_array(randn("qb4", (2, 3, 2), lo=0.2, hi=0.6), "s"),
         narrow_tensor("z", INT4, [2, 3, 2], list(range(-6, 6)))])
    w = rng_for("w4").integers(-8, 8, 4 * 6)
    chain_model("DequantizeLinear_v21_int4_blocked_weights_matmul", 21, [
        helper.make_node("DequantizeLinear", ["w", "s"], ["wf"], axis=0, block_size=2),
        helper.make_node("MatMul", ["x", "wf"], ["y"])], [("x", randn("x4", (3, 4)))],
        [narrow_tensor("w", INT4, [4, 6], list(w)), numpy_helper.from_array(randn("s4", (2, 6), lo=0.05, hi=0.2), "s")])
    u = rng_for("u4").integers(0, 16, 5 * 3)
    chain_model("DequantizeLinear_v21_uint4_transposed_odd_count", 21, [
        helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
        helper.make_node("DequantizeLinear", ["wt", "s", "z"], ["d"]), helper.make_node("Add", ["d", "x"], ["y"])],
        [("x", randn("x5", (3, 5)))],
        [narrow_tensor("w", UINT4, [5, 3], list(u)), numpy_helper.from_array(np.array(0.25, F32), "s"),
         narrow_tensor("z", UINT4, [], [8])])
    chain_model("Constant_v21_int4_transposed", 21, [
        helper.make_node("Constant", [], ["c"], value=narrow_tensor("value", INT4, [2, 3], [-3, 7, -8, 0, 1, 5])),
        helper.make_node("Transpose", ["c"], ["r"], perm=[1, 0]),
        helper.make_node("Cast", ["r"], ["f"], to=TensorProto.FLOAT), helper.make_node("Add", ["f", "x"], ["y"])],
        [("x", randn("cs4", (3, 2)))])


def e8m0_values():
    """Values that exercise casts to FLOAT8E8M0: powers of two, values just
    around them, the midpoints 1.5 * 2^k where "nearest" goes up, f32
    subnormals around 2^-127, zeros, negatives, both ends, inf and NaN."""
    k = np.array([-126, -60, -3, -1, 0, 1, 5, 40, 126, 127], F32)
    powers = np.ldexp(np.ones_like(k), k.astype(int))
    around = np.concatenate([powers, np.nextafter(powers, np.inf), np.nextafter(powers, 0), powers * 1.5,
                             np.nextafter(powers * 1.5, 0), powers * 1.25, powers * 1.75])
    tiny = np.array([2.0 ** -127, 1.5 * 2.0 ** -127, 1.25 * 2.0 ** -127, 2.0 ** -128, 2.0 ** -140], F32)
    special = np.array([0.0, -0.0, -1.0, -2.0 ** -130, 3.0e38, np.inf, -np.inf, np.nan], F32)
    return np.concatenate([around[np.isfinite(around)], tiny, special]).astype(F32)


def scale_and_two_bit_cases():
    """FLOAT8E8M0 (opset 24) and UINT2/INT2 (opset 25), with ONNX Runtime as
    the oracle: casts from f32 in every rounding mode, every stored pattern
    decoded, and quantization to the 2-bit types."""
    x = e8m0_values()
    for mode in ["up", "down", "nearest"]:
        for saturate in [1, 0]:
            chain_model(f"Cast_v24_float8e8m0_{mode}_saturate{saturate}", 24, [
                helper.make_node("Cast", ["x"], ["t"], to=FLOAT8E8M0, saturate=saturate, round_mode=mode),
                helper.make_node("Cast", ["t"], ["y"], to=TensorProto.FLOAT)], [("x", x)])
    # ONNX Runtime 1.30's CastLike rounds up whatever its round_mode says, so the case keeps the default.
    chain_model("CastLike_v24_float8e8m0_target", 24, [
        helper.make_node("CastLike", ["x", "like"], ["t"]),
        helper.make_node("Cast", ["t"], ["y"], to=TensorProto.FLOAT)], [("x", x)],
        [narrow_tensor("like", FLOAT8E8M0, [1], [127])])
    chain_model("Cast_v24_float8e8m0_every_pattern", 24, [
        helper.make_node("Cast", ["q"], ["d"], to=TensorProto.FLOAT), helper.make_node("Add", ["d", "x"], ["y"])],
        [("x", np.zeros(256, F32))], [narrow_tensor("q", FLOAT8E8M0, [256], range(256))])
    ints = np.array([0.0, 0.4, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.7, -2.6, 1.49, 4.5, -4.5, 7.6, 20, -3, 100.2,
                     -1000.7, 65535.5, np.inf, -np.inf, np.nan], F32)
    narrow_int_casts(25, [("uint2", UINT2), ("int2", INT2)], ints,
                     np.array([0, 1, 2, 3, 4, 5, -1, -2, -3, -5, 1000, -1001, 2**31 - 1, -2**31], np.int32))
    for tag, code in [("uint2", UINT2), ("int2", INT2)]:
        chain_model(f"DequantizeLinear_v25_{tag}_every_pattern_odd_count", 25, [
            helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]), helper.make_node("Add", ["d", "x"], ["y"])],
            [("x", np.zeros(5, F32))], [narrow_tensor("q", code, [5], [0, 1, 2, 3, 1]),
                                        numpy_helper.from_array(np.array(0.5, F32), "s"),
                                        narrow_tensor("z", code, [], [1])])
    q = randn("q2", (2, 3, 4))
    narrow_int_quantize(25, q, ("int2", INT2, [0.5, 1.0, 2.0], [-1, 0, 1]), ("uint2", UINT2, 0.7))
    w = rng_for("w2").integers(-2, 2, 4 * 6)
    chain_model("DequantizeLinear_v25_int2_blocked_weights_matmul", 25, [
        helper.make_node("DequantizeLinear", ["w", "s"], ["wf"], axis=0, block_size=2),
        helper.make_node("MatMul", ["x", "wf"], ["y"])], [("x", randn("x2", (3, 4)))],
        [narrow_tensor("w", INT2, [4, 6], list(w)), numpy_helper.from_array(randn("s2", (2, 6), lo=0.05, hi=0.2), "s")])


SPEC_MODELS = []  # (name, ModelProto, feeds, outputs): cases whose expected outputs follow the ONNX spec


FLOAT4_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def float4_reference(x):
    """ONNX's cast to FLOAT4E2M1 (docs/technical/float4.md): nearest value,
    ties to the even pattern, saturating at +/-6, NaN to 6, signed zeros kept."""
    out = []
    for v in np.asarray(x, F32).ravel():
        if np.isnan(v):
            out.append(6.0)
            continue
        a = min(abs(float(v)), 6.0)
        dist = [abs(a - c) for c in FLOAT4_VALUES]
        best = min(range(8), key=lambda i: (dist[i], i % 2))
        out.append(np.copysign(FLOAT4_VALUES[best], v))
    return np.array(out, F32).reshape(np.shape(x))


def float4_cases():
    """FLOAT4E2M1 (opset 23). ONNX Runtime 1.30 has no CPU kernel that casts
    to or from it, so the expected outputs come from float4_reference and the
    spec's table of values."""
    mids = [(a + b) / 2 for a, b in zip(FLOAT4_VALUES, FLOAT4_VALUES[1:])]
    x = np.array(FLOAT4_VALUES + mids + [m * 1.001 for m in mids] + [m * 0.999 for m in mids] + [-m for m in mids] +
                 [-0.0, 0.1, -0.26, 7.0, -100.0, 1e30, np.inf, -np.inf, np.nan], F32)
    cast = [helper.make_node("Cast", ["x"], ["t"], to=FLOAT4E2M1),
            helper.make_node("Cast", ["t"], ["y"], to=TensorProto.FLOAT)]
    spec_model("Cast_v23_float4e2m1_spec", 23, cast, [("x", x)], [], float4_reference(x))
    patterns = list(range(16))
    values = np.array(FLOAT4_VALUES + [-v for v in FLOAT4_VALUES], F32)
    spec_model("DequantizeLinear_v23_float4e2m1_every_pattern_spec", 23, [
        helper.make_node("DequantizeLinear", ["q", "s"], ["d"]), helper.make_node("Add", ["d", "x"], ["y"])],
        [("x", np.zeros(16, F32))], [narrow_tensor("q", FLOAT4E2M1, [16], patterns),
                                     numpy_helper.from_array(np.array(0.25, F32), "s")], values * np.float32(0.25))
    q = randn("q4f", (2, 3, 4)) * 3
    scale = np.array([0.5, 1.0, 2.0], F32).reshape(1, 3, 1)
    spec_model("QuantizeLinear_v23_float4e2m1_per_axis_round_trip_spec", 23, [
        helper.make_node("QuantizeLinear", ["x", "s"], ["q"], axis=1, output_dtype=FLOAT4E2M1),
        helper.make_node("DequantizeLinear", ["q", "s"], ["y"], axis=1)], [("x", q)],
        [numpy_helper.from_array(scale.ravel(), "s")], float4_reference(q / scale) * scale)


def spec_model(name, opset, nodes, inputs, inits, expected):
    """A case like chain_model's whose expected output is given, not ONNX Runtime's."""
    chain_model(name, opset, nodes, inputs, inits)
    SPEC_MODELS.append((*MODELS.pop(), expected))


def recurrent_cases():
    """RNN, GRU and LSTM with constant weights in the forms lower-recurrent unrolls (ONNX Runtime refuses
    layout 1: tests/unit/PassesTest.cpp checks it against the interpreter)."""
    x = randn("rx", (3, 2, 4))
    h0, c0 = randn("rh0", (2, 2, 5)), randn("rc0", (2, 2, 5))
    def weights(tag, gates, dirs):
        return [Const(randn(tag + "w", (dirs, gates * 5, 4))), Const(randn(tag + "r", (dirs, gates * 5, 5))),
                Const(randn(tag + "b", (dirs, 2 * gates * 5)))]
    add("LSTM_v22_bidirectional_peepholes", 22, "LSTM",
        [x, *weights("lb", 4, 2), None, h0, c0, Const(randn("lp", (2, 15)))], n_out=3, hidden_size=5,
        direction="bidirectional")
    add("LSTM_v22_clip_input_forget", 22, "LSTM", [x, *weights("lc", 4, 1)], n_out=[True, False, True],
        hidden_size=5, clip=0.5, input_forget=1)
    add("GRU_v22_linear_before_reset_reverse", 22, "GRU", [x, *weights("gl", 3, 1)], n_out=2, hidden_size=5,
        linear_before_reset=1, direction="reverse")
    add("GRU_v22_bidirectional_initial_h", 22, "GRU", [x, *weights("gb", 3, 2), None, h0], n_out=2, hidden_size=5,
        direction="bidirectional")
    add("GRU_v22_activations", 22, "GRU", [x, *weights("ga", 3, 1)], n_out=2, hidden_size=5,
        activations=["HardSigmoid", "Softsign"], activation_alpha=[0.3], activation_beta=[0.4])
    add("RNN_v22_relu_initial_h", 22, "RNN", [x, *weights("rl", 1, 1), None, h0[:1]], n_out=2, hidden_size=5,
        activations=["Relu"])
    add("RNN_v22_full_sequence_lens", 22, "RNN", [x, *weights("rs", 1, 1), Const(np.array([3, 3], np.int32))],
        n_out=2, hidden_size=5)


def S(*strings):
    """A string tensor (numpy unicode), reshaped by a trailing tuple when given."""
    dims = strings[-1] if strings and isinstance(strings[-1], tuple) else None
    arr = np.array(list(strings[:-1] if dims else strings), dtype=str)
    return arr.reshape(dims) if dims else arr


def string_cases():
    """Opset 20's string ops, StringNormalizer, casts to and from STRING, and
    the ops that move string elements (run on kiln's ids). ONNX Runtime's
    StringNormalizer needs its locale installed: the cases name C.UTF-8."""
    words = S("Hello", "wörld", "", "a b", "ÉCOLE", "x" * 40, (2, 3))
    add("StringConcat_v20", 20, "StringConcat", [words, S("!", "?", "", "-", "straße", "y", (2, 3))])
    add("StringConcat_v20_broadcast", 20, "StringConcat", [words, S("_suffix")])
    add("StringConcat_v20_const_scalar", 20, "StringConcat", [Const(np.array("pre:", dtype=str)), words])
    lines = S("  split these  words ", "a,b,,c", "one", "", "x--y--z--", "tab\tand\nnewline", (2, 3))
    add("StringSplit_v20_whitespace", 20, "StringSplit", [lines], n_out=2)
    add("StringSplit_v20_comma", 20, "StringSplit", [lines], n_out=2, delimiter=",")
    add("StringSplit_v20_multichar_maxsplit", 20, "StringSplit", [lines], n_out=2, delimiter="--", maxsplit=1)
    add("StringSplit_v20_whitespace_maxsplit", 20, "StringSplit", [lines], n_out=2, maxsplit=1)
    mails = S("someone@example.com", "not an address", "x@y.z", "@nobody.org", "üñí@çødé.de", "UPPER@CASE.COM")
    add("RegexFullMatch_v20_email", 20, "RegexFullMatch", [mails], pattern=r"[\w.+-]+@[\w-]+\.[\w.-]+")
    add("RegexFullMatch_v20_partial_is_no_match", 20, "RegexFullMatch", [S("abc123", "123", "12a", (3, 1))],
        pattern=r"\d+")
    add("RegexFullMatch_v20_alternation", 20, "RegexFullMatch", [mails], pattern="(?i)[a-z]+@(example|case)\\.com")
    add("Equal_v19_string", 19, "Equal", [S("a", "b", "ab", "", (2, 2)), S("a", "B", "ab", "x", (2, 2))])
    add("Equal_v19_string_broadcast", 19, "Equal", [words, S("Hello")])
    add("StringNormalizer_v10_lower_stopwords", 10, "StringNormalizer", [S("The", "quick", "ÉCOLE", "the", "Fox")],
        case_change_action="LOWER", stopwords=["the", "fox"], locale="C.UTF-8")
    add("StringNormalizer_v10_upper_case_sensitive", 10, "StringNormalizer",
        [S("The", "straße", "the", "ÉCOLE", (1, 4))], case_change_action="UPPER", is_case_sensitive=1,
        stopwords=["the"], locale="C.UTF-8")
    add("StringNormalizer_v10_all_removed", 10, "StringNormalizer", [S("a", "A")], stopwords=["a"], locale="C.UTF-8")
    add("StringNormalizer_v10_none", 10, "StringNormalizer", [S("Keep", "AS", "is")])
    numbers = np.array([0.1, 1e-7, -1.5, 1e8, np.nan, np.inf, -0.0, 3.4028235e38, -np.inf, 123456.7], F32)
    for opset in (13, 19, 21):
        add(f"Cast_v{opset}_float_to_string", opset, "Cast", [numbers], to=TensorProto.STRING)
    add("Cast_v19_double_to_string", 19, "Cast", [np.array([0.1 + 0.2, 1 / 3, 1e-320, 1e300], np.float64)],
        to=TensorProto.STRING)
    add("Cast_v19_int64_to_string", 19, "Cast", [np.array([0, -5, 2**63 - 1, -2**63], I64)], to=TensorProto.STRING)
    add("Cast_v19_int32_to_string", 19, "Cast", [np.array([[7, -8], [0, 2**31 - 1]], I32)], to=TensorProto.STRING)
    add("Cast_v19_bool_to_string", 19, "Cast", [np.array([True, False])], to=TensorProto.STRING)
    add("Cast_v19_float16_to_string", 19, "Cast", [np.array([1, 1 / 3, 65504, -0.5], F16)], to=TensorProto.STRING)
    texts = S("1.5", " 2", "1e3", "inf", "-INF", "NaN", "0x10", "3.4e39", "1e-50", "  -0.25  ", "+7", "2.5abc")
    add("Cast_v19_string_to_float", 19, "Cast", [texts], to=TensorProto.FLOAT)
    add("Cast_v13_string_to_double", 13, "Cast", [S("0.1", "1e308", "-2.5e-300", "7")], to=TensorProto.DOUBLE)
    add("Cast_v19_string_to_int64", 19, "Cast", [S("12", "-3", " 4", "9223372036854775807", "0x1f", "+5", "1.9")],
        to=TensorProto.INT64)
    add("Cast_v19_string_to_int32", 19, "Cast", [S("12", "-3", "70000", "-1")], to=TensorProto.INT32)
    add("Cast_v19_string_to_uint8", 19, "Cast", [S("12", "255", "256", "-1")], to=TensorProto.UINT8)
    add("Cast_v19_string_to_bool", 19, "Cast", [S("1", "0", "2", " 7", "-1")], to=TensorProto.BOOL)
    add("Cast_v19_string_to_float16", 19, "Cast", [S("1.5", "65504", "1e-3")], to=TensorProto.FLOAT16)
    add("CastLike_v19_float_to_string", 19, "CastLike", [numbers[:4].copy(), Const(S("like"))])
    add("CastLike_v19_string_to_float", 19, "CastLike", [S("2.5", "-1"), Const(np.array([0], F32))])
    # Gather along axis 1: ONNX Runtime 1.30's Gather of string rows (axis 0)
    # leaves all but each row's first string empty.
    for op, extra in [("Reshape", [Const(np.array([3, 2], I64))]), ("Transpose", []), ("Flatten", []),
                      ("Slice", [Const(np.array([0], I64)), Const(np.array([2], I64)), Const(np.array([1], I64))])]:
        add(f"{op}_v19_string", 19, op, [words, *extra])
    add("Gather_v19_string", 19, "Gather", [words, Const(np.array([2, 0, 2, 1], I64))], axis=1)
    add("Concat_v19_string", 19, "Concat", [words, Const(S("c1", "c2", "c3", (1, 3)))], axis=0)
    add("Where_v19_string", 19, "Where", [np.array([[True, False, True]]), words, Const(S("no"))])
    add("Identity_v21_string", 21, "Identity", [words])
    chain_model("string_pipeline_v20", 20, [
        helper.make_node("StringSplit", ["x"], ["pieces", "counts"], delimiter=","),
        helper.make_node("Reshape", ["pieces", "minus1"], ["flat"]),
        helper.make_node("StringNormalizer", ["flat"], ["norm"], case_change_action="UPPER", locale="C.UTF-8"),
        helper.make_node("StringConcat", ["norm", "sep"], ["y"])],
        [("x", S("a,bb", "c,,d", "e"))],
        inits=[tensor_proto(np.array([-1], I64), "minus1"), tensor_proto(np.array(";", dtype=str), "sep")])
    chain_model("string_number_round_trip_v20", 20, [
        helper.make_node("Cast", ["x"], ["s"], to=TensorProto.STRING),
        helper.make_node("StringConcat", ["s", "zero"], ["t"]),
        helper.make_node("Cast", ["t"], ["y"], to=TensorProto.FLOAT)], [("x", numbers[numbers != numbers[7]])],
        inits=[tensor_proto(np.array("0", dtype=str), "zero")])


def image_reference(stream, pixel_format):
    """ImageDecoder's output as the ONNX reference computes it with Pillow,
    with every image converted to the asked format (the reference returns a
    gray or RGBA image's own channels for RGB and BGR); [0, 0, C] when Pillow
    cannot decode the stream, as the spec says."""
    from PIL import Image
    channels = 1 if pixel_format == "Grayscale" else 3
    try:
        img = Image.open(io.BytesIO(stream.tobytes()))
        img.load()
    except Exception:
        return np.zeros((0, 0, channels), U8)
    if pixel_format == "Grayscale":
        return np.array(img.convert("L"))[:, :, None]
    rgb = np.array(img.convert("RGB"))
    return np.ascontiguousarray(rgb[:, :, ::-1]) if pixel_format == "BGR" else rgb


def encoded(img, fmt, **options):
    """The bytes of a Pillow image saved as `fmt`, as a u8 stream."""
    out = io.BytesIO()
    img.save(out, fmt, **options)
    return np.frombuffer(out.getvalue(), U8).copy()


def image_cases():
    """ImageDecoder-20 on PNG and JPEG streams (colour, gray, palette with
    transparency, alpha, progressive, 4:2:0 and 4:4:4) in each pixel format,
    and streams that are no image (the spec's empty result)."""
    from PIL import Image
    y, x = np.mgrid[0:9, 0:13]
    rgb = np.stack([x * 19, y * 28, (x * y * 7) % 256], axis=-1).astype(U8)
    color = Image.fromarray(rgb, "RGB")
    rgba = Image.fromarray(np.concatenate([rgb, (x * 20)[:, :, None].astype(U8)], axis=-1), "RGBA")
    palette = color.quantize(16)
    palette.info["transparency"] = 3
    streams = {
        "png": encoded(color, "PNG"),
        "jpeg": encoded(color, "JPEG", quality=90),
        "jpeg_progressive_444": encoded(color, "JPEG", quality=75, progressive=True, subsampling=0),
        "jpeg_gray": encoded(color.convert("L"), "JPEG", quality=85),
        "png_gray": encoded(color.convert("L"), "PNG"),
        "png_rgba": encoded(rgba, "PNG"),
        "png_palette_transparency": encoded(palette, "PNG", transparency=3),
    }
    corrupt = streams["png"].copy()
    corrupt[60] ^= 0xFF  # inside IDAT: its CRC no longer matches
    streams["png_corrupt"] = corrupt
    streams["jpeg_truncated"] = streams["jpeg"][:len(streams["jpeg"]) // 2].copy()
    streams["not_an_image"] = np.frombuffer(b"no image here, only text" * 3, U8).copy()
    forms = {"png": ["RGB", "BGR", "Grayscale"], "jpeg": ["RGB", "BGR", "Grayscale"],
             "jpeg_gray": ["RGB", "Grayscale"], "png_gray": ["RGB", "Grayscale"],
             "png_rgba": ["RGB", "Grayscale"], "png_palette_transparency": ["RGB", "Grayscale"]}
    for name, stream in streams.items():
        for pixel_format in forms.get(name, ["RGB"]):
            spec_model(f"ImageDecoder_v20_{name}_{pixel_format.lower()}", 20,
                       [helper.make_node("ImageDecoder", ["x"], ["y"], pixel_format=pixel_format)],
                       [("x", stream)], [], image_reference(stream, pixel_format))


def build_model(name, opset, op, inputs, n_out, domain, attrs):
    graph_inputs, inits, names, feeds = [], [], [], []
    for i, v in enumerate(inputs):
        if v is None:
            names.append("")
        elif isinstance(v, Const):
            names.append(f"c{i}")
            inits.append(tensor_proto(v.value, f"c{i}"))
        else:
            names.append(f"x{i}")
            graph_inputs.append(helper.make_tensor_value_info(f"x{i}", elem_type(v.dtype), v.shape))
            feeds.append(v)
    while names and names[-1] == "":
        names.pop()
    used = n_out if isinstance(n_out, list) else [True] * n_out
    outs = [f"y{k}" if u else "" for k, u in enumerate(used)]
    node = helper.make_node(op, names, outs, name=f"{op}_node", domain=domain or None, **attrs)
    graph = helper.make_graph([node], name, graph_inputs, [onnx.ValueInfoProto(name=o) for o in outs if o], inits)
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(graph, opset_imports=opsets, producer_name="kiln-tests")
    model.ir_version = 8
    return model, feeds


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    script_hash = hashlib.sha256(open(__file__, "rb").read()).hexdigest()[:16]
    stamp = os.path.join(out, "GENERATED_" + script_hash)
    if os.path.exists(stamp):
        print(f"{out}: newer-opset cases already present")
        return
    shutil.rmtree(out, ignore_errors=True)
    for make in [reduce_cases, pad_split_resize_cases, scatter_pool_cases, cast_quantize_cases, type_widened_cases,
                 signal_grid_cases, string_cases, bfloat16_widened_cases, recurrent_cases, expanded_function_cases, new_op_cases, contrib_cases, attention_cases, gqa_cases]:
        make()
    local_function_cases()
    narrow_type_cases()
    scale_and_two_bit_cases()
    float4_cases()
    image_cases()
    built = [(name, *build_model(name, opset, op, inputs, n_out, domain, attrs))
             for name, opset, op, inputs, n_out, domain, attrs in CASES]
    for name, model, feeds in built + MODELS:
        case = os.path.join(out, "test_" + name)
        os.makedirs(os.path.join(case, "inputs"))
        onnx.save(model, os.path.join(case, "model.onnx"))
        for i, v in enumerate(feeds):
            np.save(os.path.join(case, "inputs", f"input_{i}.npy"), v)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run(["node", os.path.join(repo, "scripts", "ort_run_suite.js"), out], check=True)
    refused = []
    for name in sorted(os.listdir(out)):
        case = os.path.join(out, name)
        if os.path.exists(os.path.join(case, "ort_error.txt")):
            refused.append(f"{name}: {open(os.path.join(case, 'ort_error.txt')).read().strip()[:300]}")
            shutil.rmtree(case)
            continue
        data = os.path.join(case, "test_data_set_0")
        os.makedirs(data)
        for sub, prefix in [("inputs", "input"), ("outputs", "output")]:
            files = sorted(os.listdir(os.path.join(case, sub)), key=lambda f: int(f.split("_")[1].split(".")[0]))
            for f in files:
                arr = np.load(os.path.join(case, sub, f))
                proto = tensor_proto(arr, f.split(".")[0])
                open(os.path.join(data, f.replace(".npy", ".pb")), "wb").write(proto.SerializeToString())
            shutil.rmtree(os.path.join(case, sub))
    for name, model, feeds, expected in SPEC_MODELS:
        data = os.path.join(out, "test_" + name, "test_data_set_0")
        os.makedirs(data)
        onnx.save(model, os.path.join(out, "test_" + name, "model.onnx"))
        for i, v in enumerate(feeds):
            with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, f"input_{i}").SerializeToString())
        with open(os.path.join(data, "output_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(expected, "output_0").SerializeToString())
    with open(os.path.join(out, "ort_refused.txt"), "w") as f:
        f.write("\n".join(refused) + ("\n" if refused else ""))
    open(stamp, "w").close()
    print(f"{out}: {len(built) + len(MODELS) - len(refused)} cases with ONNX Runtime's outputs, "
          f"{len(SPEC_MODELS)} with the spec's, {len(refused)} refused by ONNX Runtime (ort_refused.txt)")


if __name__ == "__main__":
    main()
