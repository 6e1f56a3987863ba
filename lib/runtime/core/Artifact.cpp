//===- lib/runtime/core/Artifact.cpp - .kiln serialization ----------------===//
//
// Little-endian fixed-width integers, strings and byte blobs as
// length-prefixed runs. The Reader refuses any length that runs past the
// end, so a corrupt payload that slipped past the checksum still cannot make
// it read out of bounds. Saving streams the weights from where they are
// (no copy of the payload), hashing each slice as it is written; loading
// maps the file (MappedFile) and copies the weights out of the page cache.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/Artifact.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <iterator>

#include "kiln/support/File.h"
#include "kiln/support/Hash.h"
#include "kiln/support/StringPool.h"

namespace kiln::runtime {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'A', 'R', 'T', '\0'};
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 + 8;  // magic, version, reserved, payload size, checksum

/// A convolution's shape fields, in the order the file stores them.
template <class Geometry>
auto convFields(Geometry& g) {
  return std::array{&g.channels, &g.height,  &g.width,   &g.outChannels, &g.kernelH,   &g.kernelW, &g.padH,
                    &g.padW,     &g.strideH, &g.strideW, &g.dilationH,   &g.dilationW, &g.groups};
}

/// The payload as it is written: small fields gathered into runs of bytes the
/// Writer owns, large blobs (weights, object code) referenced where they live,
/// so saving streams them to the file without first copying them together.
class Writer {
 public:
  template <class T>
  void pod(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    append(b, sizeof(T));
  }
  void blob(const void* p, uint64_t n) {
    pod<uint64_t>(n);
    if (n < kReferencedBytes) return append(p, n);
    runs_.push_back({{}, static_cast<const uint8_t*>(p), n});
    size_ += n;
  }
  void str(const std::string& s) { blob(s.data(), s.size()); }
  size_t size() const { return size_; }
  /// Calls f(data, bytes) for each run, in order.
  template <class F>
  void forEachRun(F&& f) const {
    for (const Run& r : runs_) r.external ? f(r.external, r.externalBytes) : f(r.owned.data(), r.owned.size());
  }

 private:
  static constexpr uint64_t kReferencedBytes = 64 * 1024;
  struct Run {
    std::vector<uint8_t> owned;
    const uint8_t* external = nullptr;
    size_t externalBytes = 0;
  };
  void append(const void* p, size_t n) {
    if (runs_.empty() || runs_.back().external) runs_.emplace_back();
    const uint8_t* c = static_cast<const uint8_t*>(p);
    runs_.back().owned.insert(runs_.back().owned.end(), c, c + n);
    size_ += n;
  }
  std::vector<Run> runs_;
  size_t size_ = 0;
};

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  template <class T>
  Expected<T> pod() {
    if (n_ - at_ < sizeof(T)) return truncated();
    T v;
    std::memcpy(&v, p_ + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  Expected<std::pair<const uint8_t*, uint64_t>> blob() {
    KILN_ASSIGN(uint64_t n, pod<uint64_t>());
    if (n > n_ - at_) return truncated();
    const uint8_t* start = p_ + at_;
    at_ += n;
    return std::make_pair(start, n);
  }
  Expected<std::string> str() {
    KILN_ASSIGN(auto b, blob());
    return std::string(reinterpret_cast<const char*>(b.first), b.second);
  }
  /// A count of items each at least `minBytes` long (bounds the allocation).
  Expected<uint64_t> count(uint64_t minBytes) {
    KILN_ASSIGN(uint64_t n, pod<uint64_t>());
    if (minBytes && n > (n_ - at_) / minBytes) return truncated();
    return n;
  }
  bool done() const { return at_ == n_; }

 private:
  Error truncated() const {
    return Error(ErrorCode::ArtifactCorrupt, "artifact payload ends early (truncated or corrupt)");
  }
  const uint8_t* p_;
  size_t n_, at_ = 0;
};

void writeDims(Writer& w, const Dims& d) {
  w.pod<uint64_t>(d.size());
  for (int64_t x : d) w.pod<int64_t>(x);
}

/// Dims; -1 (unknown, for dynamic buffers; validate() checks) when `allowUnknown`.
Expected<Dims> readDims(Reader& r, bool allowUnknown = false) {
  KILN_ASSIGN(uint64_t rank, r.count(8));
  if (rank > 64) return Error(ErrorCode::ArtifactCorrupt, "artifact: tensor rank " + std::to_string(rank));
  Dims d;
  for (uint64_t i = 0; i < rank; ++i) {
    KILN_ASSIGN(int64_t x, r.pod<int64_t>());
    if (x < (allowUnknown ? -1 : 0)) return Error(ErrorCode::ArtifactCorrupt, "artifact: negative dim");
    d.push_back(x);
  }
  return d;
}

Expected<DType> readDType(Reader& r) {
  KILN_ASSIGN(uint8_t t, r.pod<uint8_t>());
  if (t == 0 || t > uint8_t(DType::Bool))
    return Error(ErrorCode::ArtifactCorrupt, "artifact: unknown dtype " + std::to_string(t));
  return DType(t);
}

void writeExpressions(Writer& w, const std::vector<DimExpr>& list) {
  w.pod<uint64_t>(list.size());
  for (const DimExpr& e : list) w.str(e.encode());
}

/// The dynamic dims, then each buffer's shape over them, each step's
/// run-time extents and each kernel's extent maxima.
void writeDynamicDims(Writer& w, const Executable& exe) {
  w.pod<uint64_t>(exe.symbols.size());
  for (const DimSymbol& d : exe.symbols) {
    w.str(d.name);
    w.pod<uint32_t>(d.input);
    w.pod<uint32_t>(d.axis);
    for (int64_t v : {d.min, d.opt, d.max}) w.pod<int64_t>(v);
  }
  for (const BufferSpec& b : exe.buffers) writeExpressions(w, b.shape);
  for (const KernelStep& s : exe.steps) writeExpressions(w, s.extents);
  w.pod<uint64_t>(exe.kernelExtentMax.size());
  for (const std::vector<int64_t>& max : exe.kernelExtentMax) {
    w.pod<uint64_t>(max.size());
    for (int64_t v : max) w.pod<int64_t>(v);
  }
}

/// The payload (everything after the header); its blobs point into `exe`.
Writer payloadOf(const Executable& exe) {
  Writer w;
  w.str(exe.target);
  w.str(exe.cpu);
  w.pod<uint64_t>(exe.cpuFeatures.size());
  for (const auto& f : exe.cpuFeatures) w.str(f);
  w.pod<uint64_t>(exe.arenaBytes);
  w.pod<uint64_t>(exe.buffers.size());
  for (const BufferSpec& b : exe.buffers) {
    w.str(b.name);
    w.pod<uint8_t>(uint8_t(b.dtype));
    writeDims(w, b.dims);
    w.pod<uint8_t>(uint8_t(b.kind));
    w.pod<uint32_t>(b.index);
    w.pod<uint64_t>(b.offset);
    w.pod<int32_t>(b.aliasOf);
    w.pod<uint8_t>(b.unknownRank ? 2 : b.dynamic ? 1 : 0);  // 2: dynamic of unknown rank
  }
  w.pod<uint64_t>(exe.kernelNames.size());
  for (size_t k = 0; k < exe.kernelNames.size(); ++k) {
    w.str(exe.kernelNames[k]);
    const std::vector<uint64_t>& params =
        k < exe.kernelParamBytes.size() ? exe.kernelParamBytes[k] : std::vector<uint64_t>{};
    w.pod<uint64_t>(params.size());
    for (uint64_t b : params) w.pod<uint64_t>(b);
  }
  w.pod<uint64_t>(exe.hostGraphs.size());
  for (const HostGraph& h : exe.hostGraphs) {
    w.str(h.name);
    w.str(h.text);
    w.pod<uint32_t>(h.numInputs);
    w.pod<uint32_t>(h.numOutputs);
    w.pod<uint64_t>(h.ops.size());
    for (const std::string& op : h.ops) w.str(op);
  }
  w.pod<uint64_t>(exe.steps.size());
  for (const KernelStep& s : exe.steps) {
    w.pod<uint8_t>(uint8_t(s.kind));
    w.pod<uint32_t>(s.kernel);
    w.pod<uint64_t>(s.args.size());
    for (uint32_t a : s.args) w.pod<uint32_t>(a);
  }
  for (const auto* list : {&exe.inputs, &exe.outputs}) {
    w.pod<uint64_t>(list->size());
    for (uint32_t id : *list) w.pod<uint32_t>(id);
  }
  w.pod<uint64_t>(exe.objectCode.size());
  for (const std::vector<uint8_t>& object : exe.objectCode) w.blob(object.data(), object.size());
  w.pod<uint64_t>(exe.cudaKernels.size());
  for (const CudaKernelCode& c : exe.cudaKernels) {
    for (uint32_t v : c.grid) w.pod<uint32_t>(v);
    for (uint32_t v : c.block) w.pod<uint32_t>(v);
    w.pod<uint32_t>(c.sharedBytes);
    w.pod<uint64_t>(c.cubins.size());
    for (size_t i = 0; i < c.cubins.size(); ++i) {
      w.pod<uint32_t>(i < c.cubinArchs.size() ? c.cubinArchs[i] : 0);
      w.blob(c.cubins[i].data(), c.cubins[i].size());
    }
    w.pod<uint32_t>(c.ptxArch);
    w.str(c.ptx);
  }
  w.pod<uint64_t>(exe.libraryCalls.size());
  for (const LibraryCall& c : exe.libraryCalls) {
    w.str(c.name);
    w.pod<uint8_t>(uint8_t(c.routine));
    w.pod<uint8_t>(uint8_t(c.dtype));
    for (int64_t v : {c.batch, c.m, c.n, c.k}) w.pod<int64_t>(v);
    for (const int64_t* v : convFields(c.conv)) w.pod<int64_t>(*v);
    w.pod<uint8_t>(uint8_t(c.transA | c.transB << 1 | c.batchB << 2 | c.allowTf32 << 3 | c.residual << 4));
    w.pod<float>(c.alpha);
    w.pod<uint8_t>(uint8_t(c.epilogue));
  }
  w.pod<uint64_t>(exe.weights.size());
  for (const Tensor& t : exe.weights) {
    w.pod<uint8_t>(uint8_t(t.dtype()));
    writeDims(w, t.dims());
    w.blob(t.rawData(), t.byteSize());
  }
  writeDynamicDims(w, exe);
  w.pod<uint64_t>(exe.strings.size());
  for (const std::string& str : exe.strings) w.str(str);
  for (const auto* list : {&exe.stringInputs, &exe.stringOutputs}) {
    w.pod<uint64_t>(list->size());
    for (uint32_t i : *list) w.pod<uint32_t>(i);
  }
  return w;
}

/// The header of a payload of `payloadBytes` with checksum `checksum`.
std::array<uint8_t, kHeaderBytes> headerFor(uint64_t payloadBytes, uint64_t checksum) {
  std::array<uint8_t, kHeaderBytes> h{};
  const uint32_t version = kArtifactFormatVersion;
  std::memcpy(h.data(), kMagic, 8);
  std::memcpy(h.data() + 8, &version, 4);  // then 4 reserved bytes, zero
  std::memcpy(h.data() + 16, &payloadBytes, 8);
  std::memcpy(h.data() + 24, &checksum, 8);
  return h;
}

// The payload's sections, in file order; each reads its part of `exe`.

/// The target, the CPU it was compiled for and the ISA extensions its code needs, and the arena size.
Status readTarget(Reader& r, Executable& exe) {
  KILN_ASSIGN(exe.target, r.str());
  KILN_ASSIGN(exe.cpu, r.str());
  KILN_ASSIGN(uint64_t features, r.count(8));
  for (uint64_t i = 0; i < features; ++i) {
    KILN_ASSIGN(std::string f, r.str());
    exe.cpuFeatures.push_back(f);
  }
  KILN_ASSIGN(exe.arenaBytes, r.pod<uint64_t>());
  return Status::ok();
}

/// The buffer table.
Status readBuffers(Reader& r, Executable& exe) {
  KILN_ASSIGN(uint64_t buffers, r.count(8));
  for (uint64_t i = 0; i < buffers; ++i) {
    BufferSpec b;
    KILN_ASSIGN(b.name, r.str());
    KILN_ASSIGN(b.dtype, readDType(r));
    KILN_ASSIGN(b.dims, readDims(r, true));
    KILN_ASSIGN(uint8_t kind, r.pod<uint8_t>());
    if (kind > uint8_t(BufferKind::Intermediate)) return Error(ErrorCode::ArtifactCorrupt, "artifact: bad buffer kind");
    b.kind = BufferKind(kind);
    KILN_ASSIGN(b.index, r.pod<uint32_t>());
    KILN_ASSIGN(b.offset, r.pod<uint64_t>());
    KILN_ASSIGN(b.aliasOf, r.pod<int32_t>());
    KILN_ASSIGN(uint8_t dynamic, r.pod<uint8_t>());
    if (dynamic > 2) return Error(ErrorCode::ArtifactCorrupt, "artifact: bad buffer flag");
    b.dynamic = dynamic != 0;
    b.unknownRank = dynamic == 2;
    exe.buffers.push_back(std::move(b));
  }
  return Status::ok();
}

/// The kernels' names and parameter sizes.
Status readKernels(Reader& r, Executable& exe) {
  KILN_ASSIGN(uint64_t kernels, r.count(16));
  for (uint64_t i = 0; i < kernels; ++i) {
    KILN_ASSIGN(std::string k, r.str());
    exe.kernelNames.push_back(k);
    KILN_ASSIGN(uint64_t params, r.count(8));
    std::vector<uint64_t> bytes;
    for (uint64_t p = 0; p < params; ++p) {
      KILN_ASSIGN(uint64_t b, r.pod<uint64_t>());
      bytes.push_back(b);
    }
    exe.kernelParamBytes.push_back(std::move(bytes));
  }
  return Status::ok();
}

/// The host steps' graphs (text IR).
Status readHostGraphs(Reader& r, Executable& exe) {
  KILN_ASSIGN(uint64_t hostGraphs, r.count(32));
  for (uint64_t i = 0; i < hostGraphs; ++i) {
    HostGraph h;
    KILN_ASSIGN(h.name, r.str());
    KILN_ASSIGN(h.text, r.str());
    KILN_ASSIGN(h.numInputs, r.pod<uint32_t>());
    KILN_ASSIGN(h.numOutputs, r.pod<uint32_t>());
    KILN_ASSIGN(uint64_t ops, r.count(8));
    for (uint64_t k = 0; k < ops; ++k) {
      KILN_ASSIGN(std::string op, r.str());
      h.ops.push_back(std::move(op));
    }
    exe.hostGraphs.push_back(std::move(h));
  }
  return Status::ok();
}

/// The steps in launch order.
Status readSteps(Reader& r, Executable& exe) {
  KILN_ASSIGN(uint64_t steps, r.count(13));
  for (uint64_t i = 0; i < steps; ++i) {
    KernelStep s;
    KILN_ASSIGN(uint8_t kind, r.pod<uint8_t>());
    if (kind > uint8_t(StepKind::Copy)) return Error(ErrorCode::ArtifactCorrupt, "artifact: bad step kind");
    s.kind = StepKind(kind);
    KILN_ASSIGN(s.kernel, r.pod<uint32_t>());
    KILN_ASSIGN(uint64_t args, r.count(4));
    for (uint64_t a = 0; a < args; ++a) {
      KILN_ASSIGN(uint32_t id, r.pod<uint32_t>());
      s.args.push_back(id);
    }
    exe.steps.push_back(std::move(s));
  }
  return Status::ok();
}

/// The input and output buffer lists.
Status readInputsOutputs(Reader& r, Executable& exe) {
  for (auto* list : {&exe.inputs, &exe.outputs}) {
    KILN_ASSIGN(uint64_t n, r.count(4));
    for (uint64_t i = 0; i < n; ++i) {
      KILN_ASSIGN(uint32_t id, r.pod<uint32_t>());
      list->push_back(id);
    }
  }
  return Status::ok();
}

/// The CPU object code.
Status readObjectCode(Reader& r, Executable& exe) {
  KILN_ASSIGN(uint64_t objects, r.count(8));
  for (uint64_t i = 0; i < objects; ++i) {
    KILN_ASSIGN(auto object, r.blob());
    exe.objectCode.emplace_back(object.first, object.first + object.second);
  }
  return Status::ok();
}

/// The CUDA kernels: launch shape, cubins and PTX.
Status readCudaKernels(Reader& r, Executable& exe) {
  KILN_ASSIGN(uint64_t cudaKernels, r.count(40));
  for (uint64_t i = 0; i < cudaKernels; ++i) {
    CudaKernelCode c;
    for (uint32_t& v : c.grid) {
      KILN_ASSIGN(v, r.pod<uint32_t>());
    }
    for (uint32_t& v : c.block) {
      KILN_ASSIGN(v, r.pod<uint32_t>());
    }
    KILN_ASSIGN(c.sharedBytes, r.pod<uint32_t>());
    KILN_ASSIGN(uint64_t cubins, r.count(12));
    for (uint64_t k = 0; k < cubins; ++k) {
      KILN_ASSIGN(uint32_t arch, r.pod<uint32_t>());
      KILN_ASSIGN(auto code, r.blob());
      c.cubinArchs.push_back(arch);
      c.cubins.emplace_back(code.first, code.first + code.second);
    }
    KILN_ASSIGN(c.ptxArch, r.pod<uint32_t>());
    KILN_ASSIGN(c.ptx, r.str());
    exe.cudaKernels.push_back(std::move(c));
  }
  return Status::ok();
}

/// The library calls (cuBLASLt, cuDNN).
Status readLibraryCalls(Reader& r, Executable& exe) {
  KILN_ASSIGN(uint64_t libraryCalls, r.count(152));
  for (uint64_t i = 0; i < libraryCalls; ++i) {
    LibraryCall c;
    KILN_ASSIGN(c.name, r.str());
    KILN_ASSIGN(uint8_t routine, r.pod<uint8_t>());
    if (routine > uint8_t(LibraryRoutine::CudnnConv))
      return Error(ErrorCode::ArtifactCorrupt, "artifact: bad library routine");
    c.routine = LibraryRoutine(routine);
    KILN_ASSIGN(c.dtype, readDType(r));
    for (int64_t* v : {&c.batch, &c.m, &c.n, &c.k}) {
      KILN_ASSIGN(*v, r.pod<int64_t>());
    }
    for (int64_t* field : convFields(c.conv)) {
      KILN_ASSIGN(*field, r.pod<int64_t>());
    }
    KILN_ASSIGN(uint8_t flags, r.pod<uint8_t>());
    if (flags > 31) return Error(ErrorCode::ArtifactCorrupt, "artifact: bad library call flags");
    c.transA = flags & 1, c.transB = flags & 2, c.batchB = flags & 4, c.allowTf32 = flags & 8, c.residual = flags & 16;
    KILN_ASSIGN(c.alpha, r.pod<float>());
    KILN_ASSIGN(uint8_t epilogue, r.pod<uint8_t>());
    if (epilogue > uint8_t(LibraryEpilogue::BiasRelu))
      return Error(ErrorCode::ArtifactCorrupt, "artifact: bad library epilogue");
    c.epilogue = LibraryEpilogue(epilogue);
    exe.libraryCalls.push_back(std::move(c));
  }
  return Status::ok();
}

/// The weights, each checked against its type's size.
Status readWeights(Reader& r, Executable& exe) {
  KILN_ASSIGN(uint64_t weights, r.count(17));
  for (uint64_t i = 0; i < weights; ++i) {
    KILN_ASSIGN(DType dtype, readDType(r));
    KILN_ASSIGN(Dims dims, readDims(r));
    KILN_ASSIGN(auto bytes, r.blob());
    uint64_t expected = dtypeSize(dtype);
    for (int64_t d : dims) {
      if (d && expected > (uint64_t(1) << 62) / uint64_t(d))
        return Error(ErrorCode::ArtifactCorrupt, "artifact: weight too large");
      expected *= uint64_t(d);
    }
    if (expected != bytes.second)
      return Error(ErrorCode::ArtifactCorrupt, "artifact: weight size does not match its type");
    exe.weights.emplace_back(dtype, dims, Buffer::copyOf(bytes.first, bytes.second));
  }
  return Status::ok();
}

Expected<std::vector<DimExpr>> readExpressions(Reader& r) {
  KILN_ASSIGN(uint64_t n, r.count(8));
  std::vector<DimExpr> out;
  for (uint64_t i = 0; i < n; ++i) {
    KILN_ASSIGN(std::string text, r.str());
    KILN_ASSIGN(DimExpr e, DimExpr::decode(text));
    out.push_back(std::move(e));
  }
  return out;
}

/// The string table, interned as it is read (a string whose id another
/// string of this process holds is refused), and which inputs and outputs
/// hold strings.
Status readStrings(Reader& r, Executable& exe) {
  KILN_ASSIGN(uint64_t n, r.count(8));
  for (uint64_t i = 0; i < n; ++i) {
    KILN_ASSIGN(std::string str, r.str());
    if (auto id = internString(str); !id) return Error(ErrorCode::ArtifactCorrupt, "artifact: " + id.error().message());
    exe.strings.push_back(std::move(str));
  }
  for (auto [list, of] : {std::pair{&exe.stringInputs, &exe.inputs}, std::pair{&exe.stringOutputs, &exe.outputs}}) {
    KILN_ASSIGN(uint64_t count, r.count(4));
    for (uint64_t i = 0; i < count; ++i) {
      KILN_ASSIGN(uint32_t position, r.pod<uint32_t>());
      if (position >= of->size()) return Error(ErrorCode::ArtifactCorrupt, "artifact: a string tensor's position is out of range");
      list->push_back(position);
    }
  }
  return Status::ok();
}

/// writeDynamicDims' section (after the buffers and steps it annotates).
Status readDynamicDims(Reader& r, Executable& exe) {
  KILN_ASSIGN(uint64_t symbols, r.count(40));
  for (uint64_t i = 0; i < symbols; ++i) {
    DimSymbol d;
    KILN_ASSIGN(d.name, r.str());
    KILN_ASSIGN(d.input, r.pod<uint32_t>());
    KILN_ASSIGN(d.axis, r.pod<uint32_t>());
    for (int64_t* v : {&d.min, &d.opt, &d.max}) {
      KILN_ASSIGN(*v, r.pod<int64_t>());
    }
    exe.symbols.push_back(std::move(d));
  }
  for (BufferSpec& b : exe.buffers) {
    KILN_ASSIGN(b.shape, readExpressions(r));
  }
  for (KernelStep& s : exe.steps) {
    KILN_ASSIGN(s.extents, readExpressions(r));
  }
  KILN_ASSIGN(uint64_t kernels, r.count(8));
  for (uint64_t k = 0; k < kernels; ++k) {
    KILN_ASSIGN(uint64_t n, r.count(8));
    std::vector<int64_t> max;
    for (uint64_t i = 0; i < n; ++i) {
      KILN_ASSIGN(int64_t v, r.pod<int64_t>());
      max.push_back(v);
    }
    exe.kernelExtentMax.push_back(std::move(max));
  }
  return Status::ok();
}

}  // namespace

std::vector<uint8_t> serializeExecutable(const Executable& exe) {
  Writer w = payloadOf(exe);
  std::vector<uint8_t> bytes(kHeaderBytes);
  bytes.reserve(kHeaderBytes + w.size());
  w.forEachRun([&](const uint8_t* p, size_t n) { bytes.insert(bytes.end(), p, p + n); });
  auto header = headerFor(w.size(), hashBytes(bytes.data() + kHeaderBytes, w.size()));
  std::copy(header.begin(), header.end(), bytes.begin());
  return bytes;
}

Expected<Executable> deserializeExecutable(const uint8_t* data, size_t size) {
  if (size < kHeaderBytes || std::memcmp(data, kMagic, 8) != 0)
    return Error(ErrorCode::ArtifactCorrupt, "not a kiln artifact (no KILNART header)");
  uint32_t version;
  uint64_t payloadSize, checksum;
  std::memcpy(&version, data + 8, 4);
  std::memcpy(&payloadSize, data + 16, 8);
  std::memcpy(&checksum, data + 24, 8);
  if (version != kArtifactFormatVersion)
    return Error(ErrorCode::ArtifactVersion, "artifact format version " + std::to_string(version) +
                                                 "; this runtime reads version " +
                                                 std::to_string(kArtifactFormatVersion) + " (recompile the model)");
  if (payloadSize != size - kHeaderBytes)
    return Error(ErrorCode::ArtifactCorrupt, "artifact is " + std::to_string(size) + " bytes but its header says " +
                                                 std::to_string(payloadSize + kHeaderBytes) + " (truncated?)");
  const uint8_t* payload = data + kHeaderBytes;
  if (hashBytes(payload, payloadSize) != checksum)
    return Error(ErrorCode::ArtifactCorrupt, "artifact checksum mismatch (the file is corrupt)");
  Reader r(payload, payloadSize);
  Executable exe;
  for (Status (*section)(Reader&, Executable&) :
       {readTarget, readBuffers, readKernels, readHostGraphs, readSteps, readInputsOutputs, readObjectCode,
        readCudaKernels, readLibraryCalls, readWeights, readDynamicDims, readStrings})
    KILN_TRY(section(r, exe));
  if (!r.done()) return Error(ErrorCode::ArtifactCorrupt, "artifact has trailing bytes");
  KILN_TRY(exe.validate());
  return exe;
}

Status saveArtifact(const Executable& exe, const std::string& path) {
  // The weights go to the file from where they are, hashed a slice at a time
  // just before the slice is written; the header with the checksum goes last.
  Writer w = payloadOf(exe);
  std::ofstream out(path, std::ios::binary);
  if (!out) return Error(ErrorCode::IoError, "cannot write '" + path + "'");
  std::array<uint8_t, kHeaderBytes> header{};
  out.write(reinterpret_cast<const char*>(header.data()), std::streamsize(header.size()));
  BytesHasher checksum(w.size());
  constexpr size_t kSlice = size_t(1) << 20;
  w.forEachRun([&](const uint8_t* p, size_t n) {
    for (size_t at = 0; at < n && out; at += kSlice) {
      const size_t len = std::min(kSlice, n - at);
      checksum.update(p + at, len);
      out.write(reinterpret_cast<const char*>(p + at), std::streamsize(len));
    }
  });
  if (!out) return Error(ErrorCode::IoError, "writing '" + path + "' failed");
  header = headerFor(w.size(), checksum.finish());
  out.seekp(0);
  out.write(reinterpret_cast<const char*>(header.data()), std::streamsize(header.size()));
  out.close();
  if (!out) return Error(ErrorCode::IoError, "writing '" + path + "' failed");
  return Status::ok();
}

Expected<Executable> loadArtifact(const std::string& path) {
  // Mapped read-only, not read into a buffer: the checksum is computed on the
  // page cache's pages and the weights are copied out of them (nothing in the
  // Executable points into the mapping, which closes on return).
  KILN_ASSIGN(std::shared_ptr<MappedFile> file, MappedFile::open(path));
  Expected<Executable> exe = deserializeExecutable(file->data(), file->size());
  if (!exe) {
    Error e = std::move(exe).error();
    return Error(e.code(), path + ": " + e.message());
  }
  return exe;
}

}  // namespace kiln::runtime
