//===- lib/runtime/core/ObjectLoader.cpp - In-process ELF object linking ---===//
//
// Layout: the allocatable sections (except .eh_frame, which nothing unwinds
// through), then one 16-byte jump stub per external symbol and one GOT slot
// per symbol, all in one mapping that becomes read+execute once relocated.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/ObjectLoader.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/mman.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kiln/support/ThreadPool.h"

namespace kiln::runtime {
namespace {

Error corrupt(const std::string& what) { return Error(ErrorCode::ArtifactCorrupt, "kernel object code: " + what); }

/// Routines generated code may call, resolved without relying on dynamic symbol export.
void* builtinSymbol(const std::string& name) {
  static const std::map<std::string, void*> table = {
      {"kiln_rt_parallel_for", reinterpret_cast<void*>(&kiln_rt_parallel_for)},
      {"memset", reinterpret_cast<void*>(static_cast<void* (*)(void*, int, size_t)>(&std::memset))},
      {"memcpy", reinterpret_cast<void*>(static_cast<void* (*)(void*, const void*, size_t)>(&std::memcpy))},
      {"memmove", reinterpret_cast<void*>(static_cast<void* (*)(void*, const void*, size_t)>(&std::memmove))},
      {"expf", reinterpret_cast<void*>(static_cast<float (*)(float)>(&::expf))},
      {"exp", reinterpret_cast<void*>(static_cast<double (*)(double)>(&::exp))},
      {"logf", reinterpret_cast<void*>(static_cast<float (*)(float)>(&::logf))},
      {"log", reinterpret_cast<void*>(static_cast<double (*)(double)>(&::log))},
      {"powf", reinterpret_cast<void*>(static_cast<float (*)(float, float)>(&::powf))},
      {"pow", reinterpret_cast<void*>(static_cast<double (*)(double, double)>(&::pow))},
      {"sinf", reinterpret_cast<void*>(static_cast<float (*)(float)>(&::sinf))},
      {"cosf", reinterpret_cast<void*>(static_cast<float (*)(float)>(&::cosf))},
      {"sin", reinterpret_cast<void*>(static_cast<double (*)(double)>(&::sin))},
      {"cos", reinterpret_cast<void*>(static_cast<double (*)(double)>(&::cos))},
      {"erf", reinterpret_cast<void*>(static_cast<double (*)(double)>(&::erf))},
      {"tanh", reinterpret_cast<void*>(static_cast<double (*)(double)>(&::tanh))},
  };
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

struct Image {
  const uint8_t* data;
  size_t size;
  bool contains(uint64_t offset, uint64_t bytes) const { return offset <= size && bytes <= size - offset; }
};

}  // namespace

bool hostHasFeature(const std::string& f) {
  __builtin_cpu_init();
  if (f == "avx") return __builtin_cpu_supports("avx");
  if (f == "avx2") return __builtin_cpu_supports("avx2");
  if (f == "fma") return __builtin_cpu_supports("fma");
  if (f == "avx512f") return __builtin_cpu_supports("avx512f");
  if (f == "avx512bw") return __builtin_cpu_supports("avx512bw");
  if (f == "avx512dq") return __builtin_cpu_supports("avx512dq");
  if (f == "avx512vl") return __builtin_cpu_supports("avx512vl");
  if (f == "f16c") return __builtin_cpu_supports("f16c");
  return false;
}

namespace {

/// A relocatable x86-64 ELF object's section table and symbols, bounds-checked.
struct ElfView {
  Image img;
  Elf64_Ehdr eh;
  std::vector<Elf64_Shdr> sh;
  std::vector<Elf64_Sym> syms;
  const Elf64_Shdr* strtab = nullptr;

  std::string sectionName(const Elf64_Shdr& s) const {
    const Elf64_Shdr& names = sh[eh.e_shstrndx];
    if (s.sh_name >= names.sh_size) return "";
    const char* p = reinterpret_cast<const char*>(img.data + names.sh_offset + s.sh_name);
    return std::string(p, strnlen(p, names.sh_size - s.sh_name));
  }
  std::string symbolName(const Elf64_Sym& sym) const {
    if (sym.st_name >= strtab->sh_size) return "";
    const char* p = reinterpret_cast<const char*>(img.data + strtab->sh_offset + sym.st_name);
    return std::string(p, strnlen(p, strtab->sh_size - sym.st_name));
  }
};

/// Where everything goes in the mapping: each loaded section's offset (-1:
/// not loaded), then the external symbols' stubs, then the GOT.
struct Layout {
  std::vector<int64_t> placed;
  std::vector<int64_t> externalSlot;  ///< per symbol: its stub's index, or -1
  std::vector<void*> externalAddress;
  uint64_t stubsAt = 0, gotAt = 0, total = 0;
};

Status readHeaders(ElfView& elf) {
  const uint8_t* data = elf.img.data;
  Elf64_Ehdr& eh = elf.eh;
  if (elf.img.size < sizeof(Elf64_Ehdr)) return corrupt("shorter than an ELF header");
  std::memcpy(&eh, data, sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return corrupt("not an ELF file");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64)
    return Error(ErrorCode::ArtifactVersion, "kernel object code is not x86-64 (this runtime runs x86-64 code only)");
  if (eh.e_type != ET_REL) return corrupt("not a relocatable object");
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || !elf.img.contains(eh.e_shoff, uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr)))
    return corrupt("section table out of bounds");
  elf.sh.resize(eh.e_shnum);
  std::memcpy(elf.sh.data(), data + eh.e_shoff, elf.sh.size() * sizeof(Elf64_Shdr));
  if (eh.e_shstrndx >= elf.sh.size() ||
      !elf.img.contains(elf.sh[eh.e_shstrndx].sh_offset, elf.sh[eh.e_shstrndx].sh_size))
    return corrupt("section names out of bounds");
  return Status::ok();
}

/// Places the allocatable sections one after another, each at its alignment.
Status placeSections(const ElfView& elf, Layout& layout, uint64_t& cursor) {
  layout.placed.assign(elf.sh.size(), -1);
  for (size_t i = 0; i < elf.sh.size(); ++i) {
    const Elf64_Shdr& s = elf.sh[i];
    if (!(s.sh_flags & SHF_ALLOC) || elf.sectionName(s) == ".eh_frame") continue;
    if (s.sh_type != SHT_PROGBITS && s.sh_type != SHT_NOBITS) continue;
    uint64_t align = std::max<uint64_t>(s.sh_addralign, 1);
    if (align > 4096 || (align & (align - 1))) return corrupt("section alignment " + std::to_string(align));
    if (s.sh_size > (uint64_t(1) << 32)) return corrupt("section too large");
    if (s.sh_type == SHT_PROGBITS && !elf.img.contains(s.sh_offset, s.sh_size))
      return corrupt("section data out of bounds");
    cursor = (cursor + align - 1) / align * align;
    layout.placed[i] = int64_t(cursor);
    cursor += s.sh_size;
  }
  return Status::ok();
}

Status readSymbols(ElfView& elf) {
  const std::vector<Elf64_Shdr>& sh = elf.sh;
  size_t symtab = sh.size();
  for (size_t i = 0; i < sh.size(); ++i)
    if (sh[i].sh_type == SHT_SYMTAB) symtab = i;
  if (symtab == sh.size()) return corrupt("no symbol table");
  const Elf64_Shdr& st = sh[symtab];
  if (st.sh_entsize != sizeof(Elf64_Sym) || !elf.img.contains(st.sh_offset, st.sh_size) || st.sh_link >= sh.size() ||
      !elf.img.contains(sh[st.sh_link].sh_offset, sh[st.sh_link].sh_size))
    return corrupt("symbol table out of bounds");
  elf.syms.resize(st.sh_size / sizeof(Elf64_Sym));
  std::memcpy(elf.syms.data(), elf.img.data + st.sh_offset, elf.syms.size() * sizeof(Elf64_Sym));
  elf.strtab = &sh[st.sh_link];
  return Status::ok();
}

/// Resolves the external symbols (kiln's builtins, then the process's) and
/// lays out their stubs and the GOT after the sections.
Status resolveExternals(const ElfView& elf, Layout& layout, uint64_t cursor) {
  layout.externalSlot.assign(elf.syms.size(), -1);
  for (size_t i = 1; i < elf.syms.size(); ++i) {
    if (elf.syms[i].st_shndx != SHN_UNDEF) continue;
    std::string name = elf.symbolName(elf.syms[i]);
    void* addr = builtinSymbol(name);
    if (!addr) addr = dlsym(RTLD_DEFAULT, name.c_str());
    if (!addr) return corrupt("undefined symbol '" + name + "'");
    layout.externalSlot[i] = int64_t(layout.externalAddress.size());
    layout.externalAddress.push_back(addr);
  }
  cursor = (cursor + 15) / 16 * 16;
  // One GOT slot per symbol (a GOT reference may name a defined symbol too).
  layout.stubsAt = cursor;
  layout.gotAt = layout.stubsAt + 16 * layout.externalAddress.size();
  layout.total = std::max<uint64_t>(layout.gotAt + 8 * elf.syms.size(), 1);
  return Status::ok();
}

/// The mapped object being linked: section data, stubs, GOT and relocations written at `base`.
class Linker {
 public:
  Linker(const ElfView& elf, const Layout& layout, uint8_t* base) : elf_(elf), layout_(layout), base_(base) {}

  void copySectionsAndStubs() {
    for (size_t i = 0; i < elf_.sh.size(); ++i)
      if (layout_.placed[i] >= 0 && elf_.sh[i].sh_type == SHT_PROGBITS)
        std::memcpy(base_ + layout_.placed[i], elf_.img.data + elf_.sh[i].sh_offset, elf_.sh[i].sh_size);
    for (size_t e = 0; e < layout_.externalAddress.size(); ++e) {
      uint8_t* stub = base_ + layout_.stubsAt + 16 * e;
      const uint8_t jmp[6] = {0xFF, 0x25, 0, 0, 0, 0};  // jmp *0(%rip)
      std::memcpy(stub, jmp, 6);
      uint64_t target = reinterpret_cast<uint64_t>(layout_.externalAddress[e]);
      std::memcpy(stub + 6, &target, 8);
    }
  }

  Expected<uint64_t> symbolAddress(size_t i, bool viaStub) const {
    const Elf64_Sym& sym = elf_.syms[i];
    if (sym.st_shndx == SHN_UNDEF) {
      size_t e = size_t(layout_.externalSlot[i]);
      return viaStub ? reinterpret_cast<uint64_t>(base_ + layout_.stubsAt + 16 * e)
                     : reinterpret_cast<uint64_t>(layout_.externalAddress[e]);
    }
    if (sym.st_shndx == SHN_ABS) return uint64_t(sym.st_value);
    if (sym.st_shndx >= elf_.sh.size() || layout_.placed[sym.st_shndx] < 0)
      return corrupt("symbol '" + elf_.symbolName(sym) + "' lies in a section that is not loaded");
    return reinterpret_cast<uint64_t>(base_ + layout_.placed[sym.st_shndx]) + sym.st_value;
  }

  Status fillGot() {
    for (size_t i = 1; i < elf_.syms.size(); ++i) {
      const Elf64_Sym& sym = elf_.syms[i];
      bool resolvable = sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS ||
                        (sym.st_shndx < elf_.sh.size() && layout_.placed[sym.st_shndx] >= 0);
      if (!resolvable) continue;
      KILN_ASSIGN(uint64_t addr, symbolAddress(i, false));
      std::memcpy(base_ + layout_.gotAt + 8 * i, &addr, 8);
    }
    return Status::ok();
  }

  Status relocate() {
    for (size_t r = 0; r < elf_.sh.size(); ++r) {
      const Elf64_Shdr& rs = elf_.sh[r];
      if (rs.sh_type != SHT_RELA) continue;
      if (rs.sh_info >= elf_.sh.size()) return corrupt("relocation section targets no section");
      if (layout_.placed[rs.sh_info] < 0) continue;  // relocations of skipped sections (.eh_frame)
      if (rs.sh_entsize != sizeof(Elf64_Rela) || !elf_.img.contains(rs.sh_offset, rs.sh_size))
        return corrupt("relocations out of bounds");
      for (uint64_t off = 0; off + sizeof(Elf64_Rela) <= rs.sh_size; off += sizeof(Elf64_Rela)) {
        Elf64_Rela rel;
        std::memcpy(&rel, elf_.img.data + rs.sh_offset + off, sizeof rel);
        KILN_TRY(apply(rel, rs.sh_info));
      }
    }
    return Status::ok();
  }

  Status exportSymbols(std::map<std::string, void*>& symbols) const {
    for (size_t i = 1; i < elf_.syms.size(); ++i) {
      const Elf64_Sym& sym = elf_.syms[i];
      if (ELF64_ST_BIND(sym.st_info) != STB_GLOBAL || sym.st_shndx == SHN_UNDEF) continue;
      KILN_ASSIGN(uint64_t addr, symbolAddress(i, false));
      symbols[elf_.symbolName(sym)] = reinterpret_cast<void*>(addr);
    }
    return Status::ok();
  }

 private:
  /// One relocation of section `section`.
  Status apply(const Elf64_Rela& rel, size_t section) {
    const Elf64_Shdr& target = elf_.sh[section];
    uint32_t type = ELF64_R_TYPE(rel.r_info);
    uint64_t symIndex = ELF64_R_SYM(rel.r_info);
    if (symIndex >= elf_.syms.size()) return corrupt("relocation names symbol " + std::to_string(symIndex));
    uint64_t width = type == R_X86_64_64 ? 8 : 4;
    if (rel.r_offset > target.sh_size || width > target.sh_size - rel.r_offset)
      return corrupt("relocation out of its section");
    uint8_t* where = base_ + layout_.placed[section] + rel.r_offset;
    uint64_t P = reinterpret_cast<uint64_t>(where);
    int64_t A = rel.r_addend;
    auto put32 = [&](int64_t v) -> Status {
      if (v < INT32_MIN || v > INT32_MAX) return corrupt("relocation overflows 32 bits");
      int32_t x = int32_t(v);
      std::memcpy(where, &x, 4);
      return Status::ok();
    };
    switch (type) {
      case R_X86_64_NONE: return Status::ok();
      case R_X86_64_64: {
        KILN_ASSIGN(uint64_t S, symbolAddress(symIndex, false));
        uint64_t v = S + uint64_t(A);
        std::memcpy(where, &v, 8);
        return Status::ok();
      }
      case R_X86_64_PC32:
      case R_X86_64_PLT32: {
        KILN_ASSIGN(uint64_t S, symbolAddress(symIndex, true));
        return put32(int64_t(S + uint64_t(A) - P));
      }
      case R_X86_64_GOTPCREL:
      case R_X86_64_GOTPCRELX:
      case R_X86_64_REX_GOTPCRELX: {
        uint64_t G = reinterpret_cast<uint64_t>(base_ + layout_.gotAt + 8 * symIndex);
        return put32(int64_t(G + uint64_t(A) - P));
      }
      default: return corrupt("unsupported relocation type " + std::to_string(type));
    }
  }

  const ElfView& elf_;
  const Layout& layout_;
  uint8_t* base_;
};

}  // namespace

Expected<std::unique_ptr<LoadedObject>> LoadedObject::load(const uint8_t* data, size_t size) {
  ElfView elf{Image{data, size}, {}, {}, {}, nullptr};
  KILN_TRY(readHeaders(elf));
  Layout layout;
  uint64_t cursor = 0;
  KILN_TRY(placeSections(elf, layout, cursor));
  KILN_TRY(readSymbols(elf));
  KILN_TRY(resolveExternals(elf, layout, cursor));

  std::unique_ptr<LoadedObject> obj(new LoadedObject);
  void* mem = mmap(nullptr, layout.total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return Error(ErrorCode::ExecFailure, "cannot map memory for kernel code");
  obj->base_ = mem;
  obj->size_ = layout.total;
  Linker linker(elf, layout, static_cast<uint8_t*>(mem));
  linker.copySectionsAndStubs();
  KILN_TRY(linker.fillGot());
  KILN_TRY(linker.relocate());
  KILN_TRY(linker.exportSymbols(obj->symbols_));
  if (mprotect(mem, layout.total, PROT_READ | PROT_EXEC) != 0)
    return Error(ErrorCode::ExecFailure, "cannot make kernel code executable");
  return obj;
}

LoadedObject::~LoadedObject() {
  if (base_) munmap(base_, size_);
}

void* LoadedObject::symbol(const std::string& name) const {
  auto it = symbols_.find(name);
  return it == symbols_.end() ? nullptr : it->second;
}

}  // namespace kiln::runtime
