// CodeObject::read: an AMDHSA code object's metadata note, symbols and
// kernel descriptors, read through the checked ELF view (elf_view.h), and
// their assembly into one CodeObject: the metadata, the descriptors and the
// kernarg layouts, cross-checked. docs/reading-rules.md (Code objects) lists
// the bounds a crafted object meets.
#include "coload/code_object.h"

#include <algorithm>
#include <string>
#include <vector>

#include "code_object/kernarg_layout.h"
#include "code_object/kernel_descriptor.h"
#include "code_object/metadata.h"
#include "common/aligned_bytes.h"
#include "common/bytes.h"
#include "common/try.h"
#include "elf/elf_view.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/BinaryFormat/ELF.h"
#include "target/elf_target.h"
#include "target/isa_name.h"

namespace coload {
namespace {

namespace E = llvm::ELF;
using detail::Bytes;
using detail::check_range;
using detail::check_range_lazily;
using detail::elf_error;
using detail::hex;
using detail::kIsaNamePrefix;
using detail::quoted;
using Section = detail::ElfSection;
using Segment = detail::ElfSegment;
using Layout = detail::ElfLayout;
using Symbol = detail::ElfSymbol;

using detail::kCodeObjectContainer;

// ---------------------------------------------------------------------------
// Notes.

/// One NT_AMDGPU_METADATA record: where it starts and its descriptor.
struct MetadataNote {
  std::uint64_t offset = 0;
  Bytes desc;
};

/// The metadata notes of the note regions: the first two kept (one is
/// right, two are an error), the rest only counted.
struct MetadataNotes {
  std::vector<MetadataNote> first;
  std::uint64_t count = 0;

  void add(MetadataNote note) {
    if (first.size() < 2) first.push_back(note);
    ++count;
  }
};

/// Walks the note records in elf[offset, offset + size), collecting the
/// AMDGPU metadata ones.
Expected<void> walk_notes(Bytes elf, std::uint64_t offset, std::uint64_t size, std::uint64_t align,
                          const std::string& where, MetadataNotes& found) {
  if (auto fits = check_range(where, offset, size, elf.size(), kCodeObjectContainer); !fits) {
    return std::move(fits).error().at_field(where, std::nullopt, offset, elf.size());
  }
  detail::NoteWalk walk(elf.subspan(offset, size), offset, align);
  while (auto note = walk.next()) {
    if (note->is_amdgpu_metadata()) found.add({note->offset, note->desc});
  }
  if (walk.fault()) return walk.fault_error(where);
  return {};
}

/// One PT_NOTE segment or SHT_NOTE section to walk.
struct NoteRegion {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint64_t align = 0;
  std::uint64_t index = 0;  ///< segment or section index, for messages
};

/// The descriptor of the one NT_AMDGPU_METADATA note: from the PT_NOTE
/// segments, or from the SHT_NOTE sections when there is no PT_NOTE.
/// Regions that repeat one another are walked once; regions that overlap
/// otherwise are refused: walking each would cost regions x records.
Expected<MetadataNote> find_metadata_note(Bytes elf, const Layout& layout) {
  std::vector<NoteRegion> regions;
  for (const Segment& segment : layout.segments) {
    if (segment.type == E::PT_NOTE) regions.push_back({segment.offset, segment.filesz, segment.align, segment.index});
  }
  const bool any_segment = !regions.empty();
  if (!any_segment) {
    for (std::size_t i = 0; i < layout.sections.size(); ++i) {
      const Section& section = layout.sections[i];
      if (section.type == E::SHT_NOTE) regions.push_back({section.offset, section.size, section.addralign, i});
    }
  }
  auto name = [&](const NoteRegion& region) {
    return any_segment ? "PT_NOTE segment " + std::to_string(region.index)
                       : "SHT_NOTE " + layout.sections[region.index].label();
  };
  std::sort(regions.begin(), regions.end(), [](const NoteRegion& a, const NoteRegion& b) {
    return std::tie(a.offset, a.size, a.index) < std::tie(b.offset, b.size, b.index);
  });
  std::vector<NoteRegion> distinct;
  for (const NoteRegion& region : regions) {
    if (region.size == 0) continue;
    if (!distinct.empty()) {
      const NoteRegion& previous = distinct.back();
      if (region.offset == previous.offset && region.size == previous.size) continue;
      if (region.offset - previous.offset < previous.size) {
        return elf_error(ErrorKind::Malformed, name(region) + " [" + hex(region.offset) + ", +" + hex(region.size) +
                                                   ") overlaps " + name(previous) + " [" + hex(previous.offset) +
                                                   ", +" + hex(previous.size) + ")")
            .at_field(name(region), std::nullopt, region.offset, previous.offset + previous.size);
      }
    }
    distinct.push_back(region);
  }
  MetadataNotes found;
  for (const NoteRegion& region : distinct) {
    std::string where = name(region);
    auto align = detail::note_alignment(region.align);
    if (!align) {
      return Error(ErrorKind::Malformed, where + ": alignment " + std::to_string(region.align) + " is not 4 or 8")
          .at_field(where, std::nullopt, region.align);
    }
    COLOAD_RETURN_IF_ERROR(walk_notes(elf, region.offset, region.size, *align, where, found));
  }
  const std::vector<MetadataNote>& first = found.first;
  if (first.empty()) {
    return Error(ErrorKind::NotFound, std::string("code object has no NT_AMDGPU_METADATA note (name \"AMDGPU\", "
                                                  "type 32) in its ") +
                                          (any_segment ? "PT_NOTE segments" : "SHT_NOTE sections"))
        .at_field("NT_AMDGPU_METADATA", std::nullopt);
  }
  if (found.count > 1) {
    return Error(ErrorKind::Malformed,
                 "code object has two metadata notes (NT_AMDGPU_METADATA), at file offsets " + hex(first[0].offset) +
                     " and " + hex(first[1].offset) +
                     (found.count > 2 ? " and " + std::to_string(found.count - 2) + " more" : std::string()))
        .at_field("NT_AMDGPU_METADATA", first[1].offset, found.count);
  }
  return first.front();
}

// ---------------------------------------------------------------------------
// Symbols.

/// Defined symbols by name. A hash table with open addressing: one
/// allocation, where a tree of thousands of mangled names sharing long
/// prefixes spent its time comparing them.
using SymbolIndex = llvm::DenseMap<llvm::StringRef, const Symbol*>;

/// The first defined symbol of each name (.symtab before .dynsym).
SymbolIndex index_symbols(const std::vector<Symbol>& symbols) {
  SymbolIndex index(symbols.size());
  for (const Symbol& symbol : symbols) {
    if (symbol.shndx == E::SHN_UNDEF || symbol.name.empty()) continue;
    index.try_emplace(symbol.name, &symbol);
  }
  return index;
}

std::string symbol_type_name(std::uint8_t type) {
  switch (type) {
    case E::STT_NOTYPE: return "STT_NOTYPE (0)";
    case E::STT_OBJECT: return "STT_OBJECT (1)";
    case E::STT_FUNC: return "STT_FUNC (2)";
    default: return "type " + std::to_string(type);
  }
}

// ---------------------------------------------------------------------------
// Kernels.

/// Attaches descriptors to the metadata kernels and cross-checks them.
class KernelBinder {
 public:
  KernelBinder(Bytes elf, const Layout& layout, const std::vector<Symbol>& symbols, const CodeObjectTarget& target,
               std::vector<Problem>& problems)
      : elf_(elf), layout_(layout), index_(index_symbols(symbols)), target_(target), problems_(problems) {
    // The executable PT_LOAD ranges, sorted and merged once: a search per
    // kernel, not a pass over every segment (PN_XNUM allows millions).
    for (const Segment& segment : layout.segments) {
      if (segment.type != E::PT_LOAD || !(segment.flags & E::PF_X) || segment.memsz == 0) continue;
      std::uint64_t end = segment.vaddr + segment.memsz;
      executable_.push_back({segment.vaddr, end < segment.vaddr ? ~std::uint64_t{0} : end});
    }
    std::sort(executable_.begin(), executable_.end());
    std::vector<std::pair<std::uint64_t, std::uint64_t>> merged;
    for (const auto& range : executable_) {
      if (!merged.empty() && range.first <= merged.back().second) {
        merged.back().second = std::max(merged.back().second, range.second);
      } else {
        merged.push_back(range);
      }
    }
    executable_ = std::move(merged);
  }

  void bind(Kernel& kernel) {
    auto function = index_.find(kernel.name);
    kernel.function_symbol = function != index_.end() && function->second->type == E::STT_FUNC;
    auto located = locate_descriptor(kernel);
    if (!located) return;
    KernelDescriptor descriptor = detail::decode_kernel_descriptor(located->bytes, located->address);
    detail::cross_check_descriptor(kernel, descriptor, located->bytes, target_, problems_);
    check_entry(kernel, descriptor);
    kernel.descriptor = descriptor;
  }

 private:
  void add(const Kernel& kernel, ErrorKind kind, std::string_view field, const std::string& what) {
    problems_.push_back({kind, kernel.name, std::string(field),
                         "kernel " + quoted(detail::printable(kernel.name, detail::kMessageNameLimit)) + ": " + what});
  }

  struct Located {
    Bytes bytes;
    std::uint64_t address = 0;
  };

  /// The 64 bytes `.symbol` names, after the symbol rows of table 2.1.
  std::optional<Located> locate_descriptor(const Kernel& kernel) {
    // Messages are built only for a problem: most kernels have none.
    auto symbol_text = [&] {
      return "descriptor symbol " + quoted(detail::printable(kernel.symbol, detail::kMessageNameLimit)) + " (.symbol)";
    };
    auto found = index_.find(kernel.symbol);
    if (found == index_.end()) {
      add(kernel, ErrorKind::NotFound, ".symbol", symbol_text() + " is not defined in the symbol table");
      return std::nullopt;
    }
    const Symbol& symbol = *found->second;
    if (symbol.type != E::STT_OBJECT) {
      add(kernel, ErrorKind::Malformed, ".symbol",
          symbol_text() + " is " + symbol_type_name(symbol.type) + ", not STT_OBJECT (1)");
      return std::nullopt;
    }
    if (symbol.size != detail::kKernelDescriptorSize) {
      add(kernel, ErrorKind::Malformed, ".symbol",
          symbol_text() + ": st_size " + std::to_string(symbol.size) + " is not 64");
      return std::nullopt;
    }
    if (symbol.value % detail::kKernelDescriptorAlign != 0) {
      add(kernel, ErrorKind::Malformed, ".symbol",
          symbol_text() + ": st_value " + hex(symbol.value) + " is not 64-byte aligned");
      return std::nullopt;
    }
    if (!detail::is_real_section(symbol.shndx, layout_)) {
      add(kernel, ErrorKind::Malformed, ".symbol",
          symbol_text() + ": st_shndx " + hex(symbol.shndx) + " is not a section");
      return std::nullopt;
    }
    const Section& section = layout_.sections[symbol.shndx];
    if (section.type == E::SHT_NOBITS) {
      add(kernel, ErrorKind::Malformed, ".symbol",
          symbol_text() + ": " + section.label() + " is SHT_NOBITS and holds no bytes");
      return std::nullopt;
    }
    // [st_value, +64) inside the section's addresses, then its file bytes.
    std::uint64_t delta = symbol.value - section.addr;
    if (symbol.value < section.addr || delta > section.size || section.size - delta < detail::kKernelDescriptorSize) {
      add(kernel, ErrorKind::OutOfBounds, ".symbol",
          symbol_text() + ": [" + hex(symbol.value) + ", +64) is outside " + section.label() + " [" +
              hex(section.addr) + ", +" + hex(section.size) + ")");
      return std::nullopt;
    }
    std::uint64_t offset = section.offset + delta;  // section.offset + size fits: read_layout checked it
    if (auto fits =
            check_range_lazily(symbol_text, offset, detail::kKernelDescriptorSize, elf_.size(), kCodeObjectContainer);
        !fits) {
      add(kernel, fits.error().kind(), ".symbol", fits.error().message());
      return std::nullopt;
    }
    return Located{elf_.subspan(offset, detail::kKernelDescriptorSize), symbol.value};
  }

  /// KD address + kernel_code_entry_byte_offset: 256-aligned, inside an
  /// executable PT_LOAD, and the kernel's STT_FUNC when there is one.
  void check_entry(const Kernel& kernel, const KernelDescriptor& kd) {
    std::uint64_t entry = kd.address + static_cast<std::uint64_t>(kd.kernel_code_entry_byte_offset);
    bool wrapped = kd.kernel_code_entry_byte_offset >= 0 ? entry < kd.address : entry > kd.address;
    auto sum = [&] {
      return "descriptor address " + hex(kd.address) + " + kernel_code_entry_byte_offset " +
             std::to_string(kd.kernel_code_entry_byte_offset);
    };
    if (wrapped) {
      add(kernel, ErrorKind::Overflow, "kernel_code_entry_byte_offset", sum() + " wraps around 64 bits");
      return;
    }
    if (entry % detail::kKernelEntryAlign != 0) {
      add(kernel, ErrorKind::Malformed, "kernel_code_entry_byte_offset",
          sum() + " = entry " + hex(entry) + ", which is not 256-byte aligned");
    }
    auto after = std::upper_bound(executable_.begin(), executable_.end(), entry,
                                  [](std::uint64_t value, const auto& range) { return value < range.first; });
    bool executable = after != executable_.begin() && entry < std::prev(after)->second;
    if (!executable) {
      add(kernel, ErrorKind::OutOfBounds, "kernel_code_entry_byte_offset",
          sum() + " = entry " + hex(entry) + ", which is in no executable PT_LOAD segment");
    }
    const Symbol* function = entry_symbol(kernel);
    if (function && function->value != entry) {
      add(kernel, ErrorKind::Malformed, "kernel_code_entry_byte_offset",
          sum() + " = entry " + hex(entry) + ", but function symbol " + quoted(function->name) + " is at " +
              hex(function->value));
    }
  }

  /// The STT_FUNC `.name`, or `.symbol` without its ".kd"; null when neither exists.
  const Symbol* entry_symbol(const Kernel& kernel) const {
    std::string_view symbol = kernel.symbol;
    for (std::string_view name : {std::string_view(kernel.name),
                                  symbol.ends_with(".kd") ? symbol.substr(0, symbol.size() - 3) : std::string_view()}) {
      if (name.empty()) continue;
      auto found = index_.find(name);
      if (found != index_.end() && found->second->type == E::STT_FUNC) return found->second;
    }
    return nullptr;
  }

  Bytes elf_;
  const Layout& layout_;
  SymbolIndex index_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> executable_;  ///< [vaddr, end), disjoint, sorted
  const CodeObjectTarget& target_;
  std::vector<Problem>& problems_;
};

/// `amdhsa.target` against e_flags, and `amdhsa.version` against EI_ABIVERSION.
void check_object_wide(const Metadata& metadata, const CodeObjectTarget& target, std::vector<Problem>& problems) {
  auto flags_text = [&] {
    return "the e_flags target " + quoted(target.target.str()) + " (e_flags " + hex(target.e_flags) + ")";
  };
  if (metadata.target.empty()) {
    if (target.code_object_version >= 4) {
      problems.push_back({ErrorKind::NotFound, "", "amdhsa.target",
                          "amdhsa.target is missing; code object v" + std::to_string(target.code_object_version) +
                              " requires it (" + flags_text() + ")"});
    }
  } else {
    std::string_view text = metadata.target;
    bool agrees = false;
    if (text.starts_with(kIsaNamePrefix)) {
      auto parsed = TargetId::parse(text.substr(kIsaNamePrefix.size()));
      agrees = parsed && *parsed == target.target;
    }
    if (!agrees) {
      problems.push_back({ErrorKind::Malformed, "", "amdhsa.target",
                          "amdhsa.target " + quoted(metadata.target) + " does not describe " + flags_text() +
                              ", expected " + quoted(std::string(kIsaNamePrefix) + target.target.str())});
    }
  }
  // V3 = 1.0, V4 = 1.1, V5 and V6 = 1.2 (AMDGPUMetadata.h); later minors are tolerated.
  std::uint32_t minor = target.code_object_version == 3 ? 0 : target.code_object_version == 4 ? 1 : 2;
  if (metadata.version_major != 1 || metadata.version_minor < minor) {
    problems.push_back({ErrorKind::Malformed, "", "amdhsa.version",
                        "amdhsa.version " + std::to_string(metadata.version_major) + "." +
                            std::to_string(metadata.version_minor) + " is older than code object v" +
                            std::to_string(target.code_object_version) + " (EI_ABIVERSION) needs (1." +
                            std::to_string(minor) + ")"});
  }
}

/// What one code object records of its problems and orphan descriptors:
/// each problem copies its kernel's name, and a crafted object (a few KB as
/// a CCOB) can raise millions of them. Past the limits they are counted, and
/// one last problem says how many were left out.
class ProblemBudget {
 public:
  static constexpr std::size_t kMaxProblems = 4096;
  static constexpr std::uint64_t kMaxBytes = std::uint64_t{16} << 20;

  /// Drops what `problems` holds past the limits (the new ones since the last call).
  void settle(std::vector<Problem>& problems) {
    for (; measured_ < problems.size(); ++measured_) {
      const Problem& problem = problems[measured_];
      std::uint64_t size = sizeof(Problem) + problem.kernel.size() + problem.field.size() + problem.message.size();
      if (measured_ >= kMaxProblems || bytes_ + size > kMaxBytes) break;
      bytes_ += size;
    }
    for (std::size_t i = measured_; i < problems.size(); ++i) count_dropped(problems[i]);
    problems.resize(measured_);
  }

  /// Adds `problem` unless the limits are reached.
  void offer(std::vector<Problem>& problems, Problem problem) {
    problems.push_back(std::move(problem));
    settle(problems);
  }

  /// Whether another orphan name of `size` bytes may be kept.
  bool keep_orphan(std::size_t orphans, std::size_t size) {
    if (orphans >= kMaxProblems || orphan_bytes_ + size > kMaxBytes) return false;
    orphan_bytes_ += size;
    return true;
  }

  /// The last problem, when some were left out: of the first dropped
  /// kernel's, so a reader refusing kernel problems still sees one.
  void finish(std::vector<Problem>& problems) {
    if (dropped_ == 0) return;
    problems.push_back({first_dropped_kind_, std::move(first_dropped_kernel_), "problems",
                        std::to_string(dropped_) + " more problems are not listed (at most " +
                            std::to_string(kMaxProblems) + " problems or " + std::to_string(kMaxBytes >> 20) +
                            " MiB of them are kept)"});
  }

 private:
  void count_dropped(Problem& problem) {
    if (dropped_++ == 0 || (first_dropped_kernel_.empty() && !problem.kernel.empty())) {
      first_dropped_kind_ = problem.kind;
      first_dropped_kernel_ = std::move(problem.kernel);
    }
  }

  std::size_t measured_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t orphan_bytes_ = 0;
  std::uint64_t dropped_ = 0;
  ErrorKind first_dropped_kind_ = ErrorKind::Malformed;
  std::string first_dropped_kernel_;
};

/// `.kd` objects no metadata kernel names: reported, never kernels.
std::vector<std::string> find_orphans(const std::vector<Symbol>& symbols, const Metadata& metadata,
                                      std::vector<Problem>& problems, ProblemBudget& budget) {
  llvm::DenseSet<llvm::StringRef> named(metadata.kernels.size());
  for (const Kernel& kernel : metadata.kernels) named.insert(kernel.symbol);
  std::vector<std::string> orphans;
  llvm::DenseSet<llvm::StringRef> seen;
  for (const Symbol& symbol : symbols) {
    if (symbol.type != E::STT_OBJECT || symbol.shndx == E::SHN_UNDEF || !symbol.name.ends_with(".kd")) continue;
    if (named.contains(symbol.name) || !seen.insert(symbol.name).second) continue;
    if (!budget.keep_orphan(orphans.size(), symbol.name.size())) {
      budget.offer(problems, {ErrorKind::NotFound, "", ".symbol", "a descriptor symbol has no amdhsa.kernels entry"});
      continue;
    }
    orphans.emplace_back(symbol.name);
    budget.offer(problems, {ErrorKind::NotFound, "", ".symbol",
                            "descriptor symbol " + quoted(symbol.name) +
                                " has no amdhsa.kernels entry; it is never turned into a kernel"});
  }
  return orphans;
}

/// The variables: defined, non-local STT_OBJECT symbols other than `.kd`
/// descriptors, each name once. ROCr's loader skips local non-kernel symbols,
/// so a variable a runtime can find is one of these. The names are bounded
/// by read_symbols' budget.
std::vector<Variable> find_variables(const std::vector<Symbol>& symbols) {
  std::vector<Variable> variables;
  llvm::DenseSet<llvm::StringRef> seen;
  for (const Symbol& symbol : symbols) {
    if (symbol.type != E::STT_OBJECT || symbol.shndx == E::SHN_UNDEF || symbol.binding == E::STB_LOCAL ||
        symbol.name.empty() || symbol.name.ends_with(".kd") || !seen.insert(symbol.name).second) {
      continue;
    }
    variables.push_back({std::string(symbol.name), symbol.size});
  }
  return variables;
}

}  // namespace

Expected<CodeObject> CodeObject::read(std::span<const std::byte> bytes) {
  auto target = read_code_object_target(bytes);
  COLOAD_RETURN_IF_ERROR(target);
  detail::AlignedBytes aligned(bytes);
  Bytes elf = aligned.bytes();
  COLOAD_RETURN_IF_ERROR(detail::check_code_object_header(elf));

  auto view = detail::ElfView::open(elf);
  COLOAD_RETURN_IF_ERROR(view);
  auto layout = view->layout();
  COLOAD_RETURN_IF_ERROR(layout);
  auto size = detail::code_object_size(elf);
  COLOAD_RETURN_IF_ERROR(size);

  auto note = find_metadata_note(elf, *layout);
  COLOAD_RETURN_IF_ERROR(note);
  auto decoded = detail::decode_metadata(note->desc);
  if (!decoded) return std::move(decoded).error().with_context("metadata note at offset " + hex(note->offset));
  auto symbols = detail::read_symbols(elf, *layout);
  COLOAD_RETURN_IF_ERROR(symbols);

  Metadata metadata = std::move(decoded->metadata);
  std::vector<Problem> problems = std::move(decoded->problems);
  ProblemBudget budget;
  check_object_wide(metadata, *target, problems);
  budget.settle(problems);
  KernelBinder binder(elf, *layout, *symbols, *target, problems);
  for (Kernel& kernel : metadata.kernels) {
    binder.bind(kernel);
    detail::compute_kernarg_layout(kernel, problems);
    budget.settle(problems);
  }
  std::vector<std::string> orphans = find_orphans(*symbols, metadata, problems, budget);
  budget.finish(problems);
  return CodeObject(std::move(*target), std::move(metadata), std::move(problems), std::move(orphans), *size,
                    find_variables(*symbols));
}

const Kernel* CodeObject::find_kernel(std::string_view name) const {
  for (const Kernel& kernel : metadata_.kernels) {
    if (kernel.name == name) return &kernel;
  }
  return nullptr;
}

const Variable* CodeObject::find_variable(std::string_view name) const {
  for (const Variable& variable : variables_) {
    if (variable.name == name) return &variable;
  }
  return nullptr;
}

}  // namespace coload
