// The NT_AMDGPU_METADATA msgpack map: the AMDHSA schema (docs/format.md
// "Metadata keys", docs/reading-rules.md) over the strict msgpack reader
// (msgpack_reader.h), which checks depth, counts, duplicate keys and integer
// ranges as each value is read. This file says which keys each map has,
// which are required, and what each value must be. Keys it does not know
// are skipped with the reader's checks and listed in Metadata::unknown_keys.
#include "code_object/metadata.h"

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

#include "common/bytes.h"
#include "common/try.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"
#include "msgpack/msgpack_reader.h"

namespace coload::detail {

namespace {

using llvm::msgpack::Type;
using msgpack::KeySet;
using msgpack::Path;
using msgpack::Value;

constexpr std::array<std::string_view, 10> kRequiredKernelKeys = {".name",
                                                                  ".symbol",
                                                                  ".kernarg_segment_size",
                                                                  ".kernarg_segment_align",
                                                                  ".group_segment_fixed_size",
                                                                  ".private_segment_fixed_size",
                                                                  ".wavefront_size",
                                                                  ".sgpr_count",
                                                                  ".vgpr_count",
                                                                  ".max_flat_workgroup_size"};
constexpr std::array<std::string_view, 3> kRequiredArgKeys = {".offset", ".size", ".value_kind"};
constexpr std::array<std::string_view, 2> kRequiredRootKeys = {"amdhsa.version", "amdhsa.kernels"};

/// The schema on the strict reader: each method reads one key's value.
class Decoder : private msgpack::Reader {
 public:
  explicit Decoder(Bytes bytes) : Reader(bytes, "metadata", kMaxMetadataDepth) {}

  Expected<DecodedMetadata> decode() {
    COLOAD_RETURN_IF_ERROR(root());
    find_duplicate_kernels();
    return std::move(result_);
  }

 private:
  /// The value of an unknown key: skipped and listed.
  Expected<void> unknown(const Path& path, unsigned depth, bool record = true) {
    Value value;
    COLOAD_RETURN_IF_ERROR(next(value, path));
    COLOAD_RETURN_IF_ERROR(skip(value, path, depth));
    if (record && result_.metadata.unknown_keys.size() < kMaxUnknownKeys) {
      result_.metadata.unknown_keys.push_back(path.str());
    }
    return {};
  }

  // ---- The schema ---------------------------------------------------------

  Expected<void> root() {
    const Path top;
    Value map;
    COLOAD_RETURN_IF_ERROR(next(map, top));
    if (map.kind() != Type::Map) return wrong_type(top, map, "a map at the root");
    KeySet seen;
    auto done = entries(map, top, 1, seen, [&](std::string_view key, const Path& path) -> Expected<void> {
      if (key == "amdhsa.version") return version(path);
      if (key == "amdhsa.target") return target(path);
      if (key == "amdhsa.printf") return printf_formats(path);
      if (key == "amdhsa.kernels") return kernels(path);
      return unknown(path, 2);
    });
    if (!done) return done;
    if (auto required = require(seen, kRequiredRootKeys, top, map); !required) return required;
    return finish(top);
  }

  template <class Field, class T>
  static Expected<void> store(Field& field, Expected<T> value) {
    COLOAD_RETURN_IF_ERROR(value);
    field = std::move(*value);
    return {};
  }

  Expected<void> target(const Path& path) {
    std::uint64_t at = position();
    auto text = string(path);
    COLOAD_RETURN_IF_ERROR(text);
    result_.metadata.target = *text;
    result_.target_at = StringLocation{at, static_cast<unsigned>(text->data() - input().data() - at), text->size()};
    return {};
  }

  Expected<void> version(const Path& path) {
    std::uint64_t at = position();
    auto numbers = u32_array<2>(path, 2);
    COLOAD_RETURN_IF_ERROR(numbers);
    auto [major, minor] = *numbers;
    if (major != 1) {
      return error(ErrorKind::UnsupportedVersion, path, at,
                   "metadata version " + std::to_string(major) + "." + std::to_string(minor) +
                       " is not 1.x (code object v3 and later)",
                   major);
    }
    result_.metadata.version_major = major;
    result_.metadata.version_minor = minor;
    return {};
  }

  Expected<void> printf_formats(const Path& path) {
    Value array;
    COLOAD_RETURN_IF_ERROR(next(array, path));
    if (array.kind() != Type::Array) return wrong_type(path, array, "an array of strings");
    if (array.object.Length > kMaxPrintfFormats) {
      return error(ErrorKind::LimitExceeded, path, array.offset,
                   std::to_string(array.object.Length) + " printf formats exceed the limit of " +
                       std::to_string(kMaxPrintfFormats),
                   array.object.Length, kMaxPrintfFormats);
    }
    if (auto opened = open(array, path, 2); !opened) return opened;
    auto& formats = result_.metadata.printf_formats;
    for (std::size_t i = 0; i < array.object.Length; ++i) {
      Path element_path = path.index(i);
      auto text = string(element_path);
      COLOAD_RETURN_IF_ERROR(text);
      formats.emplace_back(*text);
      check_printf_format(formats.back(), element_path);
    }
    return {};
  }

  /// `ID:N:S0:...:SN-1:Format` (AMDGPUUsage); a string that does not start
  /// so is reported, not fatal: only printf through this kernel is affected.
  void check_printf_format(std::string_view format, const Path& path) {
    std::string_view text = format;
    auto number = [&](std::uint64_t& out) {
      std::size_t digits = 0;
      out = 0;
      while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9' && digits < 10) {
        out = out * 10 + static_cast<std::uint64_t>(text[digits] - '0');
        ++digits;
      }
      if (digits == 0 || digits >= text.size() || text[digits] != ':') return false;
      text.remove_prefix(digits + 1);
      return true;
    };
    std::uint64_t id = 0, count = 0, size = 0;
    bool good = number(id) && number(count);
    for (std::uint64_t i = 0; good && i < count; ++i) good = number(size);
    if (good) return;
    std::string where = path.str();
    result_.problems.push_back(
        Problem{ErrorKind::Malformed, "", where,
                where + ": \"" + printable(format) + "\" is not of the form ID:N:S0:...:SN-1:Format"});
  }

  Expected<void> kernels(const Path& path) {
    Value array;
    COLOAD_RETURN_IF_ERROR(next(array, path));
    if (array.kind() != Type::Array) return wrong_type(path, array, "an array of kernel maps");
    if (array.object.Length > kMaxMetadataKernels) {
      return error(
          ErrorKind::LimitExceeded, path, array.offset,
          std::to_string(array.object.Length) + " kernels exceed the limit of " + std::to_string(kMaxMetadataKernels),
          array.object.Length, kMaxMetadataKernels);
    }
    if (auto opened = open(array, path, 2); !opened) return opened;
    for (std::size_t i = 0; i < array.object.Length; ++i) {
      if (auto done = kernel(path.index(i)); !done) return done;
    }
    return {};
  }

  Expected<void> kernel(const Path& path) {
    constexpr unsigned kDepth = 3;  // root map, kernels array, this map
    Value map;
    COLOAD_RETURN_IF_ERROR(next(map, path));
    if (map.kind() != Type::Map) return wrong_type(path, map, "a kernel map");
    Kernel k;
    KeySet seen;
    auto done = entries(map, path, kDepth, seen, [&](std::string_view key, const Path& at) -> Expected<void> {
      if (key == ".name") return store(k.name, identifier(at));
      if (key == ".symbol") return store(k.symbol, identifier(at));
      if (key == ".kernarg_segment_size") return store(k.kernarg_segment_size, u32(at));
      if (key == ".kernarg_segment_align") return store(k.kernarg_segment_align, alignment(at));
      if (key == ".group_segment_fixed_size") return store(k.group_segment_fixed_size, u32(at));
      if (key == ".private_segment_fixed_size") return store(k.private_segment_fixed_size, u32(at));
      if (key == ".wavefront_size") return wavefront_size(k, at);
      if (key == ".sgpr_count") return store(k.sgpr_count, u32(at));
      if (key == ".vgpr_count") return store(k.vgpr_count, u32(at));
      if (key == ".agpr_count") return store(k.agpr_count, u32(at));
      if (key == ".max_flat_workgroup_size") return store(k.max_flat_workgroup_size, u32(at));
      if (key == ".reqd_workgroup_size") return store(k.reqd_workgroup_size, u32_array<3>(at, kDepth + 1));
      if (key == ".workgroup_size_hint") return store(k.workgroup_size_hint, u32_array<3>(at, kDepth + 1));
      if (key == ".uses_dynamic_stack") return store(k.uses_dynamic_stack, boolean(at));
      if (key == ".workgroup_processor_mode") return store(k.workgroup_processor_mode, u32_or_bool(at));
      if (key == ".uniform_work_group_size") return store(k.uniform_work_group_size, u32_or_bool(at));
      if (key == ".sgpr_spill_count") return store(k.sgpr_spill_count, u32(at));
      if (key == ".vgpr_spill_count") return store(k.vgpr_spill_count, u32(at));
      if (key == ".language") return store(k.language, string(at));
      if (key == ".args") return args(k, at, kDepth + 1);
      // Known and checked, not kept in the model.
      if (key == ".language_version") return checked(u32_array<2>(at, kDepth + 1));
      if (key == ".vec_type_hint" || key == ".device_enqueue_symbol" || key == ".kind") return checked(string(at));
      return unknown(at, kDepth + 1);
    });
    if (!done) return done;
    if (auto required = require(seen, kRequiredKernelKeys, path, map); !required) return required;
    result_.metadata.kernels.push_back(std::move(k));
    return {};
  }

  template <class T>
  static Expected<void> checked(Expected<T> value) {
    COLOAD_RETURN_IF_ERROR(value);
    return {};
  }

  Expected<void> wavefront_size(Kernel& k, const Path& path) {
    std::uint64_t at = position();
    auto size = u32(path);
    COLOAD_RETURN_IF_ERROR(size);
    if (*size != 32 && *size != 64) {
      return malformed(path, at, "wavefront size " + std::to_string(*size) + " is not 32 or 64", *size);
    }
    k.wavefront_size = *size;
    return {};
  }

  Expected<void> args(Kernel& k, const Path& path, unsigned depth) {
    Value array;
    COLOAD_RETURN_IF_ERROR(next(array, path));
    if (array.kind() != Type::Array) return wrong_type(path, array, "an array of argument maps");
    if (array.object.Length > kMaxKernelArgs) {
      return error(
          ErrorKind::LimitExceeded, path, array.offset,
          std::to_string(array.object.Length) + " arguments exceed the limit of " + std::to_string(kMaxKernelArgs),
          array.object.Length, kMaxKernelArgs);
    }
    if (auto opened = open(array, path, depth); !opened) return opened;
    // One allocation rather than one per doubling; the limit above caps what
    // a lying count can reserve.
    k.args.reserve(array.object.Length);
    for (std::size_t i = 0; i < array.object.Length; ++i) {
      if (auto done = arg(k, path.index(i), depth + 1); !done) return done;
    }
    return {};
  }

  Expected<void> arg(Kernel& k, const Path& path, unsigned depth) {
    Value map;
    COLOAD_RETURN_IF_ERROR(next(map, path));
    if (map.kind() != Type::Map) return wrong_type(path, map, "an argument map");
    KernelArg a;
    KeySet seen;
    auto done = entries(map, path, depth, seen, [&](std::string_view key, const Path& at) -> Expected<void> {
      if (key == ".offset") return store(a.offset, u32(at));
      if (key == ".size") return store(a.size, u32(at));
      if (key == ".value_kind") return value_kind(a, at);
      if (key == ".name") return store(a.name, string(at));
      if (key == ".type_name") return store(a.type_name, string(at));
      if (key == ".address_space") {
        return store(a.address_space, spelling(at, AddressSpace::Private, AddressSpace::Region,
                                               "an address space (private, global, constant, local, generic, region)"));
      }
      if (key == ".access" || key == ".actual_access") {
        Access& field = key == ".access" ? a.access : a.actual_access;
        return store(
            field, spelling(at, Access::ReadOnly, Access::ReadWrite, "an access (read_only, write_only, read_write)"));
      }
      if (key == ".pointee_align") return store(a.pointee_align, alignment(at));
      if (key == ".is_const") return store(a.is_const, boolean(at));
      if (key == ".is_restrict") return store(a.is_restrict, boolean(at));
      if (key == ".is_volatile") return store(a.is_volatile, boolean(at));
      if (key == ".is_pipe") return store(a.is_pipe, boolean(at));
      if (key == ".value_type") return unknown(at, depth + 1, /*record=*/false);  // deprecated, ignored
      return unknown(at, depth + 1);
    });
    if (!done) return done;
    if (auto required = require(seen, kRequiredArgKeys, path, map); !required) return required;
    k.args.push_back(std::move(a));
    return {};
  }

  /// Known spellings map to their kind; an unknown `hidden_*` is a hidden
  /// argument this library cannot fill (HiddenUnknown); anything else is an
  /// error, since the caller could not know how to pack it.
  Expected<void> value_kind(KernelArg& a, const Path& path) {
    std::uint64_t at = position();
    auto text = string(path);
    COLOAD_RETURN_IF_ERROR(text);
    a.kind_text.assign(*text);
    for (auto i = 0; i < static_cast<int>(ValueKind::HiddenUnknown); ++i) {
      if (to_string(static_cast<ValueKind>(i)) == *text) {
        a.kind = static_cast<ValueKind>(i);
        return {};
      }
    }
    if (text->starts_with("hidden_")) {
      a.kind = ValueKind::HiddenUnknown;
      return {};
    }
    return malformed(path, at, "\"" + printable(*text) + "\" is not a known value kind");
  }

  // ---- Findings that do not stop decoding ---------------------------------

  /// HIP looks kernels up by `.name`, ROCr by `.symbol`: two kernels sharing
  /// either make one of them unreachable.
  void find_duplicate_kernels() {
    const auto& kernels = result_.metadata.kernels;
    using Seen = llvm::DenseMap<llvm::StringRef, std::size_t>;  // one allocation each
    Seen names(kernels.size()), symbols(kernels.size());
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const Kernel& k = kernels[i];
      auto report = [&](Seen& seen, const std::string& value, std::string_view field) {
        auto [first, fresh] = seen.try_emplace(value, i);
        if (fresh) return;
        result_.problems.push_back(Problem{ErrorKind::Ambiguous, k.name, std::string(field),
                                           "amdhsa.kernels[" + std::to_string(first->second) + "] and amdhsa.kernels[" +
                                               std::to_string(i) + "] both have " + std::string(field) + " \"" +
                                               printable(value) + "\""});
      };
      report(names, k.name, ".name");
      report(symbols, k.symbol, ".symbol");
    }
  }

  DecodedMetadata result_;
};

}  // namespace

Expected<DecodedMetadata> decode_metadata(std::span<const std::byte> msgpack) { return Decoder(msgpack).decode(); }

}  // namespace coload::detail
