#!/usr/bin/python3
"""Writes one bad ONNX input per user-facing importer diagnostic into this
directory, and cases.txt, the manifest the diagnostics test reads:

    <file> | <--shape binding or -> | <error code> | <node name or -> | <message substring>

Run with Debian's /usr/bin/python3 (python3-onnx). The outputs are committed.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = []


def save(name, model, code, node="-", substring="", shape="-", check=True):
    if check:
        onnx.checker.check_model(model)
    path = os.path.join(HERE, name)
    onnx.save(model, path)
    CASES.append((name, shape, code, node, substring))


def save_bytes(name, data, code, substring):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
    CASES.append((name, "-", code, "-", substring))


def model(nodes, inputs, outputs, inits=(), opset=13, **kw):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="kiln-tests", **kw)
    m.ir_version = 8
    return m


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


X = vi("x", [2, 3])
Y = vi("y", [2, 3])


def relu_model(**kw):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [X], [Y], **kw)


def main():
    good = relu_model().SerializeToString()
    # KE1001: not a model at all / cut short.
    save_bytes("malformed_garbage.onnx", b"this is not a protobuf \xff\xff\xff\xff", "KE1001", "not a valid ONNX model")
    save_bytes("malformed_truncated.onnx", good[: len(good) // 2], "KE1001", "truncated or corrupt")
    save("malformed_no_graph.onnx", onnx.ModelProto(), "KE1001", substring="has no graph", check=False)
    # KE1002: opsets kiln does not import.
    save("opset_too_new.onnx", relu_model(opset=27), "KE1002", substring="opset 27", check=False)
    m = relu_model()
    del m.opset_import[:]
    save("opset_missing.onnx", m, "KE1002", substring="no opset_import", check=False)
    # KE1003: ops kiln does not have.
    save("op_unknown.onnx", model([helper.make_node("FrobnicateTensor", ["x"], ["y"], name="frob")], [X], [Y]),
         "KE1003", "frob", "'FrobnicateTensor' is not supported", check=False)
    m = model([helper.make_node("SparseAttention", ["x"], ["y"], name="fused", domain="com.microsoft")], [X], [Y])
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    save("op_custom_domain.onnx", m, "KE1003", "fused", "domain 'com.microsoft'", check=False)
    save("op_control_characters.onnx",
         model([helper.make_node("Frob\x1b[31m", ["x"], ["y"], name="evil\nname\x07")], [X], [Y]), "KE1003",
         substring=r"node 'evil\nname\x07' (Frob\x1b[31m, opset 13): op 'Frob\x1b[31m'", check=False)
    resize_sizes = numpy_helper.from_array(np.array([7, 2], np.int64), "sizes")
    save("op_keep_aspect_rounds_up.onnx",
         model([helper.make_node("Resize", ["img", "", "", "sizes"], ["y"], name="fit", mode="linear", axes=[2, 3],
                                 coordinate_transformation_mode="half_pixel_symmetric",
                                 keep_aspect_ratio_policy="not_larger")],
               [vi("img", [1, 1, 7, 3])], [vi("y", [1, 1, 5, 2])], inits=[resize_sizes], opset=19),
         "KE1003", "fit", "'half_pixel_symmetric' where an output length rounds up", check=False)
    crop_scales = numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], np.float32), "scales")
    crop_roi = numpy_helper.from_array(np.array([0, 0, 0, 0, 1, 1, 1, 1], np.float32), "roi")
    save("op_antialias_crop.onnx",
         model([helper.make_node("Resize", ["img", "roi", "scales"], ["y"], name="shrink", mode="linear", antialias=1,
                                 coordinate_transformation_mode="tf_crop_and_resize")],
               [vi("img", [1, 1, 4, 4])], [vi("y", [1, 1, 2, 2])], inits=[crop_roi, crop_scales], opset=18),
         "KE1003", "shrink", "antialias=1 with tf_crop_and_resize", check=False)
    # KE1004: broken graphs.
    save("op_before_its_opset.onnx", model([helper.make_node("Mish", ["x"], ["y"], name="mish")], [X], [Y], opset=17),
         "KE1004", "mish", "'Mish' exists from opset 18 on", check=False)
    save("graph_undefined_input.onnx", model([helper.make_node("Relu", ["nowhere"], ["y"], name="relu")], [X], [Y]),
         "KE1004", "relu", "input 'nowhere' is not defined", check=False)
    save("graph_duplicate_value.onnx",
         model([helper.make_node("Relu", ["x"], ["y"], name="a"), helper.make_node("Neg", ["x"], ["y"], name="b")],
               [X], [Y]), "KE1004", substring="'y' is defined twice", check=False)
    save("graph_cycle.onnx",
         model([helper.make_node("Add", ["x", "t2"], ["t1"], name="a"), helper.make_node("Relu", ["t1"], ["t2"], name="b"),
                helper.make_node("Relu", ["t2"], ["y"], name="c")], [X], [Y]), "KE1004", "a", "cycle", check=False)
    save("graph_output_missing.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [X], [vi("z", [2, 3])]),
         "KE1004", substring="graph output 'z' is not produced", check=False)
    # KE1005: element type codes ONNX does not define.
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    w.data_type = 99
    save("dtype_unknown_initializer.onnx",
         model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [X], [Y], inits=[w]), "KE1005",
         substring="unknown element type code 99", check=False)
    m = relu_model()
    m.graph.input[0].type.tensor_type.elem_type = 99
    save("dtype_unknown_input.onnx", m, "KE1005", substring="unknown element type code 99", check=False)
    # KE1006: tensor payloads that do not match their type.
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    w.raw_data = w.raw_data[:-4]
    save("data_raw_too_short.onnx",
         model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [X], [Y], inits=[w]), "KE1006",
         substring="raw data holds 20 bytes", check=False)
    q4 = onnx.TensorProto(name="q", data_type=22, dims=[5], raw_data=bytes([0x21, 0x43]))  # INT4: 5 need 3 bytes
    save("data_int4_raw_too_short.onnx",
         model([helper.make_node("DequantizeLinear", ["q", "s"], ["y"], name="dq")], [], [vi("y", [5])],
               inits=[q4, numpy_helper.from_array(np.array(0.5, np.float32), "s")], opset=21),
         "KE1006", substring="raw data holds 2 bytes, i4[5] needs 3", check=False)
    f8 = onnx.TensorProto(name="q", data_type=17, dims=[4], int32_data=[0x38, 0x40])
    save("data_float8_int32_data_short.onnx",
         model([helper.make_node("DequantizeLinear", ["q", "s"], ["y"], name="dq")], [], [vi("y", [4])],
               inits=[f8, numpy_helper.from_array(np.array(0.5, np.float32), "s")], opset=19),
         "KE1006", substring="int32_data holds 2 values, f8e4m3fn[4] needs 4", check=False)
    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 3], [1.0] * 6)
    del w.float_data[2:]
    save("data_too_few_values.onnx",
         model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [X], [Y], inits=[w]), "KE1006",
         substring="float_data holds 2 values", check=False)
    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 3], [1.0] * 6)
    w.dims[0] = -2
    save("data_negative_dim.onnx",
         model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [X], [Y], inits=[w]), "KE1006",
         substring="negative dim", check=False)
    # KE1007: external data that cannot be read.
    def external(name, location, offset=None):
        w = helper.make_tensor("w", TensorProto.FLOAT, [2, 3], [1.0] * 6)
        del w.float_data[:]
        w.data_location = TensorProto.EXTERNAL
        entry = w.external_data.add()
        entry.key, entry.value = "location", location
        if offset is not None:
            entry = w.external_data.add()
            entry.key, entry.value = "offset", str(offset)
        return model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [X], [Y], inits=[w])
    save("external_missing_file.onnx", external("w", "no_such_weights.bin"), "KE1007",
         substring="no_such_weights.bin", check=False)
    save("external_escapes_dir.onnx", external("w", "../outside.bin"), "KE1007",
         substring="must be a relative path inside", check=False)
    with open(os.path.join(HERE, "external_small.bin"), "wb") as f:
        f.write(np.ones(6, np.float32).tobytes())
    save("external_out_of_range.onnx", external("w", "external_small.bin", offset=16), "KE1007",
         substring="lies outside the file", check=False)
    # KE1008: attributes.
    save("attr_missing_required.onnx",
         model([helper.make_node("Concat", ["x", "x"], ["y"], name="cat")], [X], [vi("y", [4, 3])]), "KE1008", "cat",
         "required attribute 'axis' is missing", check=False)
    save("attr_wrong_kind.onnx",
         model([helper.make_node("Transpose", ["x"], ["y"], name="tr", perm=1.5)], [X], [vi("y", [3, 2])]), "KE1008",
         "tr", "attribute 'perm' must be ints", check=False)
    loop = helper.make_function("local", "Loop1", ["x"], ["y"], [helper.make_node("Loop1", ["x"], ["y"], domain="local")],
                                [helper.make_opsetid("", 13), helper.make_opsetid("local", 1)], [])
    m = model([helper.make_node("Loop1", ["x"], ["y"], name="call", domain="local")], [X], [Y])
    m.opset_import.append(helper.make_opsetid("local", 1))
    m.functions.append(loop)
    save("function_recursive.onnx", m, "KE1004", "-", "function 'local::Loop1' calls itself", check=False)
    act = helper.make_function("local", "Act", ["x"], ["y"], [helper.make_node("Relu", ["x"], ["y"])],
                               [helper.make_opsetid("", 13)], [])
    m = model([helper.make_node("Act", ["x"], ["y"], name="act", domain="local", gain=2.0)], [X], [Y])
    m.opset_import.append(helper.make_opsetid("local", 1))
    m.functions.append(act)
    save("function_unknown_attribute.onnx", m, "KE1008", "act", "function 'Act' has no attribute 'gain'", check=False)
    save("attr_pixel_format_unknown.onnx",
         model([helper.make_node("ImageDecoder", ["x"], ["y"], name="decode", pixel_format="CMYK")],
               [vi("x", [64], TensorProto.UINT8)], [vi("y", None, TensorProto.UINT8)], opset=20),
         "KE1008", "decode", "pixel_format must be RGB, BGR or Grayscale, got 'CMYK'", check=False)
    save("attr_unknown.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="relu", fancy=3)], [X], [Y]),
         "KE1008", "relu", "unknown attribute 'fancy'", check=False)
    # Legacy forms are rewritten before the schema check, with their own kind checks.
    save("attr_legacy_wrong_kind.onnx",
         model([helper.make_node("Upsample", ["img", "scales"], ["y"], name="up", mode=3)],
               [vi("img", [1, 1, 2, 2]), vi("scales", [4])], [vi("y", [1, 1, 4, 4])], opset=9), "KE1008", "up",
         "attribute 'mode' must be string, got int", check=False)
    save("attr_bad_value.onnx",
         model([helper.make_node("Concat", ["x", "x"], ["y"], name="cat", axis=5)], [X], [vi("y", [4, 3])]), "KE1008",
         "cat", "axis 5 is out of range", check=False)
    save("attr_gridsample_cubic_volume.onnx",
         model([helper.make_node("GridSample", ["vol", "grid"], ["y"], name="sample", mode="cubic")],
               [vi("vol", [1, 1, 2, 2, 2]), vi("grid", [1, 1, 1, 1, 3])], [vi("y", [1, 1, 1, 1, 1])], opset=20),
         "KE1008", "sample", "bicubic samples 2-D images only", check=False)
    # KE1009: shapes that do not fit together.
    save("shape_broadcast.onnx",
         model([helper.make_node("Add", ["x", "z"], ["y"], name="add")], [X, vi("z", [4, 3])], [Y]), "KE1009", "add",
         "cannot be broadcast", check=False)
    w = numpy_helper.from_array(np.ones((8, 4, 3, 3), np.float32), "w")
    save("shape_conv_channels.onnx",
         model([helper.make_node("Conv", ["img", "w"], ["y"], name="conv")], [vi("img", [1, 3, 8, 8])],
               [vi("y", [1, 8, 6, 6])], inits=[w]), "KE1009", "conv", "3 channels", check=False)
    huge_sizes = numpy_helper.from_array(np.array([1, 1, 2, 1 << 40], np.int64), "sizes")
    save("shape_antialias_huge.onnx",
         model([helper.make_node("Resize", ["img", "", "", "sizes"], ["y"], name="blowup", mode="linear", antialias=1)],
               [vi("img", [1, 1, 4, 6])], [vi("y", [1, 1, 2, 1 << 40])], inits=[huge_sizes], opset=18),
         "KE1009", "blowup", "input times output length must be positive and at most", check=False)
    dw = numpy_helper.from_array(np.ones((1, 1, 2, 2), np.float32), "w")
    save("shape_deform_offset.onnx",
         model([helper.make_node("DeformConv", ["img", "w", "offset"], ["y"], name="deform")],
               [vi("img", [1, 1, 4, 4]), vi("offset", [1, 4, 3, 3])], [vi("y", [1, 1, 3, 3])], inits=[dw], opset=19),
         "KE1009", "deform", "offset must be f32[1,8,3,3]", check=False)
    save("shape_matmul.onnx",
         model([helper.make_node("MatMul", ["x", "z"], ["y"], name="mm")], [X, vi("z", [4, 5])], [vi("y", [2, 5])]),
         "KE1009", "mm", "inner dims differ", check=False)
    shape = numpy_helper.from_array(np.array([4, 4], np.int64), "shape")
    save("shape_reshape.onnx",
         model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")], [X], [vi("y", [4, 4])],
               inits=[shape]), "KE1009", "reshape", "cannot reshape", check=False)
    ms = helper.make_opsetid("com.microsoft", 1)
    blob = numpy_helper.from_array(np.zeros((4, 1, 4), np.uint8), "blob")
    scales = numpy_helper.from_array(np.ones((4,), np.float32), "scales")
    m = model([helper.make_node("MatMulNBits", ["a", "blob", "scales"], ["y"], name="nbits", domain="com.microsoft",
                                K=16, N=4, bits=4, block_size=16)], [vi("a", [2, 16])], [vi("y", [2, 4])],
              inits=[blob, scales])
    m.opset_import.append(ms)
    save("shape_matmulnbits_blob.onnx", m, "KE1009", "nbits", "B must be uint8 [4, 1, 8]", check=False)
    gqa = helper.make_node("GroupQueryAttention", ["q", "k", "v", "", "", "lens", "total", "", "", "pos"], ["y"],
                           name="gqa", domain="com.microsoft", num_heads=2, kv_num_heads=1)
    m = model([gqa], [vi("q", [1, 2, 8]), vi("k", [1, 2, 4]), vi("v", [1, 2, 4]), vi("lens", [1], TensorProto.INT32),
                      vi("total", [], TensorProto.INT32), vi("pos", [1, 2], TensorProto.INT64)], [vi("y", [1, 2, 8])])
    m.opset_import.append(ms)
    save("op_gqa_position_ids.onnx", m, "KE1003", "gqa", "input position_ids", check=False)
    save("attr_attention_heads.onnx",
         model([helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attn", q_num_heads=3, kv_num_heads=3)],
               [vi("q", [1, 2, 8]), vi("k", [1, 2, 8]), vi("v", [1, 2, 8])], [vi("y", [1, 2, 8])], opset=23),
         "KE1008", "attn", "does not split into 3 heads", check=False)
    save("shape_declared_output.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [X],
                                             [vi("y", [2, 4])]), "KE1009", substring="declared f32[2,4]", check=False)
    save("shape_dtype_mix.onnx",
         model([helper.make_node("Add", ["x", "z"], ["y"], name="add")], [X, vi("z", [2, 3], TensorProto.INT64)], [Y]),
         "KE1009", "add", "element type i64", check=False)
    # KE1010: --shape bindings that do not fit the model.
    dyn = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", ["batch", 3])], [vi("y", ["batch", 3])])
    save("binding_unknown_input.onnx", dyn, "KE1010", substring="'nope', which is not a graph input", shape="nope:1x3")
    save("binding_rank.onnx", dyn, "KE1010", substring="has rank 2", shape="x:1x3x4")
    save("binding_fixed_dim.onnx", dyn, "KE1010", substring="contradicts a fixed dim", shape="x:1x4")
    # KE1011: types kiln cannot represent.
    save("type_complex_input.onnx",
         model([helper.make_node("Identity", ["s"], ["t"], name="id")], [vi("s", [2], TensorProto.COMPLEX64)],
               [vi("t", [2], TensorProto.COMPLEX64)]), "KE1011", substring="COMPLEX64 is not supported")
    save("string_unique.onnx",
         model([helper.make_node("Unique", ["s"], ["t"], name="dedupe")], [vi("s", [3], TensorProto.STRING)],
               [vi("t", [None], TensorProto.STRING)]), "KE1003", node="dedupe", substring="Unique on strings")
    c64 = onnx.TensorProto(name="w", data_type=TensorProto.COMPLEX64, dims=[2], raw_data=bytes(16))
    save("type_complex_initializer.onnx",
         model([helper.make_node("Cast", ["w"], ["y"], name="cast", to=TensorProto.FLOAT)], [], [vi("y", [2])],
               inits=[c64]), "KE1011", substring="COMPLEX64 is not supported", check=False)
    map_type = onnx.TypeProto()
    map_type.map_type.key_type = TensorProto.INT64
    map_type.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(TensorProto.FLOAT, []))
    map_in = helper.make_value_info("m", map_type)
    save("type_map_input.onnx", model([helper.make_node("Identity", ["x"], ["y"], name="id")], [X, map_in], [Y]),
         "KE1011", substring="map types are not supported", check=False)
    with open(os.path.join(HERE, "cases.txt"), "w") as f:
        f.write("# Generated by make_error_models.py: file | --shape | code | node | message substring\n")
        for c in CASES:
            f.write(" | ".join(c) + "\n")


if __name__ == "__main__":
    main()
