// A verified mark stands for exactly the bytes the decoder consumed
// (docs/reading-rules.md, "Files"). The input here changes between the mark's
// lookup and the decode, as a file rewritten under its mapping does: the
// sink's begin(), called after the lookup and before the first byte is
// decoded, rewrites the payload. Neither a different output without its
// hash checked nor a mark for bytes never checked may come of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "ccob/ccob_decode.h"
#include "ccob/ccob_layout.h"
#include "coload/bundle.h"
#include "stream_select_test_support.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using namespace stream_select_test;

/// Keeps what is decoded; begin() runs `rewrite` first.
class RewritingSink final : public detail::DecodeSink {
 public:
  explicit RewritingSink(std::function<void()> rewrite) : rewrite_(std::move(rewrite)) {}
  void begin(bool) override {
    if (rewrite_) rewrite_();
  }
  void write(detail::Bytes chunk) override { kept.insert(kept.end(), chunk.begin(), chunk.end()); }
  Bytes kept;

 private:
  std::function<void()> rewrite_;
};

/// Two CCOBs of one length and one header whose payloads decode, without
/// error, to different bundles: B is A with one payload byte changed (the
/// first, from the middle on, that still decodes; a literal).
struct Pair {
  Bytes plain_a, plain_b, ccob_a, ccob_b;
  CompressedHeader header_a;
};

Pair make_pair() {
  Pair pair;
  pair.plain_a = three_entry_bundle();
  pair.ccob_a = testing::write_ccob(pair.plain_a, 3, CcobMethod::Zstd);
  auto header = parse_compressed_header(pair.ccob_a, {});
  EXPECT_TRUE(Succeeds(header));
  pair.header_a = *header;
  for (std::size_t at = pair.ccob_a.size() / 2; at < pair.ccob_a.size(); ++at) {
    Bytes changed = pair.ccob_a;
    changed[at] ^= std::byte{0x01};
    RewritingSink decoded(nullptr);
    if (detail::decode_verified(changed, pair.header_a, {}, decoded, {.check_hash = false}) &&
        decoded.kept.size() == pair.plain_a.size() && decoded.kept != pair.plain_a) {
      pair.ccob_b = std::move(changed);
      pair.plain_b = std::move(decoded.kept);
      break;
    }
  }
  EXPECT_FALSE(pair.ccob_b.empty()) << "no payload byte of A could change and still decode";
  return pair;
}

/// Overwrites the payload of `target` with that of `source` (same header size).
void put_payload(Bytes& target, const Bytes& source, const CompressedHeader& header) {
  std::copy(source.begin() + static_cast<std::ptrdiff_t>(header.header_size), source.end(),
            target.begin() + static_cast<std::ptrdiff_t>(header.header_size));
}

// A mark for A is found; the payload becomes B's before decoding. Skipping
// the MD5 for B's bytes would return B's bundle as checked.
TEST(VerifiedMarkRace, BytesChangingAfterTheLookupAreNotTrusted) {
  Pair pair = make_pair();
  ASSERT_FALSE(pair.ccob_b.empty());
  testing::ScratchDirectory cache;
  ReadOptions options{.verified_cache = cache.str()};
  RewritingSink first(nullptr);
  ASSERT_TRUE(Succeeds(detail::decode_verified(pair.ccob_a, pair.header_a, options, first)));  // marks A

  Bytes input = pair.ccob_a;
  RewritingSink sink([&] { put_payload(input, pair.ccob_b, pair.header_a); });
  auto outcome = detail::decode_verified(input, pair.header_a, options, sink);
  if (outcome) {
    EXPECT_TRUE(sink.kept == pair.plain_a) << "bytes that changed after the lookup were decoded as checked";
  } else {
    EXPECT_EQ(outcome.error().kind(), ErrorKind::HashMismatch) << outcome.error().message();
  }
}

// The input is A's header with B's payload (a wrong stored hash); before the
// decode it becomes A. Recording the mark looked up, the name of the bad
// bytes, would make them pass every later check.
TEST(VerifiedMarkRace, NoMarkForBytesThatWereNotChecked) {
  Pair pair = make_pair();
  ASSERT_FALSE(pair.ccob_b.empty());
  Bytes bad = pair.ccob_a;
  put_payload(bad, pair.ccob_b, pair.header_a);
  testing::ScratchDirectory cache;
  ReadOptions options{.verified_cache = cache.str()};

  Bytes input = bad;
  RewritingSink sink([&] { put_payload(input, pair.ccob_a, pair.header_a); });
  (void)detail::decode_verified(input, pair.header_a, options, sink);  // either outcome: what matters is the mark

  RewritingSink again(nullptr);
  EXPECT_TRUE(FailsWith(detail::decode_verified(bad, pair.header_a, options, again), ErrorKind::HashMismatch));
}

}  // namespace
}  // namespace coload
