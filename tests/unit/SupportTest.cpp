//===- tests/unit/SupportTest.cpp - Unit tests of lib/support -------------===//
//
// Half/bfloat16 conversion (exhaustive), float8 and 4-bit value rules
// (exhaustive over the bit patterns), dtype tables, tensors (cast, reshape,
// buffers), .npy round trips and malformed files, errors and hashing.
//
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "Mutation.h"
#include "kiln/support/DimExpr.h"
#include "kiln/support/FastMath.h"
#include "kiln/support/File.h"
#include "kiln/support/Hash.h"
#include "kiln/support/NarrowTypes.h"
#include "kiln/support/Npy.h"
#include "kiln/support/ProcessInfo.h"
#include "kiln/support/Status.h"
#include "kiln/support/StringPool.h"
#include "kiln/support/Tensor.h"

using namespace kiln;

TEST_CASE("half -> float -> half is the identity for every non-NaN half", "[float16]") {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    Half h = Half::fromBits(uint16_t(bits));
    float f = float(h);
    if (std::isnan(f)) {
      CHECK(std::isnan(float(Half(f))));
      continue;
    }
    INFO("bits " << bits);
    CHECK(Half(f).bits == bits);
  }
}

TEST_CASE("float -> half rounds to nearest even and saturates to infinity", "[float16]") {
  CHECK(Half(1.0f).bits == 0x3c00);
  CHECK(Half(65504.0f).bits == 0x7bff);
  CHECK(Half(65520.0f).bits == 0x7c00);                       // halfway to inf rounds up (even)
  CHECK(Half(1.0f + 1.0f / 2048.0f).bits == 0x3c00);          // halfway between 1 and next: to even
  CHECK(Half(1.0f + 3.0f / 2048.0f).bits == 0x3c02);          // halfway, odd neighbour: up
  CHECK(Half(std::ldexp(1.0f, -24)).bits == 0x0001);          // smallest subnormal
  CHECK(Half(std::ldexp(1.0f, -26)).bits == 0x0000);          // below half of it: zero
  CHECK(Half(-0.0f).bits == 0x8000);
  CHECK(std::isinf(float(Half(1e10f))));
}

TEST_CASE("bfloat16 keeps the upper half of a float with rounding", "[float16]") {
  CHECK(BFloat16(1.0f).bits == 0x3f80);
  CHECK(float(BFloat16(3.0f)) == 3.0f);
  float x;
  uint32_t u = 0x3f808000;  // exactly halfway between two bf16 values, lower is even
  std::memcpy(&x, &u, 4);
  CHECK(BFloat16(x).bits == 0x3f80);
  CHECK(std::isnan(float(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
}

namespace {
constexpr NarrowType kFloat8Types[] = {NarrowType::F8E4M3FN, NarrowType::F8E4M3FNUZ, NarrowType::F8E5M2,
                                       NarrowType::F8E5M2FNUZ};
}  // namespace

TEST_CASE("every float8 value rounds to itself, and positive patterns ascend", "[narrow]") {
  for (NarrowType t : kFloat8Types) {
    INFO(narrowTypeName(t));
    float previous = -1;
    for (int bits = 0; bits < 256; ++bits) {
      const float v = narrowFloatValue(uint8_t(bits), t);
      if (std::isnan(v)) continue;
      if (std::isfinite(v)) CHECK(roundToNarrowFloat(v, t, true) == v);  // saturation maps inf to the max
      CHECK(roundToNarrowFloat(v, t, false) == v);
      if (bits < 0x80 && std::isfinite(v)) {
        CHECK(v > previous);
        previous = v;
      }
    }
    CHECK(previous == miniFloatFormat(t).maxFinite);
  }
  CHECK(std::isnan(narrowFloatValue(0x7f, NarrowType::F8E4M3FN)));
  CHECK(std::isnan(narrowFloatValue(0x80, NarrowType::F8E4M3FNUZ)));
  CHECK(narrowFloatValue(0x7c, NarrowType::F8E5M2) == std::numeric_limits<float>::infinity());
  CHECK(narrowFloatValue(0x01, NarrowType::F8E4M3FN) == std::ldexp(1.0f, -9));
  CHECK(narrowFloatValue(0x01, NarrowType::F8E5M2FNUZ) == std::ldexp(1.0f, -17));
}

TEST_CASE("values between float8 neighbours round to nearest, ties to the even pattern", "[narrow]") {
  for (NarrowType t : kFloat8Types) {
    INFO(narrowTypeName(t));
    for (int bits = 0; bits + 1 < 0x80; ++bits) {
      const float a = narrowFloatValue(uint8_t(bits), t), b = narrowFloatValue(uint8_t(bits + 1), t);
      if (!std::isfinite(a) || !std::isfinite(b)) continue;
      const float mid = (a + b) / 2;
      INFO(a << " .. " << b);
      CHECK(roundToNarrowFloat(mid, t, true) == (bits % 2 == 0 ? a : b));
      CHECK(roundToNarrowFloat(std::nextafter(mid, b), t, true) == b);
      CHECK(roundToNarrowFloat(std::nextafter(mid, a), t, true) == a);
      CHECK(roundToNarrowFloat(-mid, t, true) == -(bits % 2 == 0 ? a : b));
    }
  }
}

TEST_CASE("float8 overflow saturates or becomes NaN or inf, and the FNUZ types have no -0", "[narrow]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(roundToNarrowFloat(1e6f, NarrowType::F8E4M3FN, true) == 448);
  CHECK(std::isnan(roundToNarrowFloat(470, NarrowType::F8E4M3FN, false)));
  CHECK(roundToNarrowFloat(464, NarrowType::F8E4M3FN, false) == 448);  // a tie, to the even 448
  CHECK(roundToNarrowFloat(-inf, NarrowType::F8E4M3FN, true) == -448);
  CHECK(std::isnan(roundToNarrowFloat(inf, NarrowType::F8E4M3FN, false)));
  CHECK(roundToNarrowFloat(-inf, NarrowType::F8E5M2, false) == -inf);
  CHECK(roundToNarrowFloat(70000, NarrowType::F8E5M2, false) == inf);
  CHECK(roundToNarrowFloat(inf, NarrowType::F8E5M2, true) == 57344);
  CHECK(std::isnan(roundToNarrowFloat(inf, NarrowType::F8E5M2FNUZ, false)));
  CHECK(roundToNarrowFloat(inf, NarrowType::F8E4M3FNUZ, true) == 240);
  CHECK(std::isnan(roundToNarrowFloat(std::numeric_limits<float>::quiet_NaN(), NarrowType::F8E5M2, true)));
  CHECK(std::signbit(roundToNarrowFloat(-1e-6f, NarrowType::F8E4M3FN, true)));
  CHECK(!std::signbit(roundToNarrowFloat(-1e-6f, NarrowType::F8E4M3FNUZ, true)));
  CHECK(!std::signbit(roundToNarrowFloat(-0.0f, NarrowType::F8E5M2FNUZ, false)));
}

TEST_CASE("float4 e2m1 holds 16 values, rounds ties to the even pattern and always saturates", "[narrow]") {
  const float values[] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int bits = 0; bits < 16; ++bits) {
    const float v = narrowFloatValue(uint8_t(bits), NarrowType::F4E2M1);
    CHECK(v == (bits < 8 ? values[bits] : -values[bits - 8]));
    CHECK(roundToNarrowFloat(v, NarrowType::F4E2M1, false) == v);
  }
  for (int bits = 0; bits < 7; ++bits) {
    const float mid = (values[bits] + values[bits + 1]) / 2;
    INFO(mid);
    CHECK(roundToNarrowFloat(mid, NarrowType::F4E2M1, true) == values[bits % 2 == 0 ? bits : bits + 1]);
    CHECK(roundToNarrowFloat(std::nextafter(mid, 0.0f), NarrowType::F4E2M1, true) == values[bits]);
    CHECK(roundToNarrowFloat(-std::nextafter(mid, 7.0f), NarrowType::F4E2M1, true) == -values[bits + 1]);
  }
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(roundToNarrowFloat(7, NarrowType::F4E2M1, false) == 6);
  CHECK(roundToNarrowFloat(-inf, NarrowType::F4E2M1, false) == -6);
  CHECK(roundToNarrowFloat(std::numeric_limits<float>::quiet_NaN(), NarrowType::F4E2M1, true) == 6);
  CHECK(std::signbit(roundToNarrowFloat(-0.1f, NarrowType::F4E2M1, true)));
  CHECK(narrowFloatValue(0xf7, NarrowType::F4E2M1) == 6);  // only the low nibble is read
}

TEST_CASE("float8 e8m0 holds the powers of two 2^-127..2^127 and rounds by its mode", "[narrow]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (int bits = 0; bits < 255; ++bits) {
    const float v = narrowFloatValue(uint8_t(bits), NarrowType::F8E8M0);
    CHECK(v == std::ldexp(1.0f, bits - 127));
    for (ScaleRounding r : {ScaleRounding::Up, ScaleRounding::Down, ScaleRounding::Nearest})
      CHECK(roundToNarrowFloat(v, NarrowType::F8E8M0, false, r) == v);
  }
  CHECK(std::isnan(narrowFloatValue(0xff, NarrowType::F8E8M0)));
  const auto e8m0 = [](float x, bool saturate, ScaleRounding r) {
    return roundToNarrowFloat(x, NarrowType::F8E8M0, saturate, r);
  };
  CHECK(e8m0(3, true, ScaleRounding::Up) == 4);
  CHECK(e8m0(3, true, ScaleRounding::Down) == 2);
  CHECK(e8m0(3, true, ScaleRounding::Nearest) == 4);  // a tie goes up
  CHECK(e8m0(std::nextafter(3.0f, 0.0f), true, ScaleRounding::Nearest) == 2);
  CHECK(e8m0(0x1.8p-127f, true, ScaleRounding::Nearest) == 0x1p-126f);  // an f32 subnormal
  CHECK(e8m0(0x1.4p-127f, true, ScaleRounding::Up) == 0x1p-126f);
  CHECK(e8m0(0x1.4p-127f, true, ScaleRounding::Down) == 0x1p-127f);
  CHECK(e8m0(0x1p-128f, true, ScaleRounding::Up) == 0x1p-127f);
  CHECK(std::isnan(e8m0(0x1p-128f, false, ScaleRounding::Up)));
  CHECK(e8m0(-2, true, ScaleRounding::Up) == 0x1p-127f);
  CHECK(std::isnan(e8m0(0, false, ScaleRounding::Down)));
  CHECK(e8m0(inf, true, ScaleRounding::Up) == 0x1p127f);
  CHECK(std::isnan(e8m0(inf, false, ScaleRounding::Up)));
  CHECK(std::isnan(e8m0(std::nextafter(0x1p127f, inf), false, ScaleRounding::Down)));
  CHECK(std::isnan(e8m0(nan, true, ScaleRounding::Up)));
  CHECK(scaleRoundingFromName("nearest") == ScaleRounding::Nearest);
  CHECK(!scaleRoundingFromName("even"));
}

TEST_CASE("casts to 2-bit integers keep the low two bits, rounding floats half away from zero", "[narrow]") {
  CHECK(wrapToNarrowInt(2, NarrowType::I2) == -2);
  CHECK(wrapToNarrowInt(-3, NarrowType::I2) == 1);
  CHECK(wrapToNarrowInt(-1, NarrowType::U2) == 3);
  CHECK(castToNarrowInt(2.5, NarrowType::U2) == 3);
  CHECK(castToNarrowInt(-2.6, NarrowType::I2) == 1);
  CHECK(castToNarrowInt(0.5, NarrowType::I2) == 1);
  CHECK(narrowIntValue(0xfe, NarrowType::I2) == -2);  // only the low two bits are read
  CHECK(narrowIntRange(NarrowType::I2) == std::pair<int, int>{-2, 1});
  CHECK(narrowIntRange(NarrowType::U2) == std::pair<int, int>{0, 3});
  CHECK(narrowBits(NarrowType::U2) == 2);
  CHECK(narrowCarrier(NarrowType::I2) == DType::I8);
}

TEST_CASE("casts to 4-bit integers keep the low nibble, rounding floats half away from zero", "[narrow]") {
  CHECK(wrapToNarrowInt(-9, NarrowType::I4) == 7);
  CHECK(wrapToNarrowInt(8, NarrowType::I4) == -8);
  CHECK(wrapToNarrowInt(-1, NarrowType::U4) == 15);
  CHECK(wrapToNarrowInt(std::numeric_limits<int64_t>::min(), NarrowType::U4) == 0);
  CHECK(castToNarrowInt(2.5, NarrowType::I4) == 3);
  CHECK(castToNarrowInt(-2.5, NarrowType::U4) == 13);
  CHECK(castToNarrowInt(0.49999997, NarrowType::I4) == 0);
  CHECK(castToNarrowInt(8.5, NarrowType::I4) == -7);
  CHECK(castToNarrowInt(std::nan(""), NarrowType::I4) == 0);
  CHECK(castToNarrowInt(1e30, NarrowType::U4) == 0);
  CHECK(castToNarrowInt(4294967303.0, NarrowType::U4) == 7);  // 2^32 + 7: the low bits of a large value survive
  CHECK(narrowIntValue(0xf, NarrowType::I4) == -1);
  CHECK(narrowIntValue(0xf, NarrowType::U4) == 15);
}

TEST_CASE("dtype names and ONNX codes round trip", "[dtype]") {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8, DType::I16, DType::I32, DType::I64,
                  DType::U8, DType::U16, DType::U32, DType::U64, DType::Bool}) {
    CHECK(parseDType(dtypeName(t)) == t);
    CHECK(dtypeFromOnnx(onnxDTypeCode(t)) == t);
  }
  CHECK_FALSE(dtypeFromOnnx(8).has_value());  // STRING
  CHECK(std::string(onnxDTypeCodeName(8)) == "STRING");
  CHECK_FALSE(parseDType("f31").has_value());
}

TEST_CASE("casts follow ONNX semantics without undefined behaviour", "[tensor]") {
  Tensor f = Tensor::fromVector<float>({5}, {1.9f, -1.9f, 1e20f, std::nanf(""), -1e20f});
  std::vector<int64_t> i8 = f.castTo(DType::I8).toInt64s();
  CHECK(i8 == std::vector<int64_t>{1, -1, 127, 0, -128});
  Tensor b = Tensor::fromVector<int32_t>({3}, {0, 2, -1}).castTo(DType::Bool);
  CHECK(b.toInt64s() == std::vector<int64_t>{0, 1, 1});
  CHECK(Tensor::scalar<int64_t>(300).castTo(DType::U8).toInt64s()[0] == 44);  // wraps
}

TEST_CASE("reshaped tensors share their buffer and read-only buffers refuse writes", "[tensor]") {
  Tensor t = Tensor::fromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = t.reshaped({3, 2});
  CHECK(r.rawData() == t.rawData());
  CHECK(r.dims() == Dims{3, 2});
  std::string bytes(8, '\0');
  auto buf = Buffer::adoptString(std::move(bytes));
  CHECK_FALSE(buf->isMutable());
  Tensor view(DType::F32, {2}, buf);
  CHECK(view.toDoubles() == std::vector<double>{0, 0});
}

TEST_CASE("zeros are zero where a buffer for writing left bytes behind", "[tensor]") {
  for (int64_t n : {int64_t(100), int64_t(3) << 20}) {  // a small buffer and one of 12 MiB (huge pages asked for)
    {
      Tensor dirty = Tensor::forWrite(DType::F32, {n});
      CHECK(dirty.numElements() == n);
      std::memset(dirty.mutableRawData(), 0xff, dirty.byteSize());  // freed with these bytes: zeros may reuse them
      CHECK(reinterpret_cast<uintptr_t>(dirty.rawData()) % 64 == 0);
    }
    Tensor clean = Tensor::zeros(DType::F32, {n});
    const float* v = clean.data<float>();
    CHECK(std::all_of(v, v + n, [](float x) { return x == 0.0f; }));
  }
}

TEST_CASE("mapping pages ahead of writes leaves what is already written", "[memory]") {
  // 5 MiB starting 64 bytes into a block: a partial first page, whole huge pages, a partial last one.
  std::vector<uint8_t> block((size_t(5) << 20) + 128);
  for (size_t i = 0; i < block.size(); ++i) block[i] = uint8_t(i * 131 + 7);
  mapPagesForWrite(block.data() + 64, size_t(5) << 20);
  bool intact = true;
  for (size_t i = 0; i < block.size(); ++i) intact &= block[i] == uint8_t(i * 131 + 7);
  CHECK(intact);
  mapPagesForWrite(block.data(), 0);  // nothing to map
}

TEST_CASE("element counts reject negative and overflowing dims", "[tensor]") {
  CHECK(checkedNumElements({2, 3, 4}) == 24);
  CHECK(checkedNumElements({}) == 1);
  CHECK_FALSE(checkedNumElements({-1, 2}).has_value());
  CHECK_FALSE(checkedNumElements({int64_t(1) << 40, int64_t(1) << 40}).has_value());
  CHECK(dimsToString({1, 3, 224, 224}) == "1x3x224x224");
}

TEST_CASE(".npy files round trip every dtype", "[npy]") {
  Tensor a = Tensor::fromVector<float>({2, 2}, {1.5f, -2, 3, 4});
  auto back = parseNpy(serializeNpy(a), "a");
  REQUIRE(back.isOk());
  CHECK(back->bitwiseEqual(a));
  Tensor b = Tensor::fromVector<int64_t>({3}, {-1, 0, 1 << 30});
  CHECK(parseNpy(serializeNpy(b), "b")->bitwiseEqual(b));
  Tensor s = Tensor::scalar<bool>(true);
  CHECK(parseNpy(serializeNpy(s), "s")->bitwiseEqual(s));
  // bf16 has no NumPy type: it is written as f32, exactly.
  Tensor h = Tensor::fromVector<float>({2}, {1.5f, -3}).castTo(DType::BF16);
  CHECK(parseNpy(serializeNpy(h), "h")->dtype() == DType::F32);
}

TEST_CASE("malformed .npy files give a file-format error", "[npy]") {
  std::string good = serializeNpy(Tensor::fromVector<float>({4}, {1, 2, 3, 4}));
  auto check = [](const std::string& bytes, const char* what) {
    auto r = parseNpy(bytes, "x.npy");
    REQUIRE_FALSE(r.isOk());
    CHECK(r.error().code() == ErrorCode::FileFormat);
    CHECK_THAT(r.error().message(), Catch::Contains(what));
  };
  check("hello", "magic");
  check(good.substr(0, good.size() - 4), "data holds");
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  check(fortran, "Fortran");
  std::string badType = good;
  badType.replace(badType.find("<f4"), 3, "<c8");
  check(badType, "unsupported dtype");
}

TEST_CASE("mutated .npy files parse or give a file-format error, never a crash", "[npy][fuzz]") {
  std::vector<std::string> seeds = {serializeNpy(Tensor::fromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6})),
                                    serializeNpy(Tensor::fromVector<int64_t>({4}, {-1, 0, 1, 2})),
                                    serializeNpy(Tensor::scalar<bool>(true))};
  auto strings = stringTensor({2}, {"abc", "grüße"});
  REQUIRE(strings.isOk());
  seeds.push_back(*serializeStringNpy(*strings));
  SplitMix64 rng(12345);
  int parsed = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const std::string bytes = testing::mutated(seeds[size_t(trial) % seeds.size()], rng, "0123456789(),:'<>|UiufbS ");
    auto r = parseNpy(bytes, "mutant.npy");
    if (r.isOk()) {
      ++parsed;
    } else {
      CHECK(r.error().code() == ErrorCode::FileFormat);
    }
  }
  CHECK(parsed > 0);
}

TEST_CASE("errors print their code, node and opset", "[status]") {
  Error e(ErrorCode::OnnxUnsupportedOp, "op 'Foo' is not supported");
  e.atNode("n1", "Foo", 13);
  CHECK(e.str() == "error KE1003 (unsupported-op): node 'n1' (Foo, opset 13): op 'Foo' is not supported");
  e.atNode("other", "Bar");  // the first location wins
  CHECK(e.nodeName() == "n1");
  Expected<int> x = makeError(ErrorCode::IoError, "cannot read ", 3, " files");
  CHECK_FALSE(x.isOk());
  CHECK(x.error().message() == "cannot read 3 files");
}

TEST_CASE("hashes are stable and sensitive to content", "[hash]") {
  CHECK(hashString("kiln") == hashString("kiln"));
  CHECK(hashString("kiln") != hashString("kilN"));
  std::string big(1000, 'a'), big2 = big;
  big2[999] = 'b';
  CHECK(hashString(big) != hashString(big2));
  CHECK(hashString("") != hashString(std::string(1, '\0')));
}

TEST_CASE("hashes keep their values, whole or fed in pieces", "[hash]") {
  // Artifact checksums, tuning-database keys and the NVRTC cache are keyed by
  // these values: they must not change from one kiln to the next.
  std::string s;
  for (int i = 0; i < 1000; ++i) s.push_back(char(i * 7 + 3));
  const std::pair<size_t, uint64_t> pinned[] = {
      {0, 0x1f2e5cd296bc3575ull},  {1, 0x5fc63c4a02342723ull},  {7, 0x02c8a84ca38ef735ull},
      {8, 0x175b82802634cccfull},  {15, 0x0aef97e3fb72a918ull}, {16, 0x399519d5e81a34c5ull},
      {17, 0xd0256b57952434bbull}, {31, 0x36af05d7c5d91a92ull}, {33, 0xb1c8242388041f2dull},
      {1000, 0x87ade4cc40ecb2a8ull}};
  for (auto [n, value] : pinned) {
    INFO(n << " bytes");
    CHECK(hashBytes(s.data(), n) == value);
    // Every split into three pieces gives the same value.
    for (size_t a = 0; a <= n; a += (n > 40 ? 37 : 1))
      for (size_t b = a; b <= n; b += (n > 40 ? 53 : 1)) {
        BytesHasher h(n);
        h.update(s.data(), a);
        h.update(s.data() + a, b - a);
        h.update(s.data() + b, n - b);
        CHECK(h.finish() == value);
      }
  }
  CHECK(hashBytes(s.data(), 1000, 42) == 0x73a38c9974a120f0ull);
  BytesHasher seeded(1000, 42);
  for (size_t at = 0; at < 1000; at += 3) seeded.update(s.data() + at, std::min<size_t>(3, 1000 - at));
  CHECK(seeded.finish() == 0x73a38c9974a120f0ull);
}

TEST_CASE("file names from tensor names keep only safe characters", "[file]") {
  CHECK(sanitizeFileName("/stem/Conv_output_0") == "_stem_Conv_output_0");
  CHECK(sanitizeFileName("onnx::Add:1") == "onnx__Add_1");
  CHECK(sanitizeFileName("..") == "_..");
  CHECK(sanitizeFileName("logits") == "logits");
}

TEST_CASE("The fast-math approximations stay within their documented errors over all f32", "[fastmath]") {
  // Every 127th bit pattern (34 million floats, both signs, all exponents).
  double expErr = 0, erfErr = 0, tanhErr = 0;
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 127) {
    uint32_t u = uint32_t(bits);
    float x;
    std::memcpy(&x, &u, 4);
    if (!std::isfinite(x)) continue;
    if (x > -87.3f && x < 88.7f) {
      double want = std::exp(double(x));
      expErr = std::max(expErr, std::abs(kiln::fastExp(x) - want) / want);
    }
    erfErr = std::max(erfErr, std::abs(kiln::fastErf(x) - std::erf(double(x))));
    tanhErr = std::max(tanhErr, std::abs(kiln::fastTanh(x) - std::tanh(double(x))));
  }
  CHECK(expErr <= kiln::kFastExpMaxRelError);
  CHECK(erfErr <= kiln::kFastErfMaxAbsError);
  CHECK(tanhErr <= kiln::kFastTanhMaxAbsError);
  CHECK(expErr > 1e-8);  // an approximation, not libm
  CHECK(kiln::fastExp(-100.0f) == 0.0f);
  CHECK(std::isinf(kiln::fastExp(100.0f)));
  CHECK(std::isnan(kiln::fastExp(NAN)));
  CHECK(kiln::fastExp(88.7f) == Approx(std::exp(double(88.7f))).epsilon(1e-6));
  CHECK(kiln::fastErf(10.0f) == 1.0f);
  CHECK(kiln::fastTanh(-20.0f) == -1.0f);
}

TEST_CASE("dim expressions over dynamic dims are canonical polynomials that evaluate and bound") {
  const DimExpr b = DimExpr::symbol("batch"), s = DimExpr::symbol("seq"), h = DimExpr::symbol("h");
  // Equal exactly when they are the same polynomial in the same atoms.
  CHECK(b * s == s * b);
  CHECK((b + 1) * (b - 1) == b * b - 1);
  CHECK(s - s == DimExpr(0));
  CHECK((s - s).symbols().empty());
  CHECK_FALSE(b == s);
  CHECK_FALSE(s + 1 == s);
  // Reshape's -1: an exact division divides every coefficient.
  CHECK(DimExpr::floorDiv(b * s * 768, 768) == b * s);
  CHECK(DimExpr::floorDiv(s * 12, 4) == s * 3);
  CHECK(DimExpr::floorDiv(DimExpr(-7), 2) == DimExpr(-4));
  // Exact division by one term: what Reshape's -1 needs when the other dims are symbolic too.
  CHECK(DimExpr::divideExact(b * s * 768, s * 12) == b * 64);
  CHECK(DimExpr::divideExact(b * s * 2 + s * 4, s * 2) == b + 2);
  CHECK(DimExpr::divideExact(b * s * 768, DimExpr(768)) == b * s);
  CHECK_FALSE(DimExpr::divideExact(b * s * 768, h).has_value());       // h does not divide it
  CHECK_FALSE(DimExpr::divideExact(s * 6 + 1, DimExpr(2)).has_value());  // a remainder
  CHECK_FALSE(DimExpr::divideExact(s * 6, s + 1).has_value());          // not one term
  CHECK_FALSE(DimExpr::divideExact(s * 6, DimExpr(0)).has_value());
  // Multiples of the divisor are split off: floor((2h + 3) / 2) = h + 1.
  CHECK(DimExpr::floorDiv(h * 2 + 3, 2) == h + 1);
  // A convolution's output length, and the same computed another way.
  const DimExpr out = DimExpr::floorDiv(h + 2 * 1 - 3, 2) + 1;
  CHECK(out == DimExpr::floorDiv(h + 1, 2));
  CHECK(out.str() == "floordiv(h + 1, 2)");
  // A symbol named like an atom's printed form is another atom.
  const DimExpr lookalike = DimExpr::symbol("floordiv(h + 1, 2)");
  CHECK_FALSE(lookalike == out);
  CHECK(lookalike.symbols() == std::set<std::string>{"floordiv(h + 1, 2)"});
  CHECK((lookalike - out).constant() == std::nullopt);
  CHECK_FALSE(DimExpr::min(DimExpr::symbol("a, b"), h) == DimExpr::min(DimExpr::symbol("a"), DimExpr::symbol("b, h")));
  CHECK(DimExpr::ceilDiv(s, 64) == DimExpr::floorDiv(s + 63, 64));
  CHECK((DimExpr(2) * b * s + 1).str() == "2*batch*seq + 1");
  CHECK((s - 1).str() == "seq - 1");
  CHECK(DimExpr(-3).str() == "-3");
  CHECK((DimExpr(1) - s).str() == "-seq + 1");
  // min and max: folded when the difference is constant, else one atom either way round.
  CHECK(DimExpr::min(s, s + 1) == s);
  CHECK(DimExpr::max(s, s + 1) == s + 1);
  CHECK(DimExpr::min(s, b) == DimExpr::min(b, s));
  CHECK(DimExpr::min(s, b).str() == "min(batch, seq)");
  CHECK(DimExpr::min(DimExpr(3), DimExpr(5)).constant() == 3);
  // Constants, symbols and values.
  CHECK((b * s).constant() == std::nullopt);
  CHECK((DimExpr(6) * 7).constant() == 42);
  CHECK((out * b).symbols() == std::set<std::string>{"batch", "h"});
  auto v = (out * b + DimExpr::max(s, DimExpr(100))).evaluate({{"h", 224}, {"batch", 4}, {"seq", 37}});
  REQUIRE(v.isOk());
  CHECK(*v == 112 * 4 + 100);
  auto missing = (b * s).evaluate({{"batch", 2}});
  REQUIRE_FALSE(missing.isOk());
  CHECK(missing.error().message().find("'seq'") != std::string::npos);
  // Bounds over ranges: the KV cache's total length, a halved width.
  auto total = (s + DimExpr::symbol("past")).bounds({{"seq", {1, 1}}, {"past", {0, 127}}});
  REQUIRE(total.has_value());
  CHECK(*total == std::pair<int64_t, int64_t>{1, 128});
  auto halved = out.bounds({{"h", {48, 1280}}});
  REQUIRE(halved.has_value());
  CHECK(*halved == std::pair<int64_t, int64_t>{24, 640});
  CHECK_FALSE((b * s).bounds({{"batch", {1, 8}}}).has_value());
  // Overflow is never a wrong value.
  const DimExpr huge = DimExpr(int64_t(1) << 62) * 4;
  CHECK(huge.overflowed());
  CHECK_FALSE(huge.constant().has_value());
  CHECK_FALSE(huge.evaluate({}).isOk());
  CHECK_FALSE(huge == huge);
  auto big = (s * s).evaluate({{"seq", int64_t(1) << 40}});
  CHECK_FALSE(big.isOk());
}

TEST_CASE("dim expressions survive their encoded form, and malformed encodings are errors, never crashes") {
  const DimExpr b = DimExpr::symbol("batch size"), s = DimExpr::symbol("seq;1"), h = DimExpr::symbol("h");
  const std::vector<DimExpr> cases = {
      DimExpr(0), DimExpr(-42), b * s * 768 - 3, DimExpr::floorDiv(h - 1, 2) + 1,
      DimExpr::max(DimExpr::min(b, s) * 2, DimExpr::ceilDiv(h * h, 7)) + b, DimExpr(INT64_MIN + 1) + h};
  for (const DimExpr& e : cases) {
    INFO(e.str() << " as " << e.encode());
    auto back = DimExpr::decode(e.encode());
    REQUIRE(back.isOk());
    CHECK(*back == e);
    CHECK(back->encode() == e.encode());
  }
  for (const char* bad : {"", "E", "E1;", "E1;5;1;S9;h", "E1;5;1;F0;E0;", "E1;5;1;X", "E-1;", "E1;99999999999999999999;0;",
                          "E0;trailing", "E1;1;1;m E0;"}) {
    INFO(bad);
    auto r = DimExpr::decode(bad);
    REQUIRE_FALSE(r.isOk());
    CHECK(r.error().code() == ErrorCode::ArtifactCorrupt);
  }
  std::string deep = "E0;";
  for (int i = 0; i < 40; ++i) deep = "E1;1;1;F2;" + deep;
  CHECK_FALSE(DimExpr::decode(deep).isOk());  // nested too deeply
  // Mutants of every case (bytes replaced, dropped, duplicated): each decodes
  // to a canonical expression or is refused.
  uint64_t state = 12345;
  auto next = [&]() { return state = state * 6364136223846793005ull + 1442695040888963407ull, state >> 33; };
  const std::string alphabet = "E;SFmM-0123456789abc";
  int decoded = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text = cases[next() % cases.size()].encode();
    for (int edits = 1 + int(next() % 3); edits > 0 && !text.empty(); --edits) {
      const size_t at = next() % text.size();
      switch (next() % 3) {
        case 0: text[at] = alphabet[next() % alphabet.size()]; break;
        case 1: text.erase(at, 1); break;
        default: text.insert(at, text.substr(at, 1 + next() % 4)); break;
      }
    }
    auto r = DimExpr::decode(text);
    if (!r.isOk()) continue;
    ++decoded;
    auto again = DimExpr::decode(r->encode());
    REQUIRE(again.isOk());
    CHECK(*again == *r);
  }
  CHECK(decoded > 0);
}

TEST_CASE("the string pool interns by content: stable ids, \"\" is 0, unknown ids are errors", "[strings]") {
  auto a = internString("hello"), b = internString(std::string("hel") + "lo"), e = internString("");
  REQUIRE(a.isOk());
  REQUIRE(b.isOk());
  CHECK(*a == *b);
  CHECK(*e == 0);
  CHECK(*a != 0);
  CHECK(pooledString(*a) == std::optional<std::string_view>("hello"));
  CHECK(pooledString(0) == std::optional<std::string_view>(""));
  auto t = stringTensor({2, 2}, {"x", "", "ü", "x"});
  REQUIRE(t.isOk());
  CHECK(t->dtype() == DType::I64);
  CHECK(t->data<int64_t>()[0] == t->data<int64_t>()[3]);
  CHECK(t->data<int64_t>()[1] == 0);
  auto back = tensorStrings(*t);
  REQUIRE(back.isOk());
  CHECK(*back == std::vector<std::string>{"x", "", "ü", "x"});
  CHECK_FALSE(stringTensor({3}, {"too", "few"}).isOk());
  auto unknown = tensorStrings(Tensor::fromVector<int64_t>({1}, {987654321}));
  REQUIRE_FALSE(unknown.isOk());
  CHECK(unknown.error().message().find("987654321") != std::string::npos);
  CHECK(decodeUtf8("\xc3") == std::nullopt);           // a truncated sequence
  CHECK(decodeUtf8("a\x80") == std::nullopt);          // a stray continuation byte
  CHECK(encodeUtf8(*decodeUtf8("aü€😀")) == "aü€😀");  // one to four bytes
}

TEST_CASE("numpy string arrays read as string tensors and write back as unicode", "[strings][npy]") {
  auto t = stringTensor({3}, {"abc", "", "grüße 😀"});
  REQUIRE(t.isOk());
  auto bytes = serializeStringNpy(*t);
  REQUIRE(bytes.isOk());
  CHECK(bytes->find("'descr': '<U7'") != std::string::npos);  // 7 code points in the widest
  auto back = parseNpy(*bytes, "strings.npy");
  REQUIRE(back.isOk());
  CHECK(back->bitwiseEqual(*t));
  // numpy's bytes arrays ('|S3'): NUL-padded elements.
  std::string header = "{'descr': '|S3', 'fortran_order': False, 'shape': (2,), }";
  header += std::string(64 - (10 + header.size() + 1) % 64, ' ') + "\n";
  std::string file = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + char(0) + header + std::string("ab\0xyz", 6);
  auto s = parseNpy(file, "bytes.npy");
  REQUIRE(s.isOk());
  CHECK(*tensorStrings(*s) == std::vector<std::string>{"ab", "xyz"});
  // A data section that does not match the width is a FileFormat error.
  auto bad = parseNpy(file.substr(0, file.size() - 1), "short.npy");
  REQUIRE_FALSE(bad.isOk());
  CHECK(bad.error().code() == ErrorCode::FileFormat);
}
