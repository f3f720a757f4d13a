// `CCOB` compressed bundles: a small header and one zlib or zstd stream holding
// a complete plain bundle. The stored hash is the first 8 bytes of the MD5 of
// that plain bundle; clang never checks it, we always do.
#include <cstring>
#include <optional>
#include <string>

#include "bundle/decompress.h"
#include "bundle/md5_stream.h"
#include "bundle/verified_marks.h"
#include "bundle/window_memory.h"
#include "coload/bundle.h"
#include "common/bytes.h"

namespace coload {
namespace {

using detail::Bytes;
using detail::hex;

constexpr std::string_view kMagic = "CCOB";
constexpr std::uint64_t kSmallestPlainBundle = 32;  // magic + num_entries

std::uint64_t hash_offset(std::uint16_t version) { return version == 1 ? 12 : version == 2 ? 16 : 24; }

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
    keep_.write(chunk);
    if (md5_) md5_->update(chunk);
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

Expected<void> check_limit(const CompressedHeader& header, const ReadOptions& options) {
  if (header.uncompressed_size <= options.max_decompressed_bytes) return {};
  return Error(ErrorKind::LimitExceeded, "CCOB: uncompressed_size " + hex(header.uncompressed_size) +
                                             " exceeds the limit " + hex(options.max_decompressed_bytes));
}

/// Decodes the CCOB at bytes[0] into `keep` and checks what decompress_bundle
/// documents: the limit, total_size, the decoded size and the stored MD5
/// prefix (or a verified mark in its place).
Expected<void> decode_checked(Bytes bytes, const CompressedHeader& header, const ReadOptions& options,
                              detail::DecodeSink& keep) {
  if (auto fits = check_limit(header, options); !fits) return fits;
  std::uint64_t end = header.total_size.value_or(bytes.size());
  if (end > bytes.size() || end < header.header_size) {
    return Error(ErrorKind::OutOfBounds, "CCOB: total_size " + hex(end) + " does not fit the " +
                                             hex(bytes.size()) + " bytes given");
  }
  std::optional<detail::VerifiedMark> mark;
  if (!options.verified_cache.empty()) mark.emplace(options.verified_cache, bytes.first(end), header);
  bool checked_earlier = mark && mark->present();
  HashingSink sink(keep, !checked_earlier, header.uncompressed_size);
  auto end_rule = header.total_size ? detail::StreamEnd::EndOfInput : detail::StreamEnd::EndOfExpected;
  auto consumed = detail::decode_stream(header.method, bytes.subspan(header.header_size, end - header.header_size),
                                        header.uncompressed_size, end_rule, sink);
  if (!consumed) return std::move(consumed).error().with_context("CCOB v" + std::to_string(header.version));
  if (checked_earlier) return {};  // the size is still checked, by decode_stream
  std::uint64_t computed = sink.digest_low();
  if (computed != header.hash) {
    return Error(ErrorKind::HashMismatch, "CCOB v" + std::to_string(header.version) + ": stored hash " +
                                              hex(header.hash) + " at offset " + hex(hash_offset(header.version)) +
                                              " does not match " + hex(computed) + ", the MD5 prefix of the " +
                                              hex(header.uncompressed_size) + " decompressed bytes");
  }
  if (mark) mark->record();
  return {};
}

}  // namespace

Expected<CompressedHeader> parse_compressed_header(std::span<const std::byte> bytes, const ReadOptions& options) {
  detail::Cursor cursor(bytes, "CCOB header");
  auto magic = cursor.take("magic", kMagic.size());
  if (!magic) return std::move(magic).error();
  if (detail::as_chars(*magic) != kMagic) {
    return Error(ErrorKind::BadMagic, "CCOB header: offset 0x0 does not hold CCOB");
  }
  auto version = cursor.u16("version");
  if (!version) return std::move(version).error();
  auto method = cursor.u16("method");
  if (!method) return std::move(method).error();
  if (*version < 1 || *version > 3) {
    return Error(ErrorKind::UnsupportedVersion,
                 "CCOB header: version " + std::to_string(*version) + " at offset 0x4 is not 1, 2 or 3");
  }
  if (*method > 1) {
    return Error(ErrorKind::UnsupportedMethod, "CCOB header: method " + std::to_string(*method) +
                                                   " at offset 0x6 is not 0 (zlib) or 1 (zstd)");
  }

  CompressedHeader header;
  header.version = *version;
  header.method = *method == 0 ? Compression::Zlib : Compression::Zstd;
  std::uint64_t uncompressed_at = 8;
  if (*version == 1) {
    auto uncompressed = cursor.u32("uncompressed_size");
    if (!uncompressed) return std::move(uncompressed).error();
    header.uncompressed_size = *uncompressed;
  } else if (*version == 2) {
    auto total = cursor.u32("total_size");
    if (!total) return std::move(total).error();
    auto uncompressed = cursor.u32("uncompressed_size");
    if (!uncompressed) return std::move(uncompressed).error();
    header.total_size = *total;
    header.uncompressed_size = *uncompressed;
    uncompressed_at = 12;
  } else {
    auto total = cursor.u64("total_size");
    if (!total) return std::move(total).error();
    auto uncompressed = cursor.u64("uncompressed_size");
    if (!uncompressed) return std::move(uncompressed).error();
    header.total_size = *total;
    header.uncompressed_size = *uncompressed;
    uncompressed_at = 16;
  }
  auto hash = cursor.u64("hash");
  if (!hash) return std::move(hash).error();
  header.hash = *hash;
  header.header_size = static_cast<std::uint32_t>(cursor.position());

  std::string version_name = "CCOB v" + std::to_string(*version) + " header";
  if (header.total_size) {
    if (*header.total_size <= header.header_size) {
      return Error(ErrorKind::Malformed, version_name + ": total_size " + hex(*header.total_size) +
                                             " at offset 0x8 leaves no payload after the " +
                                             hex(header.header_size) + "-byte header");
    }
    if (auto fits = detail::check_range(version_name + ": total_size", 0, *header.total_size, bytes.size(),
                                        "the input");
        !fits) {
      return std::move(fits).error();
    }
  }
  if (header.uncompressed_size > options.max_decompressed_bytes) {
    return Error(ErrorKind::LimitExceeded, version_name + ": uncompressed_size " + hex(header.uncompressed_size) +
                                               " at offset " + hex(uncompressed_at) + " exceeds the limit " +
                                               hex(options.max_decompressed_bytes) + " (max_decompressed_bytes)");
  }
  if (header.uncompressed_size < kSmallestPlainBundle) {
    return Error(ErrorKind::Malformed, version_name + ": uncompressed_size " + hex(header.uncompressed_size) +
                                           " at offset " + hex(uncompressed_at) +
                                           " is smaller than an empty plain bundle (0x20 bytes)");
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
                                               " (max_decompressed_bytes)");
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
  if (auto checked = decode_checked(bytes, header, options, keep); !checked) return std::move(checked).error();
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
  if (auto fits = check_limit(header, options); !fits) return std::move(fits).error();
  // Address space for the declared size; pages come only as bytes arrive.
  auto bundle = std::make_shared<DecompressedBundle>(header.uncompressed_size);
  if (!bundle->allocated()) {
    return Error(ErrorKind::LimitExceeded, "CCOB: cannot map " + hex(header.uncompressed_size) +
                                               " bytes (uncompressed_size) for the decompressed bundle");
  }
  MappedSink keep(*bundle);
  if (auto checked = decode_checked(ccob, header, options, keep); !checked) return std::move(checked).error();
  if (keep.overrun()) {
    return Error(ErrorKind::SizeMismatch, "CCOB: decompressed data passes uncompressed_size " +
                                              hex(header.uncompressed_size));
  }
  return std::shared_ptr<const DecompressedBundle>(std::move(bundle));
}

}  // namespace coload
