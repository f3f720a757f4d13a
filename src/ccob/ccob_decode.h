// Internal: decoding a CCOB and checking it against its header. One routine
// behind decompress_bundle, read_bundle (decompress_bundle_mapped) and the
// selecting stream (coload/detail/stream_select.h); each brings its own sink for
// the decoded bytes. Defined in compressed_bundle.cpp. Does not cover parsing
// the header (parse_compressed_header) or the plain bundle inside.
#pragma once

#include <cstdint>

#include "ccob/decompress.h"
#include "coload/bundle.h"
#include "common/bytes.h"

namespace coload::detail {

/// What became of the stored hash.
enum class HashOutcome : std::uint8_t {
  Checked,         ///< the whole stream decoded, and its MD5 prefix matched
  CheckedEarlier,  ///< a verified mark stood for the MD5 (ccob/verified_marks.h)
  NotChecked,      ///< not asked for (VerifyOptions::check_hash false)
};

/// What decode_verified checks of the stored hash.
struct VerifyOptions {
  /// True: MD5 the whole stream and check the stored hash, unless a mark in
  /// ReadOptions::verified_cache says these bytes were checked; record a
  /// mark when it matches. With marks in use, the CCOB is first copied
  /// into memory of its own, and both the mark's name and the decoder read
  /// that copy (docs/reading-rules.md, "Files"). False (a Skip-mode
  /// stream): no MD5, no marks, no copy.
  bool check_hash = true;
};

/// LimitExceeded when header.uncompressed_size passes
/// options.max_decompressed_bytes: decode_verified's first check, for a
/// caller that must know before it allocates: "CCOB v3: uncompressed_size X
/// exceeds the limit Y (max_decompressed_bytes)", at the header's field.
Expected<void> check_decoded_limit(const CompressedHeader& header, const ReadOptions& options);

/// Decodes the CCOB at ccob[0] (`header` parsed from it, perhaps under other
/// options) into `keep`, checking in order: the limit, that total_size fits
/// `ccob`, the stream and its decoded size (decode_stream), and the stored
/// hash as `verify` says. `keep` hears begin() first, true when the whole
/// stream is hashed (a sink that could stop early then reads on); its done()
/// stops the decode, unchecked past that point. Errors: LimitExceeded,
/// OutOfBounds (total_size), those of decode_stream (with "CCOB vN: " in
/// front), HashMismatch.
Expected<HashOutcome> decode_verified(Bytes ccob, const CompressedHeader& header, const ReadOptions& options,
                                      DecodeSink& keep, VerifyOptions verify = {});

}  // namespace coload::detail
