// The image behind a __hip_fatbin_wrapper pointer (coload/detail/wrapper.h), read
// only within the mapping that holds each pointer, and only through checked
// copies (io/checked_read.h): a page there may still fault
// (docs/reading-rules.md, "What coload requires of the caller's memory and files").
#include "coload/detail/wrapper.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/try.h"
#include "io/checked_read.h"
#include "io/process_maps.h"

namespace coload {
namespace {

using detail::hex;

struct Segment {
  std::uintptr_t address = 0;
  std::optional<std::uintptr_t> end;  ///< the holding segment's end; empty when none holds it
  bool readable = false;
};

int find_segment(dl_phdr_info* info, std::size_t, void* data) {
  auto* search = static_cast<Segment*>(data);
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) & header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD) continue;
    std::uintptr_t start = info->dlpi_addr + header.p_vaddr;
    if (search->address < start || search->address - start >= header.p_memsz) continue;
    search->end = start + header.p_memsz;
    search->readable = (header.p_flags & PF_R) != 0;
    return 1;
  }
  return 0;
}

/// The end of the readable run of /proc/self/maps mappings that holds
/// `address`; OutOfBounds when none holds it or the one that does is not readable.
Expected<std::uintptr_t> readable_end_from_maps(std::uintptr_t address) {
  std::ifstream maps("/proc/self/maps");
  if (!maps) return Error(ErrorKind::Io, "cannot open /proc/self/maps");
  std::optional<std::uintptr_t> end;
  std::string line;
  while (std::getline(maps, line)) {
    auto mapping = detail::parse_maps_line(line);
    if (!mapping) continue;
    if (end) {
      // Extend the run while the next mapping follows without a gap.
      if (mapping->start != *end || !mapping->readable) break;
      end = mapping->end;
    } else if (address >= mapping->start && address < mapping->end) {
      if (!mapping->readable) {
        return Error(ErrorKind::OutOfBounds, "address " + hex(address) + " lies in the mapping " +
                                                 line.substr(0, line.find(' ')) + ", which is not readable")
            .at_field("address", std::nullopt, address);
      }
      end = mapping->end;
    }
  }
  if (!end) {
    return Error(ErrorKind::OutOfBounds, "address " + hex(address) + " lies in no mapping of this process")
        .at_field("address", std::nullopt, address);
  }
  return *end;
}

}  // namespace

Expected<std::span<const std::byte>> readable_bytes_at(const void* address) {
  Segment search{.address = reinterpret_cast<std::uintptr_t>(address)};
  // Loaded objects first: no system call, and the bound is the segment's.
  dl_iterate_phdr(find_segment, &search);
  std::uintptr_t end = 0;
  if (search.end) {
    if (!search.readable) {
      return Error(ErrorKind::OutOfBounds,
                   "address " + hex(search.address) + " lies in a loaded segment that is not readable")
          .at_field("address", std::nullopt, search.address);
    }
    end = *search.end;
  } else {
    auto mapped_end = readable_end_from_maps(search.address);
    COLOAD_RETURN_IF_ERROR(mapped_end);
    end = *mapped_end;
  }
  return std::span<const std::byte>(static_cast<const std::byte*>(address), end - search.address);
}

namespace {

Error in_wrapper(Error error, const void* wrapper) {
  return std::move(error).with_context("__hip_fatbin_wrapper at " + hex(reinterpret_cast<std::uintptr_t>(wrapper)));
}

/// OutOfBounds (field "address") for `address`, whose first byte cannot be read now.
Error unreadable(const void* address) {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  return Error(ErrorKind::OutOfBounds, "address " + hex(at) +
                                           " cannot be read now (a page made PROT_NONE, a file page past the "
                                           "file's end, or memory with no pages behind it, such as [vvar])")
      .at_field("address", std::nullopt, at);
}

/// Errors measure_image gives for an image cut short, which a longer copy may cure.
bool may_need_more(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Truncated:
    case ErrorKind::OutOfBounds:
    case ErrorKind::Malformed:
    case ErrorKind::CorruptData:
    case ErrorKind::SizeMismatch: return true;
    default: return false;
  }
}

// The first copy of an image; each next one is four times longer, up to its reach.
constexpr std::size_t kFirstCopy = 64 * 1024;

}  // namespace

Expected<std::vector<std::byte>> copy_image(std::span<const std::byte> reach, const ReadOptions& options) {
  std::vector<std::byte> copy;
  std::size_t want = std::min(reach.size(), kFirstCopy);
  for (;;) {
    const std::size_t had = copy.size();
    copy.resize(want);
    auto copied = detail::checked_copy(reach.data() + had, want - had, copy.data() + had);
    COLOAD_RETURN_IF_ERROR(copied);
    const bool cut = had + *copied < want;  // a page that cannot be read ends what is readable
    copy.resize(had + *copied);
    if (copy.empty()) return unreadable(reach.data());
    auto image = measure_image(copy, options);
    if (image) {
      copy.resize(image->size);
      copy.shrink_to_fit();
      return copy;
    }
    if (cut) {
      return std::move(image).error().with_context(
          "only " + hex(copy.size()) + " bytes from " + hex(reinterpret_cast<std::uintptr_t>(reach.data())) +
          " can be read now: the page at " + hex(reinterpret_cast<std::uintptr_t>(reach.data()) + copy.size()) +
          " cannot");
    }
    if (copy.size() == reach.size() || !may_need_more(image.error().kind())) return std::move(image).error();
    want = std::min(reach.size(), copy.size() * 4);
  }
}

Expected<std::span<const std::byte>> measured_in_place(std::span<const std::byte> reach, const ReadOptions& options) {
  auto copy = copy_image(reach, options);
  COLOAD_RETURN_IF_ERROR(copy);
  return reach.first(copy->size());
}

Expected<WrapperRecord> read_wrapper_record(const void* wrapper) {
  std::array<std::byte, kHipFatbinWrapperSize> bytes{};
  auto copied = detail::checked_copy(wrapper, bytes.size(), bytes.data());
  if (!copied) return in_wrapper(std::move(copied).error(), wrapper);
  if (*copied == 0) return in_wrapper(unreadable(wrapper), wrapper);
  if (*copied < kHipFatbinWrapperSize) {
    return in_wrapper(
        Error(ErrorKind::Truncated, "only " + std::to_string(*copied) + " bytes of the 24-byte record are readable")
            .at_field("wrapper", 0, *copied, kHipFatbinWrapperSize),
        wrapper);
  }
  WrapperRecord record;
  record.magic = detail::load_le<std::uint32_t>(bytes.data());
  record.version = detail::load_le<std::uint32_t>(bytes.data() + 4);
  std::memcpy(&record.binary, bytes.data() + kHipFatbinWrapperBinaryAt, sizeof record.binary);
  record.reserved = detail::load_le<std::uint64_t>(bytes.data() + 16);
  return record;
}

Expected<std::span<const std::byte>> wrapper_reach(const void* wrapper) {
  auto record = read_wrapper_record(wrapper);
  COLOAD_RETURN_IF_ERROR(record);
  return wrapper_reach(wrapper, *record);
}

Expected<std::span<const std::byte>> wrapper_reach(const void* wrapper, const WrapperRecord& record) {
  if (record.magic != kHipFatbinWrapperMagic) {
    return in_wrapper(
        Error(ErrorKind::BadMagic, "magic " + hex(record.magic) + " at offset 0x0 is not HIPF (0x48495046)")
            .at_field("magic", 0, record.magic),
        wrapper);
  }
  if (record.version != kHipFatbinWrapperVersion) {
    return in_wrapper(
        Error(ErrorKind::UnsupportedVersion, "version " + std::to_string(record.version) + " at offset 0x4 is not 1")
            .at_field("version", 4, record.version),
        wrapper);
  }
  if (record.binary == nullptr) {
    return in_wrapper(
        Error(ErrorKind::Malformed, "binary at offset 0x8 is null").at_field("binary", kHipFatbinWrapperBinaryAt, 0),
        wrapper);
  }
  auto bytes = readable_bytes_at(record.binary);
  if (!bytes) return in_wrapper(std::move(bytes).error(), wrapper);
  return *bytes;
}

Expected<std::vector<std::byte>> wrapped_image_in(const void* wrapper, std::span<const std::byte> reach,
                                                  const ReadOptions& options) {
  auto image = copy_image(reach, options);
  if (!image) return in_wrapper(std::move(image).error(), wrapper);
  return image;
}

Expected<std::span<const std::byte>> wrapped_image(const void* wrapper, const ReadOptions& options) {
  auto reach = wrapper_reach(wrapper);
  COLOAD_RETURN_IF_ERROR(reach);
  auto image = measured_in_place(*reach, options);
  if (!image) return in_wrapper(std::move(image).error(), wrapper);
  return image;
}

}  // namespace coload
