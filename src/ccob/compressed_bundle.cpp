// `CCOB` compressed bundles: a small header and one zlib or zstd stream holding
// a complete plain bundle. The stored hash is the first 8 bytes of the MD5 of
// that plain bundle; clang never checks it, we always do.
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "ccob/ccob_decode.h"
#include "ccob/ccob_layout.h"
#include "ccob/decompress.h"
#include "ccob/md5_stream.h"
#include "ccob/verified_marks.h"
#include "coload/bundle.h"
#include "common/bytes.h"
#include "common/try.h"
#include "io/read_pages.h"
#include "io/window_memory.h"

namespace coload {
namespace {

using detail::Bytes;
using detail::hex;

constexpr std::uint64_t kSmallestPlainBundle = 32;  // magic + num_entries

class DiscardSink final : public detail::DecodeSink {
 public:
  void write(Bytes) override {}
};

/// Passes every chunk on to `keep`, hashing it on the way unless told not to.
class HashingSink final : public detail::DecodeSink {
 public:
  HashingSink(detail::DecodeSink& keep, bool hash, std::uint64_t expected) : keep_(keep) {
    if (hash) md5_.emplace(expected);
  }
  void write(Bytes chunk) override {
    if (md5_) md5_->update(chunk);  // first: a helper thread hashes while `keep` works
    keep_.write(chunk);
  }
  bool done() const override { return keep_.done(); }
  std::span<std::byte> output() override { return keep_.output(); }
  std::uint64_t digest_low() { return md5_->low(); }

 private:
  detail::DecodeSink& keep_;
  std::optional<detail::Md5Stream> md5_;
};

class VectorSink final : public detail::DecodeSink {
 public:
  explicit VectorSink(std::uint64_t expected) {
    // Reserve what the header declares only while it is modest; a lying header
    // must not cost memory before the data shows up.
    bytes_.reserve(std::min<std::uint64_t>(expected, 64u << 20));
  }
  void write(Bytes chunk) override { bytes_.insert(bytes_.end(), chunk.begin(), chunk.end()); }
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  std::vector<std::byte> bytes_;
};

class MappedSink final : public detail::DecodeSink {
 public:
  explicit MappedSink(detail::DecompressedBundle& bundle) : bundle_(bundle) {}
  // decode_stream never passes more than the declared size on; a full buffer
  // is still refused rather than overrun.
  void write(Bytes chunk) override { overrun_ = overrun_ || !bundle_.append(chunk); }
  bool done() const override { return overrun_; }
  std::span<std::byte> output() override { return bundle_.storage(); }
  bool overrun() const { return overrun_; }

 private:
  detail::DecompressedBundle& bundle_;
  bool overrun_ = false;
};

template <class T>
Expected<std::uint64_t> widened(Expected<T> value) {
  COLOAD_RETURN_IF_ERROR(value);
  return std::uint64_t{*value};
}

/// The header field at the cursor, as wide as the layout declares it.
Expected<std::uint64_t> read_field(detail::Cursor& cursor, detail::CcobField field, std::string_view name) {
  switch (field.width) {
    case 2: return widened(cursor.u16(name));
    case 4: return widened(cursor.u32(name));
    default: return cursor.u64(name);
  }
}

}  // namespace

// The names of coload/bundle.h's enums, for reports and JSON.
std::string_view to_string(BundleFormat format) {
  switch (format) {
    case BundleFormat::Plain: return "plain";
    case BundleFormat::Compressed: return "ccob";
    case BundleFormat::CodeObject: return "code_object";
    case BundleFormat::FileGroup: return "file_group";
    case BundleFormat::Kpack: return "kpack";
  }
  return "unknown";
}

std::string_view to_string(Compression compression) {
  switch (compression) {
    case Compression::None: return "none";
    case Compression::Zlib: return "zlib";
    case Compression::Zstd: return "zstd";
  }
  return "unknown";
}

std::string_view to_string(Unbundler unbundler) { return unbundler == Unbundler::Comgr ? "comgr" : "builtin"; }

Expected<void> detail::check_decoded_limit(const CompressedHeader& header, const ReadOptions& options) {
  if (header.uncompressed_size <= options.max_decompressed_bytes) return {};
  return Error(ErrorKind::LimitExceeded, "CCOB v" + std::to_string(header.version) + ": uncompressed_size " +
                                             hex(header.uncompressed_size) + " exceeds the limit " +
                                             hex(options.max_decompressed_bytes) + " (max_decompressed_bytes)")
      .at_field("uncompressed_size", ccob_layout(header.version).uncompressed_size.offset, header.uncompressed_size,
                options.max_decompressed_bytes);
}

Expected<detail::HashOutcome> detail::decode_verified(Bytes ccob, const CompressedHeader& header,
                                                      const ReadOptions& options, DecodeSink& keep,
                                                      VerifyOptions verify) {
  COLOAD_RETURN_IF_ERROR(check_decoded_limit(header, options));
  std::uint64_t end = header.total_size.value_or(ccob.size());
  if (end > ccob.size() || end < header.header_size) {
    return Error(ErrorKind::OutOfBounds,
                 "CCOB: total_size " + hex(end) + " does not fit the " + hex(ccob.size()) + " bytes given")
        .at_field("total_size", ccob_layout(header.version).total_size.offset, end, ccob.size());
  }
  std::optional<VerifiedMark> mark;
  std::unique_ptr<std::byte[]> copy;
  if (verify.check_hash && !options.verified_cache.empty()) {
    // The bytes are read once, into memory of our own: the mark is named
    // from what the decoder then consumes, so a file rewritten under its
    // mapping can neither skip the MD5 of bytes no mark stands for nor get a
    // mark for bytes that were not checked (docs/reading-rules.md, "Files").
    copy = std::make_unique_for_overwrite<std::byte[]>(end);
    std::memcpy(copy.get(), ccob.data(), end);
    detail::ReadPages(ccob).read_to(end);  // the mapping's pages are read; give them back
    ccob = Bytes(copy.get(), end);
    mark.emplace(options.verified_cache, ccob, header);
  }
  bool checked_earlier = mark && mark->present();
  bool hash = verify.check_hash && !checked_earlier;
  keep.begin(hash);
  HashingSink sink(keep, hash, header.uncompressed_size);
  auto end_rule = header.total_size ? StreamEnd::EndOfInput : StreamEnd::EndOfExpected;
  auto consumed = decode_stream(header.method, ccob.subspan(header.header_size, end - header.header_size),
                                header.uncompressed_size, end_rule, sink);
  if (!consumed) return std::move(consumed).error().with_context("CCOB v" + std::to_string(header.version));
  // Unhashed, the size is still checked, by decode_stream (unless keep.done() stopped it).
  if (checked_earlier) return HashOutcome::CheckedEarlier;
  if (!hash) return HashOutcome::NotChecked;
  std::uint64_t computed = sink.digest_low();
  if (computed != header.hash) {
    return Error(ErrorKind::HashMismatch,
                 "CCOB v" + std::to_string(header.version) + ": stored hash " + hex(header.hash) + " at offset " +
                     hex(ccob_layout(header.version).hash.offset) + " does not match " + hex(computed) +
                     ", the MD5 prefix of the " + hex(header.uncompressed_size) + " decompressed bytes")
        .at_field("hash", ccob_layout(header.version).hash.offset, header.hash);
  }
  if (mark) mark->record();
  return HashOutcome::Checked;
}

Expected<CompressedHeader> parse_compressed_header(std::span<const std::byte> bytes, const ReadOptions& options) {
  detail::Cursor cursor(bytes, "CCOB header");
  auto magic = cursor.take("magic", detail::kCcobMagicField.width);
  COLOAD_RETURN_IF_ERROR(magic);
  if (detail::as_chars(*magic) != detail::kCcobMagic) {
    return Error(ErrorKind::BadMagic,
                 "CCOB header: offset " + hex(detail::kCcobMagicField.offset) + " does not hold CCOB")
        .at_field("magic", detail::kCcobMagicField.offset);
  }
  auto version = read_field(cursor, detail::kCcobVersionField, "version");
  COLOAD_RETURN_IF_ERROR(version);
  auto method = read_field(cursor, detail::kCcobMethodField, "method");
  COLOAD_RETURN_IF_ERROR(method);
  if (*version < 1 || *version > 3) {
    return Error(ErrorKind::UnsupportedVersion, "CCOB header: version " + std::to_string(*version) + " at offset " +
                                                    hex(detail::kCcobVersionField.offset) + " is not 1, 2 or 3")
        .at_field("version", detail::kCcobVersionField.offset, *version);
  }
  if (*method > 1) {
    return Error(ErrorKind::UnsupportedMethod, "CCOB header: method " + std::to_string(*method) + " at offset " +
                                                   hex(detail::kCcobMethodField.offset) +
                                                   " is not 0 (zlib) or 1 (zstd)")
        .at_field("method", detail::kCcobMethodField.offset, *method);
  }

  // The fields after the method, read in the order the layout lays them out.
  CompressedHeader header;
  header.version = static_cast<std::uint16_t>(*version);
  header.method = *method == 0 ? Compression::Zlib : Compression::Zstd;
  const detail::CcobLayout& layout = detail::ccob_layout(header.version);
  if (layout.total_size.width > 0) {
    auto total = read_field(cursor, layout.total_size, "total_size");
    COLOAD_RETURN_IF_ERROR(total);
    header.total_size = *total;
  }
  auto uncompressed = read_field(cursor, layout.uncompressed_size, "uncompressed_size");
  COLOAD_RETURN_IF_ERROR(uncompressed);
  header.uncompressed_size = *uncompressed;
  auto hash = read_field(cursor, layout.hash, "hash");
  COLOAD_RETURN_IF_ERROR(hash);
  header.hash = *hash;
  header.header_size = layout.header_size;

  std::string version_name = "CCOB v" + std::to_string(*version) + " header";
  if (header.total_size) {
    if (*header.total_size <= header.header_size) {
      return Error(ErrorKind::Malformed, version_name + ": total_size " + hex(*header.total_size) + " at offset " +
                                             hex(layout.total_size.offset) + " leaves no payload after the " +
                                             hex(header.header_size) + "-byte header")
          .at_field("total_size", layout.total_size.offset, *header.total_size, header.header_size);
    }
    if (auto fits =
            detail::check_range(version_name + ": total_size", 0, *header.total_size, bytes.size(), "the input");
        !fits) {
      return std::move(fits).error().at_field("total_size", layout.total_size.offset, *header.total_size, bytes.size());
    }
  }
  std::string uncompressed_at = hex(layout.uncompressed_size.offset);
  if (header.uncompressed_size > options.max_decompressed_bytes) {
    return Error(ErrorKind::LimitExceeded, version_name + ": uncompressed_size " + hex(header.uncompressed_size) +
                                               " at offset " + uncompressed_at + " exceeds the limit " +
                                               hex(options.max_decompressed_bytes) + " (max_decompressed_bytes)")
        .at_field("uncompressed_size", layout.uncompressed_size.offset, header.uncompressed_size,
                  options.max_decompressed_bytes);
  }
  if (header.uncompressed_size < kSmallestPlainBundle) {
    return Error(ErrorKind::Malformed, version_name + ": uncompressed_size " + hex(header.uncompressed_size) +
                                           " at offset " + uncompressed_at +
                                           " is smaller than an empty plain bundle (0x20 bytes)")
        .at_field("uncompressed_size", layout.uncompressed_size.offset, header.uncompressed_size);
  }
  return header;
}

Expected<std::uint64_t> compressed_bundle_size(std::span<const std::byte> bytes, const CompressedHeader& header,
                                               const ReadOptions& options) {
  if (header.total_size) return *header.total_size;
  if (bytes.size() < header.header_size) {
    return Error(ErrorKind::Truncated, "CCOB v1: input is shorter than its header");
  }
  if (header.uncompressed_size > options.max_decompressed_bytes) {
    return Error(ErrorKind::LimitExceeded, "CCOB v1: uncompressed_size " + hex(header.uncompressed_size) +
                                               " exceeds the limit " + hex(options.max_decompressed_bytes) +
                                               " (max_decompressed_bytes)")
        .at_field("uncompressed_size", detail::ccob_layout(header.version).uncompressed_size.offset,
                  header.uncompressed_size, options.max_decompressed_bytes);
  }
  Bytes payload = bytes.subspan(header.header_size);
  if (auto length = detail::measure_from_frame_headers(header.method, payload, header.uncompressed_size)) {
    return header.header_size + *length;
  }
  DiscardSink discard;
  auto consumed = detail::decode_stream(header.method, payload, header.uncompressed_size,
                                        detail::StreamEnd::EndOfExpected, discard);
  if (!consumed) return std::move(consumed).error().with_context("CCOB v1 (measuring the stream)");
  return header.header_size + *consumed;
}

Expected<std::vector<std::byte>> decompress_bundle(std::span<const std::byte> bytes, const CompressedHeader& header,
                                                   const ReadOptions& options) {
  VectorSink keep(header.uncompressed_size);
  COLOAD_RETURN_IF_ERROR(detail::decode_verified(bytes, header, options, keep));
  return keep.take();
}

detail::DecompressedBundle::DecompressedBundle(std::uint64_t capacity)
    : data_(static_cast<std::byte*>(window_memory::allocate(nullptr, capacity))), capacity_(capacity) {}

detail::DecompressedBundle::~DecompressedBundle() { window_memory::release(nullptr, data_); }

bool detail::DecompressedBundle::append(Bytes chunk) {
  if (chunk.size() > capacity_ - size_) return false;
  // A decoder writing into storage() hands back the bytes already in place.
  if (!chunk.empty() && chunk.data() != data_ + size_) std::memcpy(data_ + size_, chunk.data(), chunk.size());
  size_ += chunk.size();
  return true;
}

Expected<std::shared_ptr<const detail::DecompressedBundle>> detail::decompress_bundle_mapped(
    Bytes ccob, const CompressedHeader& header, const ReadOptions& options) {
  COLOAD_RETURN_IF_ERROR(check_decoded_limit(header, options));
  // Address space for the declared size; pages come only as bytes arrive.
  auto bundle = std::make_shared<DecompressedBundle>(header.uncompressed_size);
  if (!bundle->allocated()) {
    return Error(ErrorKind::LimitExceeded, "CCOB: cannot map " + hex(header.uncompressed_size) +
                                               " bytes (uncompressed_size) for the decompressed bundle");
  }
  MappedSink keep(*bundle);
  COLOAD_RETURN_IF_ERROR(decode_verified(ccob, header, options, keep));
  if (keep.overrun()) {
    return Error(ErrorKind::SizeMismatch,
                 "CCOB: decompressed data passes uncompressed_size " + hex(header.uncompressed_size));
  }
  return std::shared_ptr<const DecompressedBundle>(std::move(bundle));
}

}  // namespace coload
