#include "ccob/decompress.h"

#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_customMem, exported by the shared libzstd too
#include <zstd.h>
#include <zstd_errors.h>

#include <array>
#include <memory>
#include <optional>
#include <string>

#include "io/read_pages.h"
#include "io/window_memory.h"

namespace coload::detail {
namespace {

constexpr std::size_t kChunkSize = 128 * 1024;
// libzstd's default window limit: every level LLVM writes, long-distance
// matching included, stays within it.
constexpr std::uint64_t kWindowLimit = std::uint64_t{1} << ZSTD_WINDOWLOG_LIMIT_DEFAULT;

Error size_mismatch(std::string_view codec, std::uint64_t produced, std::uint64_t expected, std::uint64_t at) {
  return Error(ErrorKind::SizeMismatch, std::string(codec) + " payload: decompressed data reaches " + hex(produced) +
                                            " bytes at payload offset " + hex(at) + " but uncompressed_size is " +
                                            hex(expected));
}

constexpr ZSTD_customMem kWindowMemory{window_memory::allocate, window_memory::release, nullptr};

using ZstdContext = std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)>;

// A context (with its window buffers) kept per thread between calls, so the
// many small bundles of a host image do not each allocate and fault in a
// fresh one. One that grew past kKeptContextBytes (a large frame's window)
// is freed after its call; its window's mapping is then kept, lazily freed,
// for the next large frame (io/window_memory.h).
constexpr std::size_t kKeptContextBytes = std::size_t{4} << 20;

class ZstdLease {
 public:
  ZstdLease() : context_(take()) {}
  ~ZstdLease() {
    if (context_ && ZSTD_sizeof_DCtx(context_.get()) <= kKeptContextBytes && !kept()) kept() = std::move(context_);
  }
  ZstdLease(const ZstdLease&) = delete;
  ZstdLease& operator=(const ZstdLease&) = delete;
  ZSTD_DCtx* get() const { return context_.get(); }

 private:
  static ZstdContext& kept() {
    thread_local ZstdContext context(nullptr, &ZSTD_freeDCtx);
    return context;
  }
  static ZstdContext take() {
    ZstdContext context = std::move(kept());
    if (context && ZSTD_isError(ZSTD_DCtx_reset(context.get(), ZSTD_reset_session_and_parameters)) == 0) {
      return context;
    }
    return ZstdContext(ZSTD_createDCtx_advanced(kWindowMemory), &ZSTD_freeDCtx);
  }
  ZstdContext context_;
};

Error zstd_error(std::size_t status, std::uint64_t expected, std::uint64_t at) {
  // Out of room happens only in place, where the output is exactly the declared size.
  if (ZSTD_getErrorCode(status) == ZSTD_error_dstSize_tooSmall) {
    return Error(ErrorKind::SizeMismatch, "zstd payload: decompressed data passes uncompressed_size " + hex(expected) +
                                              " near payload offset " + hex(at));
  }
  return Error(ErrorKind::CorruptData,
               std::string("zstd payload: ") + ZSTD_getErrorName(status) + " near payload offset " + hex(at));
}

Error zstd_truncated(std::uint64_t payload_size, std::uint64_t produced, std::uint64_t expected) {
  return Error(ErrorKind::Truncated, "zstd payload: stream ends inside a frame after " + hex(payload_size) +
                                         " payload bytes (" + hex(produced) + " of " + hex(expected) +
                                         " bytes decompressed)");
}

Error zstd_size_mismatch(std::uint64_t produced, std::uint64_t expected) {
  return Error(ErrorKind::SizeMismatch,
               "zstd payload: decompressed to " + hex(produced) + " bytes but uncompressed_size is " + hex(expected));
}

std::optional<ZSTD_frameHeader> frame_header(Bytes payload) {
  ZSTD_frameHeader frame;
  if (ZSTD_getFrameHeader(&frame, payload.data(), payload.size()) != 0 || frame.frameType != ZSTD_frame) {
    return std::nullopt;
  }
  return frame;
}

struct WindowRelease {
  void operator()(std::byte* buffer) const { window_memory::release(nullptr, buffer); }
};

// Where a decode stands: payload bytes read, bytes decoded.
struct Position {
  std::size_t read = 0;
  std::uint64_t written = 0;
};

// Decodes the payload from `from` on into `output`, exactly the bytes left
// of the declared size, with libzstd's buffer-less API: a block at a time,
// each matched against the blocks before it in `output`, so libzstd keeps no
// window and copies nothing, and the sink sees the output block by block (a
// Skip-mode stop overshoots by at most one block). `from` is a frame's start.
Expected<std::uint64_t> decode_zstd_in_place(ZSTD_DCtx* context, std::span<std::byte> output, Bytes payload,
                                             Position from, StreamEnd end, DecodeSink& sink) {
  const std::uint64_t expected = from.written + output.size();
  std::size_t read = from.read;
  std::size_t written = 0;
  ReadPages pages(payload);
  for (;;) {  // a frame per pass
    std::size_t status = ZSTD_decompressBegin(context);
    if (ZSTD_isError(status)) return zstd_error(status, expected, read);
    for (std::size_t need; (need = ZSTD_nextSrcSizeToDecompress(context)) != 0;) {
      if (need > payload.size() - read) return zstd_truncated(payload.size(), from.written + written, expected);
      std::size_t made = ZSTD_decompressContinue(context, output.data() + written, output.size() - written,
                                                 payload.data() + read, need);
      if (ZSTD_isError(made)) return zstd_error(made, expected, read);
      read += need;
      pages.read_to(read);
      if (made > 0) sink.write(Bytes(output.data() + written, made));
      written += made;
      if (sink.done()) return static_cast<std::uint64_t>(read);
    }
    if (end == StreamEnd::EndOfExpected && written == output.size()) break;
    if (read == payload.size()) break;
  }
  if (written != output.size()) return zstd_size_mismatch(from.written + written, expected);
  return static_cast<std::uint64_t>(read);
}

// Decodes the rest into scratch memory of the size left.
Expected<std::uint64_t> decode_zstd_in_scratch(ZSTD_DCtx* context, Bytes payload, Position from, std::uint64_t expected,
                                               StreamEnd end, DecodeSink& sink) {
  const std::uint64_t left = expected - from.written;
  std::unique_ptr<std::byte, WindowRelease> scratch(
      static_cast<std::byte*>(window_memory::allocate(nullptr, static_cast<std::size_t>(left))));
  if (!scratch) return Error(ErrorKind::LimitExceeded, "zstd payload: cannot allocate " + hex(left) + " bytes");
  return decode_zstd_in_place(context, {scratch.get(), static_cast<std::size_t>(left)}, payload, from, end, sink);
}

// libzstd refuses a frame whose window passes its limit; decoded in place,
// such a frame costs no more than the declared size (bounded by
// max_decompressed_bytes), as read_bundle takes it.
bool window_past_limit(Bytes payload, std::size_t at) {
  std::optional<ZSTD_frameHeader> frame = frame_header(payload.subspan(at));
  return frame && frame->windowSize > kWindowLimit;
}

Expected<std::uint64_t> decode_zstd(Bytes payload, std::uint64_t expected, StreamEnd end, DecodeSink& sink) {
  ZstdLease context;
  if (!context.get()) return Error(ErrorKind::LimitExceeded, "zstd payload: cannot allocate a decoder");
  // In place when the output has a home of its own (read_bundle's bundle).
  // Else in scratch memory of the content's size when the frame's window
  // holds the whole content, as in the single-segment frame the bundler
  // writes: that memory replaces the window libzstd would allocate, at no
  // extra cost. Not below 2 MiB: small scratch, taken and freed per CCOB,
  // would move glibc's mmap threshold under the host. A frame whose window
  // passes libzstd's limit goes there at any size (window_past_limit).
  std::optional<ZSTD_frameHeader> frame = frame_header(payload);
  if (std::span<std::byte> output = sink.output(); frame && output.size() == expected && expected > 0) {
    return decode_zstd_in_place(context.get(), output, payload, {}, end, sink);
  }
  if (frame &&
      ((frame->windowSize >= expected && expected >= window_memory::kHugePage) || frame->windowSize > kWindowLimit)) {
    return decode_zstd_in_scratch(context.get(), payload, {}, expected, end, sink);
  }
  auto buffer = std::make_unique<std::byte[]>(kChunkSize);
  ReadPages pages(payload);
  ZSTD_inBuffer in{payload.data(), payload.size(), 0};
  std::uint64_t produced = 0;
  for (;;) {
    ZSTD_outBuffer out{buffer.get(), kChunkSize, 0};
    std::size_t status = ZSTD_decompressStream(context.get(), &out, &in);
    if (ZSTD_isError(status)) return zstd_error(status, expected, in.pos);
    pages.read_to(in.pos);
    produced += out.pos;
    if (produced > expected) return size_mismatch("zstd", produced, expected, in.pos);
    if (out.pos > 0) sink.write(Bytes(buffer.get(), out.pos));
    if (sink.done()) return static_cast<std::uint64_t>(in.pos);
    if (status == 0) {  // a frame ended; libzstd stops there
      if (end == StreamEnd::EndOfExpected && produced == expected) break;
      if (in.pos == in.size) break;
      if (window_past_limit(payload, in.pos)) {
        return decode_zstd_in_scratch(context.get(), payload, {in.pos, produced}, expected, end, sink);
      }
      continue;
    }
    if (in.pos == in.size && out.pos < out.size) return zstd_truncated(in.size, produced, expected);
  }
  if (produced != expected) return zstd_size_mismatch(produced, expected);
  return static_cast<std::uint64_t>(in.pos);
}

Expected<std::uint64_t> decode_zlib(Bytes payload, std::uint64_t expected, StreamEnd end, DecodeSink& sink) {
  z_stream stream{};
  if (inflateInit(&stream) != Z_OK) return Error(ErrorKind::LimitExceeded, "zlib payload: cannot allocate a decoder");
  std::unique_ptr<z_stream, decltype(&inflateEnd)> guard(&stream, &inflateEnd);
  auto buffer = std::make_unique<Bytef[]>(kChunkSize);
  ReadPages pages(payload);
  std::uint64_t consumed = 0;
  std::uint64_t produced = 0;
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    // avail_in is 32-bit: feed large payloads in slices.
    if (stream.avail_in == 0 && consumed < payload.size()) {
      auto slice = static_cast<uInt>(std::min<std::uint64_t>(payload.size() - consumed, 1u << 30));
      stream.next_in = const_cast<Bytef*>(reinterpret_cast<const Bytef*>(payload.data() + consumed));
      stream.avail_in = slice;
      consumed += slice;
    }
    stream.next_out = buffer.get();
    stream.avail_out = kChunkSize;
    status = inflate(&stream, Z_NO_FLUSH);
    std::uint64_t at = consumed - stream.avail_in;
    pages.read_to(static_cast<std::size_t>(at));
    if (status == Z_NEED_DICT || status == Z_DATA_ERROR || status == Z_STREAM_ERROR || status == Z_MEM_ERROR) {
      return Error(ErrorKind::CorruptData, std::string("zlib payload: ") +
                                               (stream.msg ? stream.msg : "error " + std::to_string(status)) +
                                               " near payload offset " + hex(at));
    }
    std::uint64_t written = kChunkSize - stream.avail_out;
    produced += written;
    if (produced > expected) return size_mismatch("zlib", produced, expected, at);
    if (written > 0) sink.write(Bytes(reinterpret_cast<const std::byte*>(buffer.get()), written));
    if (sink.done()) return consumed - stream.avail_in;
    if (status == Z_BUF_ERROR && stream.avail_in == 0 && consumed == payload.size()) {
      return Error(ErrorKind::Truncated, "zlib payload: stream ends early after " + hex(payload.size()) +
                                             " payload bytes (" + hex(produced) + " of " + hex(expected) +
                                             " bytes decompressed)");
    }
  }
  std::uint64_t used = consumed - stream.avail_in;
  if (produced != expected) {
    return Error(ErrorKind::SizeMismatch,
                 "zlib payload: decompressed to " + hex(produced) + " bytes but uncompressed_size is " + hex(expected));
  }
  if (end == StreamEnd::EndOfInput && used != payload.size()) {
    return Error(ErrorKind::SizeMismatch, "zlib payload: stream ends at payload offset " + hex(used) + " but " +
                                              hex(payload.size() - used) + " more bytes lie within total_size");
  }
  return used;
}

}  // namespace

std::optional<std::uint64_t> measure_from_frame_headers(Compression method, Bytes payload,
                                                        std::uint64_t expected_size) {
  if (method != Compression::Zstd) return std::nullopt;  // deflate blocks end only where decoding ends them
  std::size_t at = 0;
  std::uint64_t declared = 0;
  while (at < payload.size()) {
    Bytes rest = payload.subspan(at);
    ZSTD_frameHeader frame;
    if (ZSTD_getFrameHeader(&frame, rest.data(), rest.size()) != 0) return std::nullopt;
    if (frame.frameType == ZSTD_frame) {
      if (frame.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN || frame.frameContentSize > expected_size - declared) {
        return std::nullopt;
      }
      declared += frame.frameContentSize;
    }
    std::size_t length = ZSTD_findFrameCompressedSize(rest.data(), rest.size());  // walks the block headers
    if (ZSTD_isError(length)) return std::nullopt;
    at += length;
    if (declared == expected_size) return static_cast<std::uint64_t>(at);
  }
  return std::nullopt;
}

Expected<std::uint64_t> decode_stream(Compression method, Bytes payload, std::uint64_t expected_size, StreamEnd end,
                                      DecodeSink& sink) {
  switch (method) {
    case Compression::Zstd: return decode_zstd(payload, expected_size, end, sink);
    case Compression::Zlib: return decode_zlib(payload, expected_size, end, sink);
    case Compression::None: break;
  }
  return Error(ErrorKind::UnsupportedMethod, "payload: no compression method to decode with");
}

}  // namespace coload::detail
