"""The Python package driven as a user drives it: compile, save, load and run
the tiny zoo against ONNX Runtime; inputs as numpy, non-contiguous, DLPack
(torch) and string arrays; traces; errors as kiln.Error subclasses with their
KE code and node; runs from threads while the GIL is free.

    PYTHONPATH=build/python python3 tests/python/test_api.py
    KILN_EXPECT_PACKAGE_UNDER=DIR   fail unless `import kiln` came from DIR (the install test)
"""
import json
import os
import sys
import tempfile
import threading
import time
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import zoo  # noqa: E402

import kiln  # noqa: E402

TINY = os.path.join(ROOT, "models", "tiny")


def relative_error(a, b):
    scale = float(np.abs(b).max()) if b.size else 0.0
    err = float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max()) if b.size else 0.0
    return err / scale if scale > 0 else err


def onnx_bytes(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model.SerializeToString()


def matmul_chain(n, links):
    """x[n, n] through `links` MatMuls with n x n weights: a model slow enough to time."""
    rng = np.random.RandomState(0)
    weights = [helper.make_tensor(f"w{i}", TensorProto.FLOAT, [n, n], (rng.rand(n, n) / n).astype(np.float32).ravel())
               for i in range(links)]
    nodes = [helper.make_node("MatMul", ["x" if i == 0 else f"h{i}", f"w{i}"], [f"h{i + 1}" if i + 1 < links else "y"],
                              name=f"mm{i}") for i in range(links)]
    return onnx_bytes(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])], weights)


class PackageTest(unittest.TestCase):
    def test_imported_from_where_expected(self):
        where = os.environ.get("KILN_EXPECT_PACKAGE_UNDER")
        if where:
            self.assertTrue(os.path.realpath(kiln.__file__).startswith(os.path.realpath(where)), kiln.__file__)
        self.assertRegex(kiln.__version__, r"^\d+\.\d+\.\d+$")


class ZooTest(unittest.TestCase):
    """Every tiny zoo model but the detector (whose outputs need the detection rule), against ONNX Runtime."""

    def check_model(self, name):
        path = os.path.join(TINY, name + "-default.onnx")
        spec = zoo.zoo_spec_for(path)
        with tempfile.TemporaryDirectory() as work:
            paths = zoo.make_inputs(zoo.input_specs(path), work, seed=1)
            zoo.run_ort(path, paths, os.path.join(work, "ort"))
            shapes = {n: s["shape"] for n, s in spec["inputs"].items()}
            model = kiln.compile(path, target="cpu", shapes=shapes)
            self.assertEqual([s.name for s in model.inputs], list(spec["inputs"]))
            inputs = {n: np.load(p) for n, p in paths.items()}
            outputs = model.run(inputs)
            self.assertEqual(list(outputs), [s.name for s in model.outputs])
            artifact = os.path.join(work, name + ".kiln")
            model.save(artifact)
            again = kiln.load(artifact).run([inputs[s.name] for s in model.inputs])
            for out in outputs:
                expected = zoo.load_output(os.path.join(work, "ort"), out)
                self.assertEqual(outputs[out].shape, expected.shape, out)
                self.assertEqual(outputs[out].dtype, expected.dtype, out)
                self.assertLessEqual(relative_error(outputs[out], expected), spec.get("tolerance", 1e-4), f"{name}/{out}")
                np.testing.assert_array_equal(again[out], outputs[out])

    def test_resnet_tiny(self):
        self.check_model("resnet_tiny")

    def test_mobilenet_tiny(self):
        self.check_model("mobilenet_tiny")

    def test_bert_tiny(self):
        self.check_model("bert_tiny")

    def test_gpt_tiny(self):
        self.check_model("gpt_tiny")


class InputsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        w = helper.make_tensor("w", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])
        cls.model = kiln.compile(onnx_bytes([helper.make_node("Mul", ["x", "w"], ["y"], name="scale")],
                                            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
                                            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])], [w]))

    def test_specs(self):
        self.assertEqual(self.model.inputs, [kiln.TensorSpec("x", "float32", (4, 3))])
        self.assertEqual(self.model.outputs, [kiln.TensorSpec("y", "float32", (4, 3))])
        self.assertEqual(self.model.target, "cpu")
        self.assertIn("kiln.Model cpu", repr(self.model))

    def test_non_contiguous_and_unaligned_inputs(self):
        base = np.arange(24, dtype=np.float32).reshape(4, 6)
        strided = base[:, ::2]  # not C-contiguous: copied
        unaligned = np.frombuffer(np.arange(13, dtype=np.float32).tobytes()[4:], dtype=np.float32).reshape(4, 3)
        for x in (strided, unaligned):
            np.testing.assert_array_equal(self.model.run({"x": x})["y"], x * np.array([1, 2, 3], np.float32))

    def test_outputs_are_numpy_over_kiln_buffers(self):
        y = self.model.run([np.ones((4, 3), np.float32)])["y"]
        self.assertFalse(y.flags.owndata)
        np.testing.assert_array_equal(np.from_dlpack(y), y)

    def test_run_writes_a_chrome_trace(self):
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "run.json")
            y = self.model.run({"x": np.ones((4, 3), np.float32)}, trace=path)["y"]
            np.testing.assert_array_equal(y, np.ones((4, 3), np.float32) * np.array([1, 2, 3], np.float32))
            events = [e for e in json.load(open(path))["traceEvents"] if e.get("ph") == "X"]
            run = [e for e in events if e["cat"] == "run"]
            steps = [e for e in events if e["cat"] != "run"]
            self.assertEqual(len(run), 1)
            self.assertGreaterEqual(sum(e["cat"] == "kernel" for e in steps), 1)
            self.assertAlmostEqual(sum(e["dur"] for e in steps), run[0]["dur"], delta=0.05 * run[0]["dur"])

    def test_dlpack_with_torch(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        x = torch.arange(12, dtype=torch.float32).reshape(4, 3)
        y = self.model.run({"x": x})["y"]
        np.testing.assert_array_equal(y, x.numpy() * np.array([1, 2, 3], np.float32))
        t = torch.from_dlpack(y)
        self.assertEqual(tuple(t.shape), (4, 3))
        self.assertEqual(float(t[3, 2]), 33.0)

    def test_wrong_inputs_raise_input_error(self):
        with self.assertRaises(kiln.InputError) as e:
            self.model.run({"x": np.ones((4, 3), np.float64)})
        self.assertEqual(e.exception.code, 3001)
        self.assertIn("astype(numpy.float32)", str(e.exception))
        with self.assertRaises(kiln.InputError):
            self.model.run({"x": np.ones((4, 3), np.float32), "z": np.ones(1)})
        with self.assertRaises(kiln.InputError):
            self.model.run({})
        with self.assertRaises(kiln.InputError):
            self.model.run({"x": np.ones((5, 3), np.float32)})


class ErrorsTest(unittest.TestCase):
    def test_unsupported_op_names_the_node(self):
        data = onnx_bytes([helper.make_node("NoSuchOp", ["x"], ["y"], name="mystery")],
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
        with self.assertRaises(kiln.ModelError) as e:
            kiln.compile(data)
        self.assertEqual(e.exception.code, 1003)
        self.assertEqual(e.exception.node, "mystery")
        self.assertEqual(e.exception.op_type, "NoSuchOp")
        self.assertIn("KE1003", str(e.exception))

    def test_corrupt_inputs_of_every_call(self):
        with self.assertRaises(kiln.ModelError):
            kiln.compile(b"not a model")
        with self.assertRaises(kiln.FileError):
            kiln.load("/nonexistent/model.kiln")
        with tempfile.NamedTemporaryFile(suffix=".kiln") as f:
            f.write(b"KILNART" + bytes(100))
            f.flush()
            with self.assertRaises(kiln.ArtifactError):
                kiln.load(f.name)
        with self.assertRaises(kiln.ArgumentError):
            kiln.compile(os.path.join(TINY, "tiny_cnn.onnx"), target="tpu")
        with self.assertRaises(kiln.ArgumentError):
            kiln.compile(os.path.join(TINY, "tiny_cnn.onnx"), pipeline="no-such-pass")
        self.assertTrue(issubclass(kiln.InputError, ValueError) and issubclass(kiln.FileError, OSError))


class InspectTest(unittest.TestCase):
    def test_inspect_counts_what_the_onnx_file_holds(self):
        path = os.path.join(TINY, "resnet_tiny-raw.onnx")
        info = kiln.inspect(path)
        graph = onnx.load(path).graph
        self.assertEqual(info["ops"]["Conv"], sum(n.op_type == "Conv" for n in graph.node))
        self.assertEqual(info["inputs"], [{"name": "input", "type": "f32[1,3,64,64]"}])
        self.assertRegex(info["structural_hash"], r"^[0-9a-f]{16}$")
        with tempfile.TemporaryDirectory() as work:
            artifact = os.path.join(work, "m.kiln")
            kiln.compile(path).save(artifact)
            self.assertEqual(kiln.inspect(artifact)["target"], "cpu")
        with self.assertRaises(kiln.FileError):
            kiln.inspect("/nonexistent.onnx")

    def test_classify_names_the_architecture(self):
        self.assertEqual(kiln.passes.classify(os.path.join(TINY, "resnet_tiny-raw.onnx"))["classes"], ["RN"])
        bert = kiln.passes.classify(os.path.join(TINY, "bert_tiny-raw.onnx"))
        self.assertIn("BR", bert["classes"])
        self.assertTrue(any("attention" in r for s in bert["scores"] for r in s["reasons"]))


class StringsTest(unittest.TestCase):
    def test_string_tensors_in_and_out(self):
        data = onnx_bytes([helper.make_node("StringNormalizer", ["s"], ["t"], name="upper", case_change_action="UPPER")],
                          [helper.make_tensor_value_info("s", TensorProto.STRING, [3])],
                          [helper.make_tensor_value_info("t", TensorProto.STRING, [3])])
        model = kiln.compile(data)
        self.assertEqual(model.inputs[0].dtype, "str")
        out = model.run({"s": np.array(["kiln", "ünï", ""])})["t"]
        self.assertEqual(out.tolist(), ["KILN", "ÜNÏ", ""])


class ThreadsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = kiln.compile(matmul_chain(1024, 8))

    def test_runs_from_threads_match_serial_runs(self):
        xs = [np.random.RandomState(i).rand(1024, 1024).astype(np.float32) for i in range(4)]
        serial = [self.model.run({"x": x})["y"] for x in xs]
        results = [None] * len(xs)

        def work(i):
            results[i] = self.model.run({"x": xs[i]})["y"]
        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for got, want in zip(results, serial):
            np.testing.assert_array_equal(got, want)

    def test_python_runs_while_a_model_runs(self):
        """A held GIL would stop this thread for the whole run; released, it keeps going."""
        x = np.ones((1024, 1024), np.float32)
        kiln.set_threads(1)
        try:
            start = time.perf_counter()
            for _ in range(3):
                self.model.run({"x": x})
            run_s = (time.perf_counter() - start) / 3
            done = threading.Event()
            worker = threading.Thread(target=lambda: (self.model.run({"x": x}), done.set()))
            ticks = [time.perf_counter()]
            worker.start()
            while not done.is_set():
                ticks.append(time.perf_counter())
            worker.join()
        finally:
            kiln.set_threads(os.cpu_count() or 1)
        longest = max(b - a for a, b in zip(ticks, ticks[1:]))
        self.assertGreater(run_s, 0.02, "the model runs too briefly to tell")
        self.assertLess(longest, run_s / 2, f"this thread stood still {longest * 1000:.1f} ms of a {run_s * 1000:.1f} ms run")


if __name__ == "__main__":
    unittest.main(verbosity=2)
