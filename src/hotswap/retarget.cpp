// The built-in same-ISA retarget (coload/hotswap.h retarget_code_object):
// relabels a code object built for one processor of a same-ISA group
// (docs/selection.md, "same-ISA groups") for another. Two things
// change: the ELF header's e_flags (EF_AMDGPU_MACH and the xnack/sramecc
// fields, docs/format.md) and the metadata note's `amdhsa.target` string
// (docs/format.md, "Metadata keys"). Every other byte is copied unchanged;
// no section or segment moves.
//
// The note and the string are found by walking the note regions by their
// declared sizes and the msgpack map by its encodings, never by searching
// for bytes. A string of a new length is re-encoded in place: the
// descriptor grows or shrinks only within its own padding, so the next note
// record stays where it was.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "coload/code_object.h"
#include "coload/hotswap.h"
#include "common/bytes.h"
#include "hotswap/retarget_note.h"
#include "llvm/BinaryFormat/ELF.h"
#include "select/target_rules.h"

namespace coload {
namespace {

namespace E = llvm::ELF;
using detail::Bytes;
using detail::check_range;
using detail::hex;

constexpr std::string_view kTriplePrefix = "amdgcn-amd-amdhsa--";
constexpr std::string_view kNoteName{"AMDGPU\0", 7};
constexpr std::string_view kTargetKey = "amdhsa.target";
constexpr std::string_view kContainer = "the code object";
constexpr unsigned kMaxDepth = 64;  // as the metadata decoder (codeobject/metadata.h)

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
  if (!detail::runs_equivalently(from->name, to->name)) {
    return retarget_error(ErrorKind::InvalidArgument,
                          pair + " is not a pair of the same-ISA groups (isa-matching.md section 5)");
  }
  if (std::string mismatch = feature_mismatch(code.target, device.target); !mismatch.empty()) {
    return retarget_error(ErrorKind::InvalidArgument,
                          pair + ": code built for " + code.target.str() + " cannot run on " + device.str() + ": " +
                              mismatch);
  }
  TargetId target;
  target.processor = to;
  target.xnack = carried(code.target.xnack, to->xnack != XnackSupport::None);
  target.sramecc = carried(code.target.sramecc, to->sramecc);
  return target;
}

std::uint32_t new_e_flags(std::uint32_t old, const TargetId& target) {
  constexpr std::uint32_t kRewritten =
      E::EF_AMDGPU_MACH | E::EF_AMDGPU_FEATURE_XNACK_V4 | E::EF_AMDGPU_FEATURE_SRAMECC_V4;
  return (old & ~kRewritten) | target.processor->mach | xnack_bits(target.xnack) | sramecc_bits(target.sramecc);
}

// ---------------------------------------------------------------------------
// The metadata note.

/// A note region: a PT_NOTE segment or an SHT_NOTE section.
struct Region {
  std::string name;
  std::uint64_t offset = 0, size = 0, align = 4;
};

/// The NT_AMDGPU_METADATA record as the regions lay it out (file offsets).
struct NoteRecord {
  std::uint64_t header = 0;     ///< namesz, descsz, type
  std::uint64_t desc = 0;       ///< first descriptor byte
  std::uint64_t descsz = 0;
};

/// Where the record after a descriptor ending at `desc_end` starts in
/// `region` (as the note reader computes it), or nullopt when the padding
/// runs past the region.
std::optional<std::uint64_t> next_record(const Region& region, std::uint64_t desc_end) {
  std::uint64_t end = region.offset + region.size;
  auto next = detail::align_up(desc_end - region.offset, region.align);
  if (next && region.offset + *next <= end) return region.offset + *next;
  if (desc_end == end) return end;  // the last record may lack its padding
  return std::nullopt;
}

Expected<std::vector<Region>> note_regions(Bytes elf) {
  E::Elf64_Ehdr header;
  std::memcpy(&header, elf.data(), sizeof header);  // CodeObject::read checked the length
  std::vector<Region> segments, sections;
  if (header.e_phnum != E::PN_XNUM) {
    for (unsigned i = 0; i < header.e_phnum; ++i) {
      std::uint64_t at = header.e_phoff + std::uint64_t{i} * sizeof(E::Elf64_Phdr);
      if (auto fits = check_range("program header " + std::to_string(i), at, sizeof(E::Elf64_Phdr), elf.size(),
                                  kContainer);
          !fits) {
        return std::move(fits).error();
      }
      E::Elf64_Phdr phdr;
      std::memcpy(&phdr, elf.data() + at, sizeof phdr);
      if (phdr.p_type != E::PT_NOTE) continue;
      segments.push_back({"PT_NOTE segment " + std::to_string(i), phdr.p_offset, phdr.p_filesz,
                          phdr.p_align == 8 ? 8u : 4u});
    }
  }
  if (header.e_shoff != 0 && header.e_shnum != 0) {
    for (unsigned i = 0; i < header.e_shnum; ++i) {
      std::uint64_t at = header.e_shoff + std::uint64_t{i} * sizeof(E::Elf64_Shdr);
      if (auto fits = check_range("section header " + std::to_string(i), at, sizeof(E::Elf64_Shdr), elf.size(),
                                  kContainer);
          !fits) {
        return std::move(fits).error();
      }
      E::Elf64_Shdr shdr;
      std::memcpy(&shdr, elf.data() + at, sizeof shdr);
      if (shdr.sh_type != E::SHT_NOTE) continue;
      sections.push_back({"SHT_NOTE section " + std::to_string(i), shdr.sh_offset, shdr.sh_size,
                          shdr.sh_addralign == 8 ? 8u : 4u});
    }
  }
  // Both views of the record are rewritten together, so both must stay well-formed.
  segments.insert(segments.end(), sections.begin(), sections.end());
  return segments;
}

/// Finds the metadata record in `region` by walking its records by their
/// declared sizes. nullopt when the region holds none.
Expected<std::optional<NoteRecord>> find_in_region(Bytes elf, const Region& region) {
  if (auto fits = check_range(region.name, region.offset, region.size, elf.size(), kContainer); !fits) {
    return std::move(fits).error();
  }
  std::uint64_t end = region.offset + region.size;
  std::uint64_t position = region.offset;
  while (position < end) {
    std::string record = region.name + ": note record at file offset " + hex(position);
    if (end - position < 12) return retarget_error(ErrorKind::Truncated, record + " has no room for its header");
    auto namesz = detail::load_le<std::uint32_t>(elf.data() + position);
    auto descsz = detail::load_le<std::uint32_t>(elf.data() + position + 4);
    auto type = detail::load_le<std::uint32_t>(elf.data() + position + 8);
    std::uint64_t name_at = position + 12;
    if (auto fits = check_range(record + ": name", name_at, namesz, end, region.name); !fits) {
      return std::move(fits).error();
    }
    auto desc_at = detail::align_up(name_at + namesz - region.offset, region.align);
    if (!desc_at || region.offset + *desc_at > end) {
      return retarget_error(ErrorKind::OutOfBounds, record + ": name padding runs past the region");
    }
    std::uint64_t desc = region.offset + *desc_at;
    if (auto fits = check_range(record + ": descriptor", desc, descsz, end, region.name); !fits) {
      return std::move(fits).error();
    }
    if (type == E::NT_AMDGPU_METADATA && namesz == kNoteName.size() &&
        detail::as_chars(elf.subspan(name_at, namesz)) == kNoteName) {
      return std::optional<NoteRecord>(NoteRecord{position, desc, descsz});
    }
    auto next = next_record(region, desc + descsz);
    if (!next) return retarget_error(ErrorKind::Truncated, record + ": descriptor padding runs past the region");
    position = *next;
  }
  return std::optional<NoteRecord>();
}

// ---------------------------------------------------------------------------
// The msgpack walk.

/// A string value inside the descriptor: where its encoding starts, how many
/// bytes its head takes, and its payload length.
struct StringValue {
  std::uint64_t offset = 0;
  unsigned head = 0;
  std::uint64_t length = 0;
};

/// Walks msgpack values by their encodings (big-endian lengths). Only what
/// the retarget needs: skipping any value, and the `amdhsa.target` string of
/// the root map. CodeObject::read decoded the same bytes strictly first, so
/// a failure here is a disagreement with that decoder, reported as Malformed.
class MsgpackWalk {
 public:
  explicit MsgpackWalk(Bytes bytes) : bytes_(bytes) {}

  /// The root map's `amdhsa.target` value; nullopt when the key is absent.
  Expected<std::optional<StringValue>> find_target() {
    std::uint64_t at = 0;
    auto head = container_head(at, /*map=*/true);
    if (!head) return std::move(head).error();
    at += head->head;
    std::optional<StringValue> found;
    for (std::uint64_t i = 0; i < head->count; ++i) {
      auto key = string_at(at);
      bool is_target = key && as_text(*key) == kTargetKey;
      auto value_at = skip(at, 2);
      if (!value_at) return std::move(value_at).error();
      if (is_target) {
        auto value = string_at(*value_at);
        if (!value) {
          return malformed(*value_at, "amdhsa.target is not a string (" +
                                          detail::show_bytes(bytes_.subspan(*value_at)) + ")");
        }
        found = *value;
      }
      auto next = skip(*value_at, 2);
      if (!next) return std::move(next).error();
      at = *next;
    }
    if (at != bytes_.size()) return malformed(at, "bytes after the root map");
    return found;
  }

  /// The string encoded at `at`, or nullopt when the value there is no string.
  std::optional<StringValue> string_at(std::uint64_t at) const {
    if (at >= bytes_.size()) return std::nullopt;
    auto tag = static_cast<std::uint8_t>(bytes_[at]);
    if (tag >= 0xa0 && tag <= 0xbf) return StringValue{at, 1, tag & 0x1fu};
    unsigned width = tag == 0xd9 ? 1 : tag == 0xda ? 2 : tag == 0xdb ? 4 : 0;
    if (width == 0 || at + 1 + width > bytes_.size()) return std::nullopt;
    return StringValue{at, 1 + width, big_endian(at + 1, width)};
  }

  std::string_view as_text(const StringValue& value) const {
    if (value.offset + value.head + value.length > bytes_.size()) return {};
    return detail::as_chars(bytes_.subspan(value.offset + value.head, value.length));
  }

 private:
  struct Head {
    unsigned head = 0;
    std::uint64_t count = 0;
  };

  Error malformed(std::uint64_t at, const std::string& what) const {
    return retarget_error(ErrorKind::Malformed, "metadata at byte " + hex(at) + ": " + what);
  }

  std::uint64_t big_endian(std::uint64_t at, unsigned width) const {
    std::uint64_t value = 0;
    for (unsigned i = 0; i < width; ++i) value = value << 8 | static_cast<std::uint8_t>(bytes_[at + i]);
    return value;
  }

  Expected<Head> container_head(std::uint64_t at, bool map) const {
    if (at >= bytes_.size()) return malformed(at, "the metadata ends where a value belongs");
    auto tag = static_cast<std::uint8_t>(bytes_[at]);
    unsigned width = 0;
    std::uint64_t count = 0;
    if (map && tag >= 0x80 && tag <= 0x8f) count = tag & 0x0fu;
    else if (!map && tag >= 0x90 && tag <= 0x9f) count = tag & 0x0fu;
    else if (tag == (map ? 0xde : 0xdc)) width = 2;
    else if (tag == (map ? 0xdf : 0xdd)) width = 4;
    else return malformed(at, std::string("expected a ") + (map ? "map" : "array") + ", found tag " + hex(tag));
    if (at + 1 + width > bytes_.size()) return malformed(at, "container head runs past the metadata");
    if (width) count = big_endian(at + 1, width);
    return Head{1 + width, count};
  }

  /// The offset after the value at `at` (containers included).
  Expected<std::uint64_t> skip(std::uint64_t at, unsigned depth) const {
    if (depth > kMaxDepth) return malformed(at, "nesting deeper than " + std::to_string(kMaxDepth));
    if (at >= bytes_.size()) return malformed(at, "the metadata ends where a value belongs");
    auto tag = static_cast<std::uint8_t>(bytes_[at]);
    bool map = (tag >= 0x80 && tag <= 0x8f) || tag == 0xde || tag == 0xdf;
    bool array = (tag >= 0x90 && tag <= 0x9f) || tag == 0xdc || tag == 0xdd;
    if (map || array) {
      auto head = container_head(at, map);
      if (!head) return std::move(head).error();
      std::uint64_t elements = map ? head->count * 2 : head->count;  // count < 2^32
      if (elements > bytes_.size() - at) return malformed(at, "container count " + std::to_string(head->count) +
                                                                  " exceeds the bytes left");
      std::uint64_t position = at + head->head;
      for (std::uint64_t i = 0; i < elements; ++i) {
        auto next = skip(position, depth + 1);
        if (!next) return next;
        position = *next;
      }
      return position;
    }
    std::uint64_t head = 1, payload = 0;
    if (tag <= 0x7f || tag >= 0xe0 || tag == 0xc0 || tag == 0xc2 || tag == 0xc3) {
      // fixints, nil, booleans
    } else if (tag >= 0xa0 && tag <= 0xbf) {
      payload = tag & 0x1fu;
    } else {
      unsigned width = 0;
      switch (tag) {
        case 0xc4: case 0xd9: width = 1; break;          // bin8, str8
        case 0xc5: case 0xda: width = 2; break;          // bin16, str16
        case 0xc6: case 0xdb: width = 4; break;          // bin32, str32
        case 0xc7: width = 1; head = 2; break;           // ext8 (+ type byte)
        case 0xc8: width = 2; head = 2; break;           // ext16
        case 0xc9: width = 4; head = 2; break;           // ext32
        case 0xcc: case 0xd0: payload = 1; break;
        case 0xcd: case 0xd1: payload = 2; break;
        case 0xca: case 0xce: case 0xd2: payload = 4; break;
        case 0xcb: case 0xcf: case 0xd3: payload = 8; break;
        case 0xd4: payload = 2; break;                   // fixext1..16 (type byte + data)
        case 0xd5: payload = 3; break;
        case 0xd6: payload = 5; break;
        case 0xd7: payload = 9; break;
        case 0xd8: payload = 17; break;
        default: return malformed(at, "tag " + hex(tag) + " is no msgpack encoding");
      }
      if (width) {
        if (at + 1 + width > bytes_.size()) return malformed(at, "length runs past the metadata");
        payload = big_endian(at + 1, width);
        head += width;
      }
    }
    if (auto fits = check_range("metadata value at byte " + hex(at), at, head + payload, bytes_.size(),
                                "the metadata");
        !fits) {
      return std::move(fits).error();
    }
    return at + head + payload;
  }

  Bytes bytes_;
};

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
    return retarget_error(ErrorKind::Truncated, "the code object (" + std::to_string(elf.size()) +
                                                    " bytes) is shorter than an ELF header");
  }
  auto regions = note_regions(elf);
  if (!regions) return std::move(regions).error();
  std::optional<NoteRecord> record;
  std::vector<const Region*> holders;
  for (const Region& region : *regions) {
    auto found = find_in_region(elf, region);
    if (!found) return std::move(found).error();
    if (!*found) continue;
    if (record && (*found)->header != record->header) {
      return retarget_error(ErrorKind::Malformed, "metadata notes at file offsets " + hex(record->header) + " and " +
                                                      hex((*found)->header));
    }
    record = **found;
    holders.push_back(&region);
  }
  if (!record) return retarget_error(ErrorKind::NotFound, "no NT_AMDGPU_METADATA note");

  Bytes desc = elf.subspan(record->desc, record->descsz);
  MsgpackWalk walk(desc);
  auto found = walk.find_target();
  if (!found) return std::move(found).error();
  if (!*found) return false;  // no amdhsa.target (code object v3 style): e_flags alone name the target
  const StringValue& old = **found;

  // Where the record after ours starts, in every region that holds it; the
  // new descriptor must leave that unchanged.
  std::uint64_t old_end = record->desc + record->descsz;
  std::vector<std::uint64_t> nexts;
  for (const Region* region : holders) {
    auto next = next_record(*region, old_end);
    if (!next) return retarget_error(ErrorKind::Malformed, region->name + ": metadata note padding runs past it");
    nexts.push_back(*next);
  }
  std::uint64_t space = *std::min_element(nexts.begin(), nexts.end()) - record->desc;

  std::uint64_t kept = record->descsz - old.head - old.length;
  std::optional<std::vector<std::byte>> chosen;
  std::uint64_t needed = 0;
  for (auto& head : string_heads(text.size(), old.head)) {
    std::uint64_t size = kept + head.size() + text.size();
    if (needed == 0) needed = size;
    if (size > space) continue;
    bool same_layout = std::all_of(holders.begin(), holders.end(), [&, i = std::size_t{0}](const Region* region) mutable {
      return next_record(*region, record->desc + size) == std::optional<std::uint64_t>(nexts[i++]);
    });
    if (!same_layout) continue;
    needed = size;
    chosen = std::move(head);
    break;
  }
  if (!chosen) {
    return retarget_error(ErrorKind::UnsupportedMethod,
                          "retargeted metadata note needs " + std::to_string(needed) + " bytes, the note has " +
                              std::to_string(space) + " (descriptor at file offset " + hex(record->desc) +
                              "); moving sections is not supported");
  }

  // New descriptor: the bytes before the string, the string, the bytes after.
  std::vector<std::byte> fresh(desc.begin(), desc.begin() + old.offset);
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
  if (!input) return std::move(input).error();
  const CodeObjectTarget& code = input->target();
  auto target = new_target(code, device);
  if (!target) return std::move(target).error();
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
  std::string text = std::string(kTriplePrefix) + target->str();
  auto rewritten = detail::rewrite_metadata_target(out, text);
  if (!rewritten) return std::move(rewritten).error();

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
