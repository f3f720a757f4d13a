// Internal: streaming zstd / zlib decoding of a CCOB payload into a sink, with
// the output bounded by the size the header declares. Streaming keeps memory
// bounded by what the sink keeps plus the decoder's window, and lets a v1
// CCOB (no total size) be measured without holding its output. A zstd frame
// whose window is its whole content is decoded in place instead, into memory
// of that size, which replaces the window and the copies out of it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "coload/bundle.h"
#include "common/bytes.h"

namespace coload::detail {

/// Receives decompressed bytes in order.
class DecodeSink {
 public:
  virtual ~DecodeSink() = default;
  /// Called by decode_verified (ccob/ccob_decode.h) before the first
  /// write: true when the whole stream is decoded anyway (to check its
  /// hash), so a sink that could stop early may keep reading instead.
  virtual void begin(bool /*whole_stream*/) {}
  virtual void write(Bytes chunk) = 0;
  /// True once the sink needs no more bytes: decode_stream then returns
  /// early, without its end-of-stream and size checks.
  virtual bool done() const { return false; }
  /// Memory of exactly the declared size that the decoder may write the whole
  /// output into, in order; write() then receives views into it. Empty (the
  /// default): write() receives the decoder's own chunks.
  virtual std::span<std::byte> output() { return {}; }
};

/// Where a payload ends.
enum class StreamEnd {
  EndOfInput,     ///< v2/v3: the payload is exactly total_size - header; all of it must decode
  EndOfExpected,  ///< v1: stop after the frame that completes `expected_size` bytes
};

/// Decodes `payload` into `sink`. Returns the number of payload bytes consumed
/// (so far, when the sink reported done() and decoding stopped early).
/// Errors: CorruptData (decoder error), Truncated (stream ends early),
/// SizeMismatch (more or fewer than expected_size bytes, or input left over).
Expected<std::uint64_t> decode_stream(Compression method, Bytes payload, std::uint64_t expected_size, StreamEnd end,
                                      DecodeSink& sink);

/// The length of a v1 payload (as StreamEnd::EndOfExpected ends it) from its
/// zstd frame and block headers alone, without decoding: the frames up to the
/// one whose declared content sizes reach `expected_size`, a skippable frame
/// counting as a frame with no content. nullopt where the headers cannot tell
/// (zlib; a frame without its content size; a malformed or cut frame; sizes
/// that pass `expected_size` or never reach it): decode_stream measures the
/// payload then, and names what is wrong. Corrupt block contents go unnoticed
/// here; decoding the bundle finds them.
std::optional<std::uint64_t> measure_from_frame_headers(Compression method, Bytes payload, std::uint64_t expected_size);

/// A bundle decompressed into memory from window_memory: a large one on huge
/// pages, so reading it faults a few hundred times instead of once per 4 KiB.
class DecompressedBundle {
 public:
  explicit DecompressedBundle(std::uint64_t capacity);
  ~DecompressedBundle();
  DecompressedBundle(const DecompressedBundle&) = delete;
  DecompressedBundle& operator=(const DecompressedBundle&) = delete;

  /// False when `capacity` bytes could not be had.
  bool allocated() const { return data_ != nullptr; }
  /// Appends `chunk`; false, writing nothing, when it would pass the capacity.
  bool append(Bytes chunk);
  /// All `capacity` bytes, for a decoder to write into in place; each write
  /// is then taken in with append() of the bytes just written.
  std::span<std::byte> storage() { return {data_, data_ ? capacity_ : 0}; }
  Bytes bytes() const { return Bytes(data_, size_); }

 private:
  std::byte* data_;
  std::uint64_t capacity_;
  std::uint64_t size_ = 0;
};

/// decompress_bundle (checks, errors and verified marks included) into a
/// DecompressedBundle: read_bundle's storage.
Expected<std::shared_ptr<const DecompressedBundle>> decompress_bundle_mapped(Bytes ccob, const CompressedHeader& header,
                                                                             const ReadOptions& options);

}  // namespace coload::detail
