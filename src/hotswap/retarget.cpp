// The built-in same-ISA retarget (coload/detail/hotswap.h retarget_code_object):
// relabels a code object built for one processor of a same-ISA group
// (docs/selection.md, "same-ISA groups") for another. Two things
// change: the ELF header's e_flags (EF_AMDGPU_MACH and the xnack/sramecc
// fields, docs/format.md) and the metadata note's `amdhsa.target` string
// (docs/format.md, "Metadata keys"). Every other byte is copied unchanged;
// no section or segment moves.
//
// The note is found by walking the note regions with the ELF view's note
// walk (elf/elf_view.h), the string by the metadata decoder, which
// says where it lies; never by searching for bytes. A string of a new
// length is re-encoded in place: the
// descriptor grows or shrinks only within its own padding, so the next note
// record stays where it was.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "code_object/metadata.h"
#include "coload/code_object.h"
#include "coload/detail/hotswap.h"
#include "common/aligned_bytes.h"
#include "common/bytes.h"
#include "common/try.h"
#include "elf/elf_view.h"
#include "hotswap/retarget_note.h"
#include "llvm/BinaryFormat/ELF.h"
#include "select/target_rules.h"
#include "target/isa_name.h"

namespace coload {
namespace {

namespace E = llvm::ELF;
using detail::Bytes;
using detail::check_range;
using detail::hex;

Error retarget_error(ErrorKind kind, const std::string& what) { return Error(kind, "retarget: " + what); }

// ---------------------------------------------------------------------------
// e_flags.

std::uint32_t xnack_bits(FeatureState state) {
  switch (state) {
    case FeatureState::Unsupported: return E::EF_AMDGPU_FEATURE_XNACK_UNSUPPORTED_V4;
    case FeatureState::Any: return E::EF_AMDGPU_FEATURE_XNACK_ANY_V4;
    case FeatureState::Off: return E::EF_AMDGPU_FEATURE_XNACK_OFF_V4;
    case FeatureState::On: return E::EF_AMDGPU_FEATURE_XNACK_ON_V4;
  }
  return 0;
}

std::uint32_t sramecc_bits(FeatureState state) {
  switch (state) {
    case FeatureState::Unsupported: return E::EF_AMDGPU_FEATURE_SRAMECC_UNSUPPORTED_V4;
    case FeatureState::Any: return E::EF_AMDGPU_FEATURE_SRAMECC_ANY_V4;
    case FeatureState::Off: return E::EF_AMDGPU_FEATURE_SRAMECC_OFF_V4;
    case FeatureState::On: return E::EF_AMDGPU_FEATURE_SRAMECC_ON_V4;
  }
  return 0;
}

/// On and Off stay (new_target checked them against the device). A feature
/// the code leaves open becomes what LLVM writes for the device's processor:
/// Any where it has the mode, Unsupported where it lacks it. So gfx900 code
/// (sramecc unsupported) on gfx906 says sramecc Any, as a gfx906 object
/// must: its metadata target ID "gfx906" means that, and ROCr asserts that
/// object and agent agree on sramecc support (docs/selection.md).
FeatureState carried(FeatureState code, bool device_has_mode) {
  if (!device_has_mode) return FeatureState::Unsupported;
  if (code == FeatureState::Unsupported) return FeatureState::Any;
  return code;
}

/// The code object's target relabelled for `device`. Errors: InvalidArgument
/// for a pair outside the same-ISA groups (the same processor included) or a
/// pinned feature the device does not run in.
Expected<TargetId> new_target(const CodeObjectTarget& code, const Device& device) {
  const Processor* from = code.target.processor;
  const Processor* to = device.target.processor;
  if (!from || !to) return retarget_error(ErrorKind::InvalidArgument, "the code object or the device has no processor");
  std::string pair = std::string(from->name) + " -> " + std::string(to->name);
  if (from == to) {
    return retarget_error(ErrorKind::InvalidArgument,
                          pair + ": the code object is already built for the device's processor");
  }
  // A generic object runs on every member of its family from its version on
  // (docs/selection.md): labelled as the member, it loads where generics do not.
  const bool generic_member =
      from->is_generic && to->generic_family == from->name && code.generic_version >= to->min_generic_version;
  if (!generic_member && !detail::runs_equivalently(from->name, to->name)) {
    return retarget_error(ErrorKind::InvalidArgument,
                          pair +
                              " is not a pair of the same-ISA groups nor a generic target and a member of its "
                              "family (docs/selection.md, \"Processors, generic families, same-ISA groups\")");
  }
  if (std::string mismatch = feature_mismatch(code.target, device.target); !mismatch.empty()) {
    return retarget_error(ErrorKind::InvalidArgument, pair + ": code built for " + code.target.str() +
                                                          " cannot run on " + device.str() + ": " + mismatch);
  }
  TargetId target;
  target.processor = to;
  target.xnack = carried(code.target.xnack, to->xnack != XnackSupport::None);
  target.sramecc = carried(code.target.sramecc, to->sramecc);
  return target;
}

std::uint32_t new_e_flags(std::uint32_t old, const TargetId& target) {
  // A member's object carries no generic version (a generic one's becomes 0).
  constexpr std::uint32_t kRewritten = E::EF_AMDGPU_MACH | E::EF_AMDGPU_FEATURE_XNACK_V4 |
                                       E::EF_AMDGPU_FEATURE_SRAMECC_V4 | E::EF_AMDGPU_GENERIC_VERSION;
  return (old & ~kRewritten) | target.processor->mach | xnack_bits(target.xnack) | sramecc_bits(target.sramecc);
}

// ---------------------------------------------------------------------------
// The metadata note.

/// A note region: a PT_NOTE segment or an SHT_NOTE section.
struct Region {
  std::string name;
  std::uint64_t offset = 0, size = 0;
  std::uint64_t align = 4;  ///< the records' alignment (note_alignment of the header's)

  /// Where the record after a descriptor ending at file offset `desc_end`
  /// starts (as the note walk computes it), or nullopt when the padding runs
  /// past the region.
  std::optional<std::uint64_t> next_record(std::uint64_t desc_end) const {
    auto next = detail::next_note_at(desc_end - offset, size, align);
    if (!next) return std::nullopt;
    return offset + *next;
  }
};

/// The NT_AMDGPU_METADATA record as the regions lay it out (file offsets).
struct NoteRecord {
  std::uint64_t header = 0;  ///< namesz, descsz, type
  std::uint64_t desc = 0;    ///< first descriptor byte
  std::uint64_t descsz = 0;
};

/// Every PT_NOTE segment and SHT_NOTE section: both views of the record are
/// rewritten together, so both must stay well-formed.
std::vector<Region> note_regions(const detail::ElfLayout& layout) {
  std::vector<Region> regions;
  for (const detail::ElfSegment& segment : layout.segments) {
    if (segment.type != E::PT_NOTE) continue;
    regions.push_back(
        {"PT_NOTE segment " + std::to_string(segment.index), segment.offset, segment.filesz, segment.align});
  }
  for (const detail::ElfSection& section : layout.sections) {
    if (section.type != E::SHT_NOTE) continue;
    regions.push_back(
        {"SHT_NOTE section " + std::to_string(section.index), section.offset, section.size, section.addralign});
  }
  // A region the reader would refuse for its alignment is one it did not
  // walk (an SHT_NOTE section beside PT_NOTE segments): its records are
  // taken as 4-aligned, as AMDGPU writes them, and the object stays
  // retargetable as it always was.
  for (Region& region : regions) region.align = detail::note_alignment(region.align).value_or(4);
  return regions;
}

/// The metadata record of `region`, walking its records by their declared
/// sizes; nullopt when the region holds none.
Expected<std::optional<NoteRecord>> find_in_region(Bytes elf, const Region& region) {
  detail::NoteWalk walk(elf.subspan(region.offset, region.size), region.offset, region.align);
  while (auto note = walk.next()) {
    if (note->is_amdgpu_metadata()) {
      return std::optional<NoteRecord>({note->offset, note->desc_offset, note->desc.size()});
    }
  }
  if (walk.fault()) return walk.fault_error(region.name);
  return std::optional<NoteRecord>();
}

/// Heads a string of `length` bytes can be written with, narrowest first,
/// starting at the encoding `old_head` used when the length still fits it.
std::vector<std::vector<std::byte>> string_heads(std::uint64_t length, unsigned old_head) {
  std::vector<std::vector<std::byte>> heads;
  auto add = [&](std::uint8_t tag, unsigned width) {
    std::vector<std::byte> head{std::byte{tag}};
    for (unsigned i = width; i-- > 0;) head.push_back(std::byte(static_cast<std::uint8_t>(length >> (8 * i))));
    heads.push_back(std::move(head));
  };
  if (length <= 31) add(static_cast<std::uint8_t>(0xa0 | length), 0);
  if (length <= 0xff) add(0xd9, 1);
  if (length <= 0xffff) add(0xda, 2);
  if (length <= 0xffffffffu) add(0xdb, 4);
  // Keeping the input's encoding keeps a same-length rewrite to the payload bytes.
  auto same = std::find_if(heads.begin(), heads.end(), [&](const auto& head) { return head.size() == old_head; });
  if (same != heads.end()) std::rotate(heads.begin(), same, same + 1);
  return heads;
}

}  // namespace

Expected<bool> detail::rewrite_metadata_target(std::vector<std::byte>& out, std::string_view text) {
  Bytes elf(out);
  if (elf.size() < sizeof(E::Elf64_Ehdr)) {
    return retarget_error(ErrorKind::Truncated,
                          "the code object (" + std::to_string(elf.size()) + " bytes) is shorter than an ELF header");
  }
  detail::AlignedBytes aligned(elf);
  auto view = detail::ElfView::open(aligned.bytes());
  COLOAD_RETURN_IF_ERROR(view);
  auto layout = view->layout();
  COLOAD_RETURN_IF_ERROR(layout);
  const std::vector<Region> regions = note_regions(*layout);
  std::optional<NoteRecord> record;
  std::vector<const Region*> holders;
  for (const Region& region : regions) {
    auto found = find_in_region(elf, region);
    COLOAD_RETURN_IF_ERROR(found);
    if (!*found) continue;
    if (record && (*found)->header != record->header) {
      return retarget_error(ErrorKind::Malformed,
                            "metadata notes at file offsets " + hex(record->header) + " and " + hex((*found)->header));
    }
    record = **found;
    holders.push_back(&region);
  }
  if (!record) return retarget_error(ErrorKind::NotFound, "no NT_AMDGPU_METADATA note");

  Bytes desc = elf.subspan(record->desc, record->descsz);
  // CodeObject::read decoded the same bytes first; the decoder says where the string lies.
  auto decoded = detail::decode_metadata(desc);
  if (!decoded) return std::move(decoded).error().with_context("retarget");
  if (!decoded->target_at) return false;  // no amdhsa.target (code object v3 style): e_flags alone name the target
  const detail::StringLocation& old = *decoded->target_at;

  // Where the record after ours starts, in every region that holds it; the
  // new descriptor must leave that unchanged.
  std::uint64_t old_end = record->desc + record->descsz;
  std::vector<std::uint64_t> nexts;
  for (const Region* region : holders) {
    auto next = region->next_record(old_end);
    if (!next) return retarget_error(ErrorKind::Malformed, region->name + ": metadata note padding runs past it");
    nexts.push_back(*next);
  }
  std::uint64_t space = *std::min_element(nexts.begin(), nexts.end()) - record->desc;

  std::uint64_t kept = record->descsz - old.head - old.length;
  // A shorter string whose padding would end before the next record is
  // lengthened by a wider encoding of the root map's count (fixmap to map16
  // or map32: msgpack allows any width), so the descriptor ends where it did.
  const auto root = desc.empty() ? std::uint8_t{0} : static_cast<std::uint8_t>(desc[0]);
  const bool fixmap = (root & 0xf0) == 0x80;
  std::optional<std::vector<std::byte>> chosen;
  std::vector<std::byte> root_head{std::byte{root}};
  std::uint64_t needed = 0;
  for (unsigned widen : {0u, 2u, 4u}) {
    if (widen != 0 && !fixmap) break;
    for (auto& head : string_heads(text.size(), old.head)) {
      std::uint64_t size = kept + head.size() + text.size() + widen;
      if (needed == 0) needed = size;
      if (size > space) continue;
      bool same_layout =
          std::all_of(holders.begin(), holders.end(), [&, i = std::size_t{0}](const Region* region) mutable {
            return region->next_record(record->desc + size) == std::optional<std::uint64_t>(nexts[i++]);
          });
      if (!same_layout) continue;
      needed = size;
      chosen = std::move(head);
      const auto count = static_cast<std::byte>(root & 0x0f);
      if (widen == 2) root_head = {std::byte{0xde}, std::byte{0}, count};
      if (widen == 4) root_head = {std::byte{0xdf}, std::byte{0}, std::byte{0}, std::byte{0}, count};
      break;
    }
    if (chosen) break;
  }
  if (!chosen) {
    return retarget_error(ErrorKind::UnsupportedMethod, "retargeted metadata note needs " + std::to_string(needed) +
                                                            " bytes, the note has " + std::to_string(space) +
                                                            " (descriptor at file offset " + hex(record->desc) +
                                                            "); moving sections is not supported");
  }

  // New descriptor: the bytes before the string, the string, the bytes after.
  std::vector<std::byte> fresh(root_head);
  fresh.insert(fresh.end(), desc.begin() + 1, desc.begin() + old.offset);
  fresh.insert(fresh.end(), chosen->begin(), chosen->end());
  for (char c : text) fresh.push_back(static_cast<std::byte>(c));
  fresh.insert(fresh.end(), desc.begin() + old.offset + old.head + old.length, desc.end());

  if (fresh.size() != record->descsz) {
    auto descsz = static_cast<std::uint32_t>(fresh.size());
    std::memcpy(out.data() + record->header + 4, &descsz, sizeof descsz);
    // The old descriptor's tail and padding become the new padding.
    std::fill(out.begin() + record->desc, out.begin() + record->desc + space, std::byte{0});
  }
  std::copy(fresh.begin(), fresh.end(), out.begin() + record->desc);
  return true;
}

Expected<std::vector<std::byte>> retarget_code_object(std::span<const std::byte> code_object, const Device& device) {
  auto input = CodeObject::read(code_object);
  COLOAD_RETURN_IF_ERROR(input);
  const CodeObjectTarget& code = input->target();
  auto target = new_target(code, device);
  COLOAD_RETURN_IF_ERROR(target);
  if (code.code_object_version < 4) {
    return retarget_error(ErrorKind::UnsupportedVersion,
                          "code object v" + std::to_string(code.code_object_version) +
                              " keeps xnack/sramecc in the v3 e_flags layout; only v4 and later are retargeted");
  }
  // A kernel's problems refuse the input, as the registry refuses such an
  // object. Object-wide metadata strings no runtime reads (an old
  // amdhsa.version of hand-written assembly) pass through as they are: the
  // object would load unchanged, so it loads retargeted.
  auto kernel_problem = std::find_if(input->problems().begin(), input->problems().end(),
                                     [](const Problem& problem) { return !problem.kernel.empty(); });
  if (kernel_problem != input->problems().end()) {
    return retarget_error(ErrorKind::Malformed, "the input has a kernel problem: " + kernel_problem->message);
  }

  std::vector<std::byte> out(code_object.begin(), code_object.end());
  std::uint32_t flags = new_e_flags(code.e_flags, *target);
  constexpr std::size_t kFlagsAt = offsetof(E::Elf64_Ehdr, e_flags);
  std::memcpy(out.data() + kFlagsAt, &flags, sizeof flags);
  std::string text = std::string(detail::kIsaNamePrefix) + target->str();
  auto rewritten = detail::rewrite_metadata_target(out, text);
  COLOAD_RETURN_IF_ERROR(rewritten);

  auto check = CodeObject::read(out);
  if (!check) return std::move(check).error().with_context("retarget: the output does not read back");
  // The output may keep the input's object-wide problems, never gain one.
  for (const Problem& problem : check->problems()) {
    bool kept = std::any_of(input->problems().begin(), input->problems().end(), [&](const Problem& before) {
      return before.kernel == problem.kernel && before.field == problem.field && before.kind == problem.kind;
    });
    if (!kept) return retarget_error(ErrorKind::Malformed, "the output has a new problem: " + problem.message);
  }
  if (check->target().target != *target || (*rewritten && check->metadata().target != text)) {
    return retarget_error(ErrorKind::Malformed, "the output reads back as " + check->target().target.str() +
                                                    " (metadata \"" + check->metadata().target + "\"), not " +
                                                    target->str());
  }
  return out;
}

}  // namespace coload
