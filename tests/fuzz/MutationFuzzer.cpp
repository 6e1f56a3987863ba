//===- tests/fuzz/MutationFuzzer.cpp - Standalone mutation-based fuzz driver -===//
//
// Drives LLVMFuzzerTestOneInput without libFuzzer (for gcc builds and CI):
// starts from a corpus of real model files, applies random stacked mutations
// (bit flips, interesting bytes, truncation, insertion, deletion, duplication,
// splicing, varint tweaks) and feeds each result to the target, for a time or
// iteration budget. On a crash the offending input is saved before the
// process dies, so it can be replayed.
//
//   kiln-fuzz-mutate [--seconds N] [--iterations N] [--seed N] [--crash-file F] CORPUS...
//
//===----------------------------------------------------------------------===//
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::string gCurrent;
std::string gCrashFile = "kiln-fuzz-crash.onnx";

void onCrash(int sig) {
  if (FILE* f = std::fopen(gCrashFile.c_str(), "wb")) {
    std::fwrite(gCurrent.data(), 1, gCurrent.size(), f);
    std::fclose(f);
  }
  std::fprintf(stderr, "kiln-fuzz-mutate: signal %d; input saved to %s\n", sig, gCrashFile.c_str());
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

std::vector<std::string> loadCorpus(const std::vector<std::string>& paths) {
  std::vector<std::string> corpus;
  auto add = [&](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!s.empty() && s.size() < (8u << 20)) corpus.push_back(std::move(s));
  };
  for (const auto& p : paths) {
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p))
        if (e.is_regular_file() && e.path().extension() == ".onnx") add(e.path());
    } else if (std::filesystem::exists(p)) {
      add(p);
    }
  }
  return corpus;
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  std::string mutate(const std::vector<std::string>& corpus) {
    std::string s = corpus[pick(corpus.size())];
    int rounds = 1 + int(pick(4));
    for (int r = 0; r < rounds; ++r) once(s, corpus);
    return s;
  }

 private:
  size_t pick(size_t n) { return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng_) : 0; }

  void once(std::string& s, const std::vector<std::string>& corpus) {
    static const uint8_t kInteresting[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0x08, 0x10, 0x12, 0x1a, 0x22, 0x3a};
    switch (pick(9)) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= char(1 << pick(8));
        break;
      case 1:  // interesting byte (zero, max, common protobuf tags)
        if (!s.empty()) s[pick(s.size())] = char(kInteresting[pick(sizeof(kInteresting))]);
        break;
      case 2:  // truncate
        if (!s.empty()) s.resize(pick(s.size()));
        break;
      case 3: {  // insert random bytes
        size_t n = 1 + pick(16), at = pick(s.size() + 1);
        std::string ins;
        for (size_t i = 0; i < n; ++i) ins += char(pick(256));
        s.insert(at, ins);
        break;
      }
      case 4:  // delete a range
        if (!s.empty()) {
          size_t at = pick(s.size());
          s.erase(at, 1 + pick(std::min<size_t>(64, s.size() - at)));
        }
        break;
      case 5:  // duplicate a range
        if (!s.empty()) {
          size_t at = pick(s.size()), n = 1 + pick(std::min<size_t>(64, s.size() - at));
          s.insert(pick(s.size() + 1), s.substr(at, n));
        }
        break;
      case 6: {  // splice with another corpus entry
        const std::string& o = corpus[pick(corpus.size())];
        if (!o.empty() && !s.empty()) s = s.substr(0, pick(s.size())) + o.substr(pick(o.size()));
        break;
      }
      case 7:  // make a varint huge (lengths, dims, counts)
        if (!s.empty()) {
          size_t at = pick(s.size());
          s.insert(at, std::string("\xff\xff\xff\xff\x0f", 5));
        }
        break;
      default:  // small arithmetic on a byte
        if (!s.empty()) {
          size_t at = pick(s.size());
          s[at] = char(uint8_t(s[at]) + uint8_t(pick(9)) - 4);
        }
        break;
    }
  }

  std::mt19937_64 rng_;
};

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10;
  long long iterations = -1;
  uint64_t seed = 1;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "kiln-fuzz-mutate: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seconds") seconds = std::stod(next());
    else if (a == "--iterations") iterations = std::stoll(next());
    else if (a == "--seed") seed = std::stoull(next());
    else if (a == "--crash-file") gCrashFile = next();
    else if (a == "-h" || a == "--help") {
      std::cout << "usage: kiln-fuzz-mutate [--seconds N] [--iterations N] [--seed N] [--crash-file F] CORPUS...\n"
                   "Mutates the .onnx files of CORPUS (files or directories) and imports each mutant.\n";
      return 0;
    } else paths.push_back(a);
  }
  std::vector<std::string> corpus = loadCorpus(paths);
  if (corpus.empty()) {
    std::cerr << "kiln-fuzz-mutate: the corpus is empty\n";
    return 2;
  }
  for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL}) std::signal(sig, onCrash);
  Mutator mutator(seed);
  auto start = std::chrono::steady_clock::now();
  long long n = 0;
  // The unmutated corpus first: every seed must import or fail cleanly.
  for (const auto& s : corpus) {
    gCurrent = s;
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    ++n;
  }
  while (true) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if ((iterations >= 0 && n >= iterations) || (iterations < 0 && elapsed >= seconds)) break;
    gCurrent = mutator.mutate(corpus);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(gCurrent.data()), gCurrent.size());
    ++n;
  }
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "kiln-fuzz-mutate: " << n << " inputs from " << corpus.size() << " seeds in " << elapsed
            << " s, no crash\n";
  return 0;
}
