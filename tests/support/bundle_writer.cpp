// Test-side writer for clang offload bundles and CCOBs; see bundle_writer.h.
#include "bundle_writer.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/MD5.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <memory>
#include <stdexcept>

namespace coload::testing {
namespace {

constexpr std::uint64_t kU32Max = std::numeric_limits<std::uint32_t>::max();
constexpr int kZstdDefaultLevel = 3;  // clang-offload-bundler's default since LLVM 19

std::uint64_t round_up(std::uint64_t value, std::uint64_t align) {
  if (align <= 1) return value;
  std::uint64_t rem = value % align;
  return rem == 0 ? value : value + (align - rem);
}

std::span<const std::byte> as_bytes(std::string_view s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

}  // namespace

// ---------------------------------------------------------------------------
// Helpers.

Bytes to_bytes(std::string_view s) {
  auto b = as_bytes(s);
  return Bytes(b.begin(), b.end());
}

void append(Bytes& buf, std::span<const std::byte> data) { buf.insert(buf.end(), data.begin(), data.end()); }

void store_le(std::span<std::byte> dst, std::uint64_t value, std::size_t width) {
  if (width == 0 || width > 8 || dst.size() < width) throw std::invalid_argument("store_le: bad width");
  for (std::size_t i = 0; i < width; ++i) dst[i] = static_cast<std::byte>((value >> (8 * i)) & 0xff);
}

void append_le(Bytes& buf, std::uint64_t value, std::size_t width) {
  std::size_t at = buf.size();
  buf.resize(at + width);
  store_le(std::span<std::byte>(buf).subspan(at, width), value, width);
}

void place(Bytes& buf, std::uint64_t offset, std::span<const std::byte> data) {
  std::uint64_t end = offset + data.size();
  if (end < offset) throw std::length_error("place: offset overflow");
  if (buf.size() < end) buf.resize(static_cast<std::size_t>(end), std::byte{0});
  std::copy(data.begin(), data.end(), buf.begin() + static_cast<std::ptrdiff_t>(offset));
}

void pad_to(Bytes& buf, std::uint64_t align) {
  if (align == 0) throw std::invalid_argument("pad_to: align must be >= 1");
  buf.resize(static_cast<std::size_t>(round_up(buf.size(), align)), std::byte{0});
}

std::uint64_t append_aligned(Bytes& buf, std::span<const std::byte> data, std::uint64_t align) {
  pad_to(buf, align);
  std::uint64_t at = buf.size();
  append(buf, data);
  return at;
}

Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::streamoff size = in.tellg();
  if (size < 0) throw std::runtime_error("cannot size " + path);
  in.seekg(0);
  Bytes out(static_cast<std::size_t>(size));
  if (size > 0 && !in.read(reinterpret_cast<char*>(out.data()), size)) throw std::runtime_error("cannot read " + path);
  return out;
}

void write_file(const std::string& path, std::span<const std::byte> data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot create " + path);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
}

// ---------------------------------------------------------------------------
// Plain bundles.

std::uint64_t plain_bundle_header_size(const std::vector<Entry>& entries) {
  std::uint64_t size = kBundleMagic.size() + 8;
  for (const Entry& e : entries) size += 24 + e.id.size();
  return size;
}

Bytes write_plain_bundle(const std::vector<Entry>& entries, std::uint64_t align) {
  if (align == 0) throw std::invalid_argument("write_plain_bundle: align must be >= 1");
  // Offsets first (docs/format.md, plain bundle): running offset from the header size.
  std::vector<std::uint64_t> offsets;
  offsets.reserve(entries.size());
  std::uint64_t running = plain_bundle_header_size(entries);
  for (const Entry& e : entries) {
    running = round_up(running, align);
    offsets.push_back(running);
    running += e.data.size();
  }

  Bytes out;
  out.reserve(static_cast<std::size_t>(running));
  append(out, as_bytes(kBundleMagic));
  append_le(out, entries.size(), 8);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    append_le(out, offsets[i], 8);
    append_le(out, entries[i].data.size(), 8);
    append_le(out, entries[i].id.size(), 8);
    append(out, as_bytes(entries[i].id));
  }
  for (std::size_t i = 0; i < entries.size(); ++i) place(out, offsets[i], entries[i].data);
  // A trailing size-0 entry (host listed last) points at the end: make sure the
  // zero padding up to that offset is present, as the bundler writes it.
  if (out.size() < running) out.resize(static_cast<std::size_t>(running), std::byte{0});
  return out;
}

RawEntry raw_entry(std::string id, std::uint64_t offset, std::uint64_t size) {
  RawEntry e;
  e.offset = offset;
  e.size = size;
  e.id_len = id.size();
  e.id = std::move(id);
  return e;
}

Bytes write_raw_bundle_header(const RawBundle& bundle) {
  Bytes out;
  append(out, as_bytes(bundle.magic));
  append_le(out, bundle.num_entries.value_or(bundle.entries.size()), 8);
  for (const RawEntry& e : bundle.entries) {
    append_le(out, e.offset, 8);
    append_le(out, e.size, 8);
    append_le(out, e.id_len, 8);
    append(out, as_bytes(e.id));
  }
  return out;
}

// ---------------------------------------------------------------------------
// CCOB.

std::size_t ccob_header_size(int version) {
  switch (version) {
    case 1: return 20;
    case 2: return 24;
    case 3: return 32;
    default: throw std::invalid_argument("CCOB version must be 1, 2 or 3");
  }
}

std::uint64_t ccob_hash(std::span<const std::byte> plain_bundle) {
  llvm::ArrayRef<std::uint8_t> data(reinterpret_cast<const std::uint8_t*>(plain_bundle.data()), plain_bundle.size());
  return llvm::MD5::hash(data).low();
}

Bytes compress(std::span<const std::byte> data, CcobMethod method, int level) {
  Bytes out;
  switch (method) {
    case CcobMethod::Zlib: {
      int zlevel = level < 0 ? Z_DEFAULT_COMPRESSION : level;
      if (data.size() > std::numeric_limits<uLong>::max()) throw std::length_error("zlib input too large");
      uLongf bound = compressBound(static_cast<uLong>(data.size()));
      out.resize(bound);
      int rc = compress2(reinterpret_cast<Bytef*>(out.data()), &bound, reinterpret_cast<const Bytef*>(data.data()),
                         static_cast<uLong>(data.size()), zlevel);
      if (rc != Z_OK) throw std::runtime_error("compress2 failed: " + std::to_string(rc));
      out.resize(bound);
      return out;
    }
    case CcobMethod::Zstd:
      // As the bundler: long-distance matching, whose 2^27 window makes every
      // frame up to 128 MiB single-segment (its window is its content).
      return compress_zstd(data, {.level = level < 0 ? kZstdDefaultLevel : level, .long_distance = true});
  }
  throw std::invalid_argument("unknown CcobMethod");
}

Bytes compress_zstd(std::span<const std::byte> data, ZstdFrame frame) {
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> context(ZSTD_createCCtx(), &ZSTD_freeCCtx);
  ZSTD_CCtx_setParameter(context.get(), ZSTD_c_compressionLevel, frame.level);
  ZSTD_CCtx_setParameter(context.get(), ZSTD_c_enableLongDistanceMatching, frame.long_distance ? 1 : 0);
  if (frame.window_log > 0) ZSTD_CCtx_setParameter(context.get(), ZSTD_c_windowLog, frame.window_log);
  ZSTD_CCtx_setParameter(context.get(), ZSTD_c_contentSizeFlag, frame.content_size ? 1 : 0);
  ZSTD_CCtx_setParameter(context.get(), ZSTD_c_checksumFlag, frame.checksum ? 1 : 0);
  Bytes out(ZSTD_compressBound(data.size()));
  std::size_t n = ZSTD_compress2(context.get(), out.data(), out.size(), data.data(), data.size());
  if (ZSTD_isError(n)) throw std::runtime_error(std::string("ZSTD_compress2 failed: ") + ZSTD_getErrorName(n));
  out.resize(n);
  if (frame.declared_window_log > 0) {
    // RFC 8878 3.1.1.1: after the 4-byte magic, the Frame_Header_Descriptor
    // (bit 5: Single_Segment_flag), then the Window_Descriptor (exponent in
    // the high 5 bits, windowLog = 10 + exponent; mantissa 0).
    if (frame.content_size || (std::to_integer<unsigned>(out[4]) & 0x20) != 0 || frame.declared_window_log < 10 ||
        frame.declared_window_log > 41) {
      throw std::invalid_argument("declared_window_log needs a frame with a window descriptor");
    }
    if ((std::to_integer<unsigned>(out[5]) >> 3) + 10 > static_cast<unsigned>(frame.declared_window_log)) {
      throw std::invalid_argument("declared_window_log is below the window the frame uses");
    }
    out[5] = std::byte(static_cast<std::uint8_t>((frame.declared_window_log - 10) << 3));
  }
  return out;
}

Bytes compress_zeros(std::uint64_t size, CcobMethod method) {
  const Bytes zeros(std::size_t{1} << 20);
  Bytes chunk(ZSTD_CStreamOutSize() + compressBound(static_cast<uLong>(zeros.size())));
  Bytes out;
  std::uint64_t left = size;
  switch (method) {
    case CcobMethod::Zlib: {
      // Z_RLE looks for runs only: the fastest strategy for zeros, same ratio.
      z_stream stream{};
      if (deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15, 9, Z_RLE) != Z_OK)
        throw std::runtime_error("deflateInit2 failed");
      int rc = Z_OK;
      do {
        auto take = static_cast<uInt>(std::min<std::uint64_t>(left, zeros.size()));
        left -= take;
        stream.next_in = const_cast<Bytef*>(reinterpret_cast<const Bytef*>(zeros.data()));
        stream.avail_in = take;
        do {
          stream.next_out = reinterpret_cast<Bytef*>(chunk.data());
          stream.avail_out = static_cast<uInt>(chunk.size());
          rc = deflate(&stream, left == 0 ? Z_FINISH : Z_NO_FLUSH);
          out.insert(out.end(), chunk.begin(), chunk.end() - stream.avail_out);
        } while (stream.avail_out == 0);
      } while (left > 0);
      deflateEnd(&stream);
      if (rc != Z_STREAM_END) throw std::runtime_error("deflate failed: " + std::to_string(rc));
      return out;
    }
    case CcobMethod::Zstd: {
      std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> context(ZSTD_createCCtx(), &ZSTD_freeCCtx);
      ZSTD_CCtx_setParameter(context.get(), ZSTD_c_compressionLevel, kZstdDefaultLevel);
      ZSTD_CCtx_setPledgedSrcSize(context.get(), size);  // the frame header states the content size
      std::size_t remaining = 0;
      do {
        auto take = static_cast<std::size_t>(std::min<std::uint64_t>(left, zeros.size()));
        left -= take;
        ZSTD_inBuffer in{zeros.data(), take, 0};
        do {
          ZSTD_outBuffer buffer{chunk.data(), chunk.size(), 0};
          remaining = ZSTD_compressStream2(context.get(), &buffer, &in, left == 0 ? ZSTD_e_end : ZSTD_e_continue);
          if (ZSTD_isError(remaining))
            throw std::runtime_error(std::string("ZSTD_compressStream2 failed: ") + ZSTD_getErrorName(remaining));
          out.insert(out.end(), chunk.begin(), chunk.begin() + buffer.pos);
        } while (in.pos < in.size || (left == 0 && remaining != 0));
      } while (left > 0);
      return out;
    }
  }
  throw std::invalid_argument("unknown CcobMethod");
}

Bytes zstd_skippable_frame(std::span<const std::byte> content, unsigned nibble) {
  if (nibble > 15) throw std::invalid_argument("skippable frame nibble must be 0..15");
  if (content.size() > kU32Max) throw std::length_error("skippable frame too large");
  Bytes out;
  append_le(out, 0x184D2A50u + nibble, 4);
  append_le(out, content.size(), 4);
  append(out, content);
  return out;
}

Bytes write_ccob(std::span<const std::byte> plain_bundle, int version, CcobMethod method, const CcobOptions& options) {
  const std::size_t header_size = ccob_header_size(version);
  const CcobOverrides& ov = options.overrides;

  Bytes body = options.payload_prefix;
  if (options.payload)
    append(body, *options.payload);
  else
    append(body, compress(plain_bundle, method, options.level));
  append(body, options.payload_suffix);

  const std::uint64_t total = header_size + body.size();
  const std::uint64_t total_field = ov.total_size.value_or(total);
  const std::uint64_t unc_field = ov.uncompressed_size.value_or(plain_bundle.size());
  const std::uint64_t hash_field = ov.hash.value_or(ccob_hash(plain_bundle));
  if (version < 3) {
    if (!ov.uncompressed_size && plain_bundle.size() > kU32Max)
      throw std::length_error("uncompressed size exceeds the version 1/2 limit");
    if (version == 2 && !ov.total_size && total > kU32Max)
      throw std::length_error("total size exceeds the version 2 limit");
  }

  Bytes out;
  out.reserve(static_cast<std::size_t>(total));
  append(out, as_bytes(kCcobMagic));
  append_le(out, ov.version.value_or(static_cast<std::uint16_t>(version)), 2);
  append_le(out, ov.method.value_or(static_cast<std::uint16_t>(method)), 2);
  switch (version) {
    case 1:  // u32 uncompressed_size @8, u64 hash @12
      append_le(out, unc_field, 4);
      break;
    case 2:  // u32 total_size @8, u32 uncompressed_size @12, u64 hash @16
      append_le(out, total_field, 4);
      append_le(out, unc_field, 4);
      break;
    case 3:  // u64 total_size @8, u64 uncompressed_size @16, u64 hash @24
      append_le(out, total_field, 8);
      append_le(out, unc_field, 8);
      break;
  }
  append_le(out, hash_field, 8);
  append(out, body);
  return out;
}

}  // namespace coload::testing
