//===- tests/unit/FrontendTest.cpp - Unit tests of lib/frontend/onnx ------===//
//
// Every user-facing importer diagnostic (one bad input each, tests/errors/),
// export -> onnx::checker -> re-import, external data, large initializers
// read past protobuf (InitializerSplit.h), shape binding and opset
// normalisation.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "InitializerSplit.h"
#include "kiln/frontend/onnx/OnnxExporter.h"
#include "kiln/frontend/onnx/OnnxImporter.h"
#include "kiln/ir/Printer.h"
#include "kiln/ir/StructuralHash.h"
#include "kiln/ir/Verifier.h"
#include "kiln/runtime/Interpreter.h"
#include "kiln/support/File.h"
#include "kiln/support/StringPool.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

const std::string kSource = KILN_SOURCE_DIR;

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(' '));
  s.erase(s.find_last_not_of(' ') + 1);
  return s;
}

fs::path tempDir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("kiln-test-" + name + "-" + std::to_string(::getpid()));
  fs::create_directories(p);
  return p;
}

/// Declares a graph input of element type `type` (a TensorProto::DataType) and static `dims`.
void addTensorInput(::onnx::GraphProto* g, const char* name, int type, const std::vector<int64_t>& dims) {
  auto* in = g->add_input();
  in->set_name(name);
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(type);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

/// A protobuf varint.
std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out.push_back(char(uint8_t(v) | 0x80));
  out.push_back(char(v));
  return out;
}

/// A length-delimited field: tag (number, wire type 2), length, payload.
std::string messageField(int number, const std::string& payload) {
  return varint(uint64_t(number) << 3 | 2) + varint(payload.size()) + payload;
}

/// A model whose graph returns its initializers `big` (2048 floats, 8 KiB of
/// raw data), `small` (4 floats) and `typed` (2048 floats in float_data).
::onnx::ModelProto modelWithInitializers() {
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  auto* g = model.mutable_graph();
  g->set_name("g");
  auto addInit = [&](const char* name, int64_t n, bool raw) {
    auto* w = g->add_initializer();
    w->set_name(name);
    w->set_data_type(::onnx::TensorProto::FLOAT);
    w->add_dims(n);
    std::vector<float> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[size_t(i)] = float(i % 97) * 0.5f + float(n);
    if (raw) w->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4));
    else
      for (float v : values) w->add_float_data(v);
    auto* node = g->add_node();
    node->set_op_type("Identity");
    node->add_input(name);
    node->add_output(std::string(name) + "_out");
    auto* out = g->add_output();
    out->set_name(std::string(name) + "_out");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
  };
  addInit("big", 2048, true);
  addInit("small", 4, true);
  addInit("typed", 2048, false);
  return model;
}

/// The value of the Constant node that defines `name` (an initializer).
const Tensor& initializerTensor(const ir::Graph& g, const std::string& name) {
  for (const ir::Node* n : g.nodes())
    if (n->numOutputs() == 1 && n->output(0)->name() == name) return n->getTensor("value");
  throw std::runtime_error("no initializer " + name);
}

}  // namespace

TEST_CASE("each importer diagnostic names its code, node and cause", "[frontend][errors]") {
  std::ifstream manifest(kSource + "/tests/errors/cases.txt");
  REQUIRE(manifest.good());
  std::string line;
  int cases = 0;
  while (std::getline(manifest, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string part; std::getline(ss, part, '|');) f.push_back(trim(part));
    REQUIRE(f.size() == 5);
    INFO("case " << f[0]);
    kiln::onnx::ImportOptions options;
    if (f[1] != "-") REQUIRE(kiln::onnx::parseShapeBinding(f[1], options).isOk());
    auto m = kiln::onnx::importOnnxFile(kSource + "/tests/errors/" + f[0], options);
    REQUIRE_FALSE(m.isOk());
    std::string text = m.error().str();
    INFO(text);
    CHECK_THAT(text, Catch::Contains("error " + f[2] + " ("));
    if (f[3] != "-") CHECK(m.error().nodeName() == f[3]);
    CHECK_THAT(text, Catch::Contains(f[4]));  // as printed: control characters escaped
    ++cases;
  }
  CHECK(cases >= 30);
}

TEST_CASE("exported models pass onnx::checker and re-import to the same IR", "[frontend][export]") {
  auto m = kiln::onnx::importOnnxFile(kSource + "/models/tiny/tiny_cnn.onnx");
  REQUIRE(m.isOk());
  REQUIRE(ir::verify((*m)->graph()).isOk());
  auto bytes = kiln::onnx::exportOnnxBytes(**m);
  REQUIRE(bytes.isOk());
  auto again = kiln::onnx::importOnnxBytes(*bytes, ".");
  REQUIRE(again.isOk());
  CHECK(ir::structuralHash((*again)->graph()) == ir::structuralHash((*m)->graph()));
  CHECK((*again)->graph().inputs()[0]->type().str() == "f32[batch,3,32,32]");
}

TEST_CASE("dynamic dims are bound by --shape and checked", "[frontend][shape]") {
  kiln::onnx::ImportOptions options;
  REQUIRE(kiln::onnx::parseShapeBinding("input:4x3x32x32", options).isOk());
  auto m = kiln::onnx::importOnnxFile(kSource + "/models/tiny/tiny_cnn.onnx", options);
  REQUIRE(m.isOk());
  CHECK((*m)->graph().inputs()[0]->type().str() == "f32[4,3,32,32]");
  CHECK((*m)->graph().outputs()[0]->type().str() == "f32[4,10]");
  kiln::onnx::ImportOptions bad;
  auto s = kiln::onnx::parseShapeBinding("input:4xx3", bad);
  REQUIRE_FALSE(s.isOk());
  CHECK(s.error().code() == ErrorCode::InvalidArgument);
}

TEST_CASE("large initializers go from the file into kiln's own aligned buffers", "[frontend][split]") {
  ::onnx::ModelProto model = modelWithInitializers();
  std::string bytes = model.SerializeAsString();
  fs::path dir = tempDir("split");
  REQUIRE(writeFile((dir / "model.onnx").string(), bytes).isOk());
  auto m = kiln::onnx::importOnnxFile((dir / "model.onnx").string());
  REQUIRE(m.isOk());
  const ir::Graph& g = (*m)->graph();
  for (const ::onnx::TensorProto& proto : model.graph().initializer()) {
    INFO(proto.name());
    std::vector<double> want;
    if (proto.has_raw_data()) {
      std::vector<float> f(proto.raw_data().size() / 4);
      std::memcpy(f.data(), proto.raw_data().data(), proto.raw_data().size());
      want.assign(f.begin(), f.end());
    } else {
      want.assign(proto.float_data().begin(), proto.float_data().end());
    }
    CHECK(initializerTensor(g, proto.name()).toDoubles() == want);
  }
  // The large raw initializer was copied from the mapped file into a cache-line aligned buffer of kiln's own (passes
  // and code generation may write over it); the small one is protobuf's string, adopted.
  const Tensor& big = initializerTensor(g, "big");
  CHECK(big.buffer()->isMutable());
  CHECK(reinterpret_cast<uintptr_t>(big.rawData()) % 64 == 0);
  CHECK_FALSE(initializerTensor(g, "small").buffer()->isMutable());
  runtime::Interpreter interp(g);
  auto r = interp.run(std::vector<RuntimeValue>{});
  REQUIRE(r.isOk());
  CHECK((*r)[0].tensor().toDoubles() == big.toDoubles());
  // The same bytes through protobuf alone (an empty second graph field merges into the first and stops the split):
  // the same module, weights included.
  auto plain = kiln::onnx::importOnnxBytes(bytes + messageField(7, ""), dir.string());
  REQUIRE(plain.isOk());
  CHECK(ir::structuralHash((*plain)->graph()) == ir::structuralHash(g));
  CHECK_FALSE(initializerTensor((*plain)->graph(), "big").buffer()->isMutable());
  fs::remove_all(dir);
}

TEST_CASE("the initializer split keeps every other byte of the model", "[frontend][split]") {
  size_t splitModels = 0;
  for (const auto& entry : fs::directory_iterator(kSource + "/models/tiny")) {
    if (entry.path().extension() != ".onnx") continue;
    INFO(entry.path().filename().string());
    std::string bytes;
    {
      std::ifstream in(entry.path(), std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    ::onnx::ModelProto original;
    REQUIRE(original.ParseFromString(bytes));
    auto parts = kiln::onnx::splitInitializerData(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 4096);
    if (!parts) continue;
    ++splitModels;
    ::onnx::ModelProto stripped;
    REQUIRE(stripped.ParseFromString(parts->message));
    REQUIRE(parts->rawData.size() == size_t(original.graph().initializer_size()));
    CHECK(parts->message.size() < bytes.size());
    for (size_t i = 0; i < parts->rawData.size(); ++i) {
      const ::onnx::TensorProto& want = original.graph().initializer(int(i));
      ::onnx::TensorProto* got = stripped.mutable_graph()->mutable_initializer(int(i));
      if (!parts->rawData[i]) {
        CHECK(want.raw_data().size() < 4096);
        continue;
      }
      CHECK_FALSE(got->has_raw_data());
      const std::string raw = bytes.substr(parts->rawData[i]->offset, parts->rawData[i]->size);
      CHECK(raw == want.raw_data());
      got->set_raw_data(raw);
    }
    CHECK(stripped.SerializeAsString() == original.SerializeAsString());
    // And the importer's module is the one protobuf alone gives.
    auto viaSplit = kiln::onnx::importOnnxBytes(bytes, "/nonexistent");
    auto plain = kiln::onnx::importOnnxBytes(bytes + messageField(7, ""), "/nonexistent");
    REQUIRE(viaSplit.isOk());
    REQUIRE(plain.isOk());
    CHECK(ir::structuralHash((*viaSplit)->graph()) == ir::structuralHash((*plain)->graph()));
  }
  CHECK(splitModels >= 6);  // the tiny zoo's models hold initializers of 4 KiB and more
}

TEST_CASE("the initializer split leaves what it does not expect to protobuf", "[frontend][split]") {
  const std::string bytes = modelWithInitializers().SerializeAsString();
  auto split = [](const std::string& b) {
    return kiln::onnx::splitInitializerData(reinterpret_cast<const uint8_t*>(b.data()), b.size(), 4096);
  };
  auto parts = split(bytes);
  REQUIRE(parts);
  REQUIRE(parts->rawData.size() == 3);
  CHECK(parts->rawData[0].has_value());
  CHECK_FALSE(parts->rawData[1].has_value());  // 16 bytes: left in the message
  CHECK_FALSE(parts->rawData[2].has_value());  // float_data: no raw data
  CHECK_FALSE(split(bytes.substr(0, bytes.size() - 1)));  // truncated
  CHECK_FALSE(split(bytes + varint(20 << 3 | 3)));        // a group
  CHECK_FALSE(split(bytes + messageField(7, "")));        // two graph fields, which protobuf merges
  CHECK_FALSE(split(bytes + std::string(10, '\xff') + "\x02"));  // a varint past 64 bits
  CHECK_FALSE(split(""));                                 // nothing to split
  CHECK(split(bytes + messageField(3, "kiln-test")));     // another field after the graph: copied as it is

  // An initializer whose raw data appears twice (protobuf keeps the last) is not split, and imports as protobuf
  // reads it; the other large one still is.
  ::onnx::ModelProto model = modelWithInitializers();
  ::onnx::TensorProto twice = model.graph().initializer(0);
  twice.set_name("twice");
  std::string last(8192, '\0');
  for (size_t i = 0; i < last.size(); i += 4) last[i + 3] = 0x3f;  // 0.5f
  std::string tensorBytes = twice.SerializeAsString() + messageField(9, last);
  auto* node = model.mutable_graph()->add_node();
  node->set_op_type("Identity");
  node->add_input("twice");
  node->add_output("twice_out");
  auto* out = model.mutable_graph()->add_output();
  out->set_name("twice_out");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
  ::onnx::GraphProto graph = model.graph();
  model.clear_graph();
  std::string graphBytes = graph.SerializeAsString() + messageField(5, tensorBytes);
  std::string modelBytes = model.SerializeAsString() + messageField(7, graphBytes);
  auto withTwice = split(modelBytes);
  REQUIRE(withTwice);
  REQUIRE(withTwice->rawData.size() == 4);
  CHECK(withTwice->rawData[0].has_value());
  CHECK_FALSE(withTwice->rawData[3].has_value());
  auto m = kiln::onnx::importOnnxBytes(modelBytes, "/nonexistent");
  REQUIRE(m.isOk());
  CHECK(initializerTensor((*m)->graph(), "twice").toDoubles() == std::vector<double>(2048, 0.5));
  auto plain = kiln::onnx::importOnnxBytes(bytes, "/nonexistent");
  REQUIRE(plain.isOk());
  CHECK(initializerTensor((*m)->graph(), "big").toDoubles() == initializerTensor((*plain)->graph(), "big").toDoubles());
}

TEST_CASE("external data is memory-mapped, not copied", "[frontend][external]") {
  fs::path dir = tempDir("external");
  std::vector<float> values = {1, 2, 3, 4, 5, 6};
  std::string blob(16, '\0');  // 16 bytes of padding before the tensor
  blob.append(reinterpret_cast<const char*>(values.data()), values.size() * 4);
  REQUIRE(writeFile((dir / "weights.bin").string(), blob).isOk());
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  auto* op = model.add_opset_import();
  op->set_version(13);
  auto* g = model.mutable_graph();
  g->set_name("g");
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(::onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_dims(3);
  w->set_data_location(::onnx::TensorProto::EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value("weights.bin");
  auto* off = w->add_external_data();
  off->set_key("offset");
  off->set_value("16");
  auto* n = g->add_node();
  n->set_op_type("Identity");
  n->add_input("w");
  n->add_output("y");
  auto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
  std::string bytes;
  REQUIRE(model.SerializeToString(&bytes));
  REQUIRE(writeFile((dir / "model.onnx").string(), bytes).isOk());
  auto m = kiln::onnx::importOnnxFile((dir / "model.onnx").string());
  REQUIRE(m.isOk());
  const Tensor& t = (*m)->graph().nodes()[0]->getTensor("value");
  CHECK(t.toDoubles() == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK_FALSE(t.buffer()->isMutable());  // a view of the mapping
  runtime::Interpreter interp((*m)->graph());
  auto r = interp.run(std::vector<RuntimeValue>{});
  REQUIRE(r.isOk());
  CHECK((*r)[0].tensor().toDoubles() == std::vector<double>(values.begin(), values.end()));
  fs::remove_all(dir);
}

TEST_CASE("legacy op forms are rewritten to their opset-17 form", "[frontend][opset]") {
  // Slice-1 keeps starts/ends as attributes; Softmax-11 coerces to 2-D at axis.
  ::onnx::ModelProto model;
  model.set_ir_version(6);
  model.add_opset_import()->set_version(9);
  auto* g = model.mutable_graph();
  g->set_name("g");
  addTensorInput(g, "x", ::onnx::TensorProto::FLOAT, {2, 3, 4});
  auto* slice = g->add_node();
  slice->set_op_type("Slice");
  slice->set_name("slice");
  slice->add_input("x");
  slice->add_output("s");
  auto ints = [](::onnx::NodeProto* n, const char* name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  };
  ints(slice, "starts", {1});
  ints(slice, "ends", {3});
  ints(slice, "axes", {2});
  auto* sm = g->add_node();
  sm->set_op_type("Softmax");
  sm->set_name("softmax");
  sm->add_input("s");
  sm->add_output("y");
  auto* axis = sm->add_attribute();
  axis->set_name("axis");
  axis->set_type(::onnx::AttributeProto::INT);
  axis->set_i(1);
  g->add_output()->set_name("y");
  std::string bytes;
  REQUIRE(model.SerializeToString(&bytes));
  auto m = kiln::onnx::importOnnxBytes(bytes, ".");
  REQUIRE(m.isOk());
  std::string text = ir::printModule(**m);
  CHECK_THAT(text, Catch::Contains("Slice(%x, %\"slice/const\", %\"slice/const_1\", %\"slice/const_2\")"));
  CHECK_THAT(text, Catch::Contains("Flatten(%s) {axis = 1}"));
  CHECK((*m)->graph().outputs()[0]->type().str() == "f32[2,3,2]");
  // Numerically: softmax over the flattened trailing 6 values of each batch entry.
  std::vector<float> xs(24);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = float(i) * 0.1f;
  runtime::Interpreter interp((*m)->graph());
  auto r = interp.run(std::vector<RuntimeValue>{Tensor::fromVector<float>({2, 3, 4}, xs)});
  REQUIRE(r.isOk());
  std::vector<double> y = (*r)[0].tensor().toDoubles();
  double sum = 0;
  for (int i = 0; i < 6; ++i) sum += y[size_t(i)];
  CHECK(sum == Approx(1.0));
}

TEST_CASE("RoiAlign before opset 16 samples without the half-pixel shift", "[frontend][opset]") {
  // RoiAlign-10 has no coordinate_transformation_mode and samples as output_half_pixel;
  // opset 16 added the attribute with half_pixel as its default. One 2x2 region of a 4x4
  // map, one bin, one sample at the region's centre: (1, 1) unshifted, (0.5, 0.5) shifted.
  auto roiAlign = [](int64_t opset) {
    ::onnx::ModelProto model;
    model.set_ir_version(8);
    model.add_opset_import()->set_version(opset);
    auto* g = model.mutable_graph();
    g->set_name("g");
    addTensorInput(g, "x", ::onnx::TensorProto::FLOAT, {1, 1, 4, 4});
    addTensorInput(g, "rois", ::onnx::TensorProto::FLOAT, {1, 4});
    addTensorInput(g, "batch", ::onnx::TensorProto::INT64, {1});
    auto* n = g->add_node();
    n->set_op_type("RoiAlign");
    n->set_name("roi_align");
    for (const char* in : {"x", "rois", "batch"}) n->add_input(in);
    n->add_output("y");
    for (const char* name : {"output_height", "output_width", "sampling_ratio"}) {
      auto* a = n->add_attribute();
      a->set_name(name);
      a->set_type(::onnx::AttributeProto::INT);
      a->set_i(1);
    }
    g->add_output()->set_name("y");
    std::string bytes;
    REQUIRE(model.SerializeToString(&bytes));
    auto m = kiln::onnx::importOnnxBytes(bytes, ".");
    REQUIRE(m.isOk());
    std::vector<float> xs(16);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = float(i);
    runtime::Interpreter interp((*m)->graph());
    auto r = interp.run(std::vector<RuntimeValue>{Tensor::fromVector<float>({1, 1, 4, 4}, xs),
                                                  Tensor::fromVector<float>({1, 4}, {0, 0, 2, 2}),
                                                  Tensor::fromVector<int64_t>({1}, {0})});
    REQUIRE(r.isOk());
    return std::make_pair(ir::printModule(**m), (*r)[0].tensor().toDoubles().at(0));
  };
  auto [legacy, legacyValue] = roiAlign(13);
  CHECK_THAT(legacy, Catch::Contains("coordinate_transformation_mode = \"output_half_pixel\""));
  CHECK(legacyValue == Approx(5.0));  // x[1][1]
  auto [current, currentValue] = roiAlign(16);
  CHECK(currentValue == Approx(2.5));  // the mean of x[0..1][0..1]
}

namespace {

::onnx::NodeProto* addNode(::onnx::GraphProto* g, const char* op, std::vector<std::string> ins,
                           std::vector<std::string> outs, const char* name) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : ins) n->add_input(i);
  for (const auto& o : outs) n->add_output(o);
  return n;
}

/// x: string[2]; y = StringConcat(x, sep); n = Cast(Reshape(digits, [2]) to float);
/// opset 20, with string initializers sep (";") and digits (["2.5", "-1"]).
::onnx::ModelProto stringModel() {
  ::onnx::ModelProto model;
  model.set_ir_version(9);
  model.add_opset_import()->set_version(20);
  auto* g = model.mutable_graph();
  g->set_name("strings");
  addTensorInput(g, "x", ::onnx::TensorProto::STRING, {2});
  auto* sep = g->add_initializer();
  sep->set_name("sep");
  sep->set_data_type(::onnx::TensorProto::STRING);
  sep->add_string_data(";");
  auto* digits = g->add_initializer();
  digits->set_name("digits");
  digits->set_data_type(::onnx::TensorProto::STRING);
  digits->add_dims(1);
  digits->add_dims(2);
  digits->add_string_data("2.5");
  digits->add_string_data("-1");
  auto* shape = g->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(::onnx::TensorProto::INT64);
  shape->add_dims(1);
  shape->add_int64_data(2);
  addNode(g, "StringConcat", {"x", "sep"}, {"y"}, "concat");
  addNode(g, "Reshape", {"digits", "shape"}, {"flat"}, "reshape");
  addNode(g, "Cast", {"flat"}, {"n"}, "parse")->add_attribute()->CopyFrom(
      [] { ::onnx::AttributeProto a; a.set_name("to"); a.set_type(::onnx::AttributeProto::INT); a.set_i(1); return a; }());
  for (const char* o : {"y", "n"}) g->add_output()->set_name(o);
  return model;
}

}  // namespace

TEST_CASE("string tensors import as pool ids: string ops, casts from strings through Reshape, marked boundaries",
          "[frontend][strings]") {
  std::string bytes;
  REQUIRE(stringModel().SerializeToString(&bytes));
  auto m = kiln::onnx::importOnnxBytes(bytes, ".");
  REQUIRE(m.isOk());
  CHECK((*m)->stringInputs == std::set<std::string>{"x"});
  CHECK((*m)->stringOutputs == std::set<std::string>{"y"});  // n holds numbers
  bool parses = false;
  for (const ir::Node* n : (*m)->graph().nodes()) parses |= n->op() == ir::Op::KilnCastFromString;
  CHECK(parses);  // the Cast reads a string value that came through Reshape
  auto x = stringTensor({2}, {"a", "straße"});
  REQUIRE(x.isOk());
  runtime::Interpreter interp((*m)->graph());
  auto r = interp.run(std::vector<RuntimeValue>{RuntimeValue(*x)});
  REQUIRE(r.isOk());
  auto y = tensorStrings((*r)[0].tensor());
  REQUIRE(y.isOk());
  CHECK(*y == std::vector<std::string>{"a;", "straße;"});
  CHECK((*r)[1].tensor().toDoubles() == std::vector<double>{2.5, -1});

  // An id the pool does not hold is an error naming it, never a made-up string.
  Tensor bogus = Tensor::fromVector<int64_t>({2}, {12345, 0});
  auto bad = interp.run(std::vector<RuntimeValue>{RuntimeValue(bogus)});
  REQUIRE_FALSE(bad.isOk());
  CHECK(bad.error().code() == ErrorCode::ExecFailure);
  CHECK(bad.error().message().find("12345") != std::string::npos);
}

TEST_CASE("ops that would read string ids as numbers or order are rewritten or refused", "[frontend][strings]") {
  ::onnx::ModelProto model = stringModel();
  auto* g = model.mutable_graph();
  addNode(g, "Unique", {"x"}, {"u"}, "dedupe");
  g->add_output()->set_name("u");
  std::string bytes;
  REQUIRE(model.SerializeToString(&bytes));
  auto m = kiln::onnx::importOnnxBytes(bytes, ".");
  REQUIRE_FALSE(m.isOk());
  CHECK(m.error().code() == ErrorCode::OnnxUnsupportedOp);
  CHECK(m.error().str().find("dedupe") != std::string::npos);
  CHECK(m.error().message().find("Unique on strings") != std::string::npos);

  // A STRING initializer must keep its strings in string_data.
  ::onnx::ModelProto raw = stringModel();
  raw.mutable_graph()->mutable_initializer(0)->set_raw_data("abc");
  REQUIRE(raw.SerializeToString(&bytes));
  auto r = kiln::onnx::importOnnxBytes(bytes, ".");
  REQUIRE_FALSE(r.isOk());
  CHECK(r.error().code() == ErrorCode::OnnxBadTensorData);
}
