#include <gtest/gtest.h>

#include "ccob/decompress.h"
#include "ccob/verified_marks.h"
#include "coload/bundle.h"
#include "coload/fat_binary.h"
#include "common/bytes.h"
#include "support/bundle_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::Bytes;
using testing::CcobMethod;
using testing::FailsWith;
using testing::file_names;
using testing::Succeeds;

Bytes sample_plain_bundle() {
  Bytes code(5000);
  for (std::size_t i = 0; i < code.size(); ++i) code[i] = std::byte(static_cast<std::uint8_t>(i * 13 + i / 7));
  // The magic strings inside the payload must not confuse anything.
  auto magic = testing::to_bytes("CCOB__CLANG_OFFLOAD_BUNDLE__CCOB");
  std::copy(magic.begin(), magic.end(), code.begin() + 100);
  return testing::write_plain_bundle({{"host-x86_64-unknown-linux-gnu-", {}},
                                      {"hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", code},
                                      {"hipv4-amdgcn-amd-amdhsa--gfx942", Bytes(777, std::byte{0x5a})}});
}

struct Variant {
  int version;
  CcobMethod method;
};

class EveryVariant : public ::testing::TestWithParam<Variant> {};

TEST_P(EveryVariant, HeaderDecompressionAndHash) {
  Bytes plain = sample_plain_bundle();
  Bytes ccob = testing::write_ccob(plain, GetParam().version, GetParam().method);
  auto header = parse_compressed_header(ccob);
  ASSERT_TRUE(Succeeds(header));
  EXPECT_EQ(header->version, GetParam().version);
  EXPECT_EQ(header->method, GetParam().method == CcobMethod::Zstd ? Compression::Zstd : Compression::Zlib);
  EXPECT_EQ(header->header_size, testing::ccob_header_size(GetParam().version));
  EXPECT_EQ(header->uncompressed_size, plain.size());
  EXPECT_EQ(header->hash, testing::ccob_hash(plain));
  EXPECT_EQ(header->total_size.has_value(), GetParam().version >= 2);

  auto size = compressed_bundle_size(ccob, *header);
  ASSERT_TRUE(Succeeds(size));
  EXPECT_EQ(*size, ccob.size());  // v1 measured from the stream, v2/v3 from total_size

  auto decompressed = decompress_bundle(ccob, *header);
  ASSERT_TRUE(Succeeds(decompressed));
  EXPECT_EQ(*decompressed, plain);
}

TEST_P(EveryVariant, WrongHashIsAnErrorNamingBothValues) {
  Bytes plain = sample_plain_bundle();
  testing::CcobOptions options;
  options.overrides.hash = testing::ccob_hash(plain) ^ 1;
  Bytes ccob = testing::write_ccob(plain, GetParam().version, GetParam().method, options);
  auto header = parse_compressed_header(ccob);
  ASSERT_TRUE(Succeeds(header));
  auto decompressed = decompress_bundle(ccob, *header);
  ASSERT_TRUE(FailsWith(decompressed, ErrorKind::HashMismatch));
  const ErrorLocation& at = decompressed.error().location();
  EXPECT_EQ(at.field, "hash");
  EXPECT_EQ(at.offset, std::optional<std::uint64_t>(GetParam().version == 1 ? 12 : GetParam().version == 2 ? 16 : 24));
  EXPECT_EQ(at.value, std::optional<std::uint64_t>(testing::ccob_hash(plain) ^ 1));
}

TEST_P(EveryVariant, DeclaredSizeSmallerThanTheDataIsSizeMismatch) {
  Bytes plain = sample_plain_bundle();
  testing::CcobOptions options;
  options.overrides.uncompressed_size = plain.size() - 1;
  Bytes ccob = testing::write_ccob(plain, GetParam().version, GetParam().method, options);
  auto header = parse_compressed_header(ccob);
  ASSERT_TRUE(Succeeds(header));
  EXPECT_TRUE(FailsWith(decompress_bundle(ccob, *header), ErrorKind::SizeMismatch));
}

TEST_P(EveryVariant, DeclaredSizeLargerThanTheDataIsSizeMismatch) {
  Bytes plain = sample_plain_bundle();
  testing::CcobOptions options;
  options.overrides.uncompressed_size = plain.size() + 1;
  Bytes ccob = testing::write_ccob(plain, GetParam().version, GetParam().method, options);
  auto header = parse_compressed_header(ccob);
  ASSERT_TRUE(Succeeds(header));
  // v1 has no total size, so the shortfall shows while measuring the stream.
  if (GetParam().version == 1) {
    EXPECT_TRUE(FailsWith(compressed_bundle_size(ccob, *header), ErrorKind::SizeMismatch));
  } else {
    EXPECT_TRUE(FailsWith(decompress_bundle(ccob, *header), ErrorKind::SizeMismatch));
  }
}

TEST_P(EveryVariant, SizeAboveTheCapFailsBeforeDecompressing) {
  Bytes plain = sample_plain_bundle();
  Bytes ccob = testing::write_ccob(plain, GetParam().version, GetParam().method);
  ReadOptions small;
  small.max_decompressed_bytes = plain.size() - 1;
  auto header = parse_compressed_header(ccob, small);
  ASSERT_TRUE(FailsWith(header, ErrorKind::LimitExceeded));
  EXPECT_EQ(header.error().location().field, "uncompressed_size");
  EXPECT_EQ(header.error().location().offset, std::optional<std::uint64_t>(GetParam().version == 3   ? 16
                                                                           : GetParam().version == 2 ? 12
                                                                                                     : 8));
  EXPECT_EQ(header.error().location().value, std::optional<std::uint64_t>(plain.size()));
  EXPECT_EQ(header.error().location().limit, std::optional<std::uint64_t>(plain.size() - 1));
  // A header parsed under a larger cap is still held to the reader's.
  auto parsed = parse_compressed_header(ccob);
  ASSERT_TRUE(Succeeds(parsed));
  // One wording for this limit, whoever checks it (a whole read, a stream).
  std::string want = "CCOB v" + std::to_string(GetParam().version) + ": uncompressed_size " +
                     detail::hex(plain.size()) + " exceeds the limit " + detail::hex(plain.size() - 1) +
                     " (max_decompressed_bytes)";
  auto whole = decompress_bundle(ccob, *parsed, small);
  ASSERT_TRUE(FailsWith(whole, ErrorKind::LimitExceeded));
  EXPECT_EQ(whole.error().message(), want);
  EXPECT_EQ(whole.error().location().field, "uncompressed_size");
  EXPECT_EQ(whole.error().location().offset, header.error().location().offset);
  EXPECT_EQ(whole.error().location().value, std::optional<std::uint64_t>(plain.size()));
  auto info = scan_bundles(ccob, SourceLayout{.region_size = ccob.size()});
  ASSERT_TRUE(Succeeds(info));
  auto read = read_bundle(ccob, info->front(), small);
  ASSERT_TRUE(FailsWith(read, ErrorKind::LimitExceeded));
  EXPECT_EQ(read.error().detail(), want);
  EXPECT_EQ(read.error().location().bundle, std::optional<std::size_t>(0));
  EXPECT_EQ(read.error().location().field, "uncompressed_size");
  EXPECT_EQ(read.error().location().limit, std::optional<std::uint64_t>(plain.size() - 1));
}

TEST_P(EveryVariant, GarbagePayloadIsCorruptData) {
  Bytes plain = sample_plain_bundle();
  testing::CcobOptions options;
  options.payload = Bytes(200, std::byte{0x41});
  Bytes ccob = testing::write_ccob(plain, GetParam().version, GetParam().method, options);
  auto header = parse_compressed_header(ccob);
  ASSERT_TRUE(Succeeds(header));
  auto size = compressed_bundle_size(ccob, *header);
  if (!size) {
    EXPECT_TRUE(FailsWith(size, ErrorKind::CorruptData));
    return;
  }
  EXPECT_TRUE(FailsWith(decompress_bundle(ccob, *header), ErrorKind::CorruptData));
}

TEST_P(EveryVariant, NoPrefixIsAccepted) {
  Bytes plain = sample_plain_bundle();
  Bytes ccob = testing::write_ccob(plain, GetParam().version, GetParam().method);
  for (std::size_t length = 0; length < ccob.size(); ++length) {
    std::span<const std::byte> prefix(ccob.data(), length);
    auto header = parse_compressed_header(prefix);
    if (!header) {
      // Inside the header: truncated; v2/v3 whose total_size passes the end: out of bounds.
      ErrorKind expected =
          length < testing::ccob_header_size(GetParam().version) ? ErrorKind::Truncated : ErrorKind::OutOfBounds;
      ASSERT_TRUE(FailsWith(header, expected)) << "prefix of " << length;
      continue;
    }
    ASSERT_EQ(GetParam().version, 1) << "prefix of " << length << " accepted";
    auto size = compressed_bundle_size(prefix, *header);
    ASSERT_FALSE(size.has_value()) << "v1 prefix of " << length << " measured";
    EXPECT_TRUE(size.error().kind() == ErrorKind::Truncated || size.error().kind() == ErrorKind::CorruptData)
        << to_string(size.error().kind());
  }
}

INSTANTIATE_TEST_SUITE_P(Ccob, EveryVariant,
                         ::testing::Values(Variant{1, CcobMethod::Zlib}, Variant{1, CcobMethod::Zstd},
                                           Variant{2, CcobMethod::Zlib}, Variant{2, CcobMethod::Zstd},
                                           Variant{3, CcobMethod::Zlib}, Variant{3, CcobMethod::Zstd}),
                         [](const auto& info) {
                           return "v" + std::to_string(info.param.version) +
                                  (info.param.method == CcobMethod::Zstd ? "_zstd" : "_zlib");
                         });

TEST(CompressedHeader, UnknownVersionIsUnsupportedVersion) {
  Bytes plain = sample_plain_bundle();
  for (std::uint16_t version : {0, 4, 0xffff}) {
    testing::CcobOptions options;
    options.overrides.version = version;
    Bytes ccob = testing::write_ccob(plain, 3, CcobMethod::Zstd, options);
    auto header = parse_compressed_header(ccob);
    ASSERT_TRUE(FailsWith(header, ErrorKind::UnsupportedVersion)) << version;
    EXPECT_EQ(header.error().location().field, "version");
    EXPECT_EQ(header.error().location().offset, std::optional<std::uint64_t>(4));
    EXPECT_EQ(header.error().location().value, std::optional<std::uint64_t>(version));
  }
}

TEST(CompressedHeader, UnknownMethodIsUnsupportedMethod) {
  testing::CcobOptions options;
  options.overrides.method = 2;
  Bytes ccob = testing::write_ccob(sample_plain_bundle(), 2, CcobMethod::Zstd, options);
  auto header = parse_compressed_header(ccob);
  ASSERT_TRUE(FailsWith(header, ErrorKind::UnsupportedMethod));
  EXPECT_EQ(header.error().location().field, "method");
  EXPECT_EQ(header.error().location().offset, std::optional<std::uint64_t>(6));
  EXPECT_EQ(header.error().location().value, std::optional<std::uint64_t>(2));
  // The sentence the CLI prints, kept once.
  EXPECT_EQ(header.error().message(), "CCOB header: method 2 at offset 0x6 is not 0 (zlib) or 1 (zstd)");
}

TEST(CompressedHeader, TotalSizeSmallerThanTheHeaderIsMalformed) {
  testing::CcobOptions options;
  options.overrides.total_size = 10;
  Bytes ccob = testing::write_ccob(sample_plain_bundle(), 3, CcobMethod::Zstd, options);
  auto header = parse_compressed_header(ccob);
  ASSERT_TRUE(FailsWith(header, ErrorKind::Malformed));
  EXPECT_EQ(header.error().location().field, "total_size");
  EXPECT_EQ(header.error().location().offset, std::optional<std::uint64_t>(8));
  EXPECT_EQ(header.error().location().value, std::optional<std::uint64_t>(10));
}

TEST(CompressedHeader, TotalSizePastTheInputIsOutOfBounds) {
  Bytes ccob = testing::write_ccob(sample_plain_bundle(), 3, CcobMethod::Zstd);
  testing::CcobOptions options;
  options.overrides.total_size = ccob.size() + 1;
  ccob = testing::write_ccob(sample_plain_bundle(), 3, CcobMethod::Zstd, options);
  auto header = parse_compressed_header(ccob);
  ASSERT_TRUE(FailsWith(header, ErrorKind::OutOfBounds));
  EXPECT_EQ(header.error().location().field, "total_size");
  EXPECT_EQ(header.error().location().value, std::optional<std::uint64_t>(ccob.size() + 1));
  EXPECT_EQ(header.error().location().limit, std::optional<std::uint64_t>(ccob.size()));
}

TEST(CompressedHeader, WrongMagicIsBadMagic) {
  Bytes ccob = testing::write_ccob(sample_plain_bundle(), 3, CcobMethod::Zstd);
  ccob[0] = std::byte{'X'};
  auto header = parse_compressed_header(ccob);
  ASSERT_TRUE(FailsWith(header, ErrorKind::BadMagic));
  EXPECT_EQ(header.error().location().field, "magic");
  EXPECT_EQ(header.error().location().offset, std::optional<std::uint64_t>(0));
}

TEST(CompressedBundle, V1MeasuringChecksTheCapItself) {
  // A header parsed under other options must not lift the cap on measuring.
  Bytes plain = sample_plain_bundle();
  Bytes ccob = testing::write_ccob(plain, 1, CcobMethod::Zstd);
  auto header = parse_compressed_header(ccob);
  ASSERT_TRUE(Succeeds(header));
  ReadOptions small;
  small.max_decompressed_bytes = plain.size() - 1;
  auto size = compressed_bundle_size(ccob, *header, small);
  EXPECT_TRUE(
      testing::FailsAtField(size, ErrorKind::LimitExceeded, "uncompressed_size", 8, plain.size(), plain.size() - 1));
}

TEST(CompressedBundle, TinyPayloadDeclaringHugeSizeCostsNoMemory) {
  // A decompression bomb in miniature: 2^30 bytes declared, a few bytes given.
  testing::CcobOptions options;
  options.overrides.uncompressed_size = (std::uint64_t{1} << 30);
  Bytes ccob = testing::write_ccob(sample_plain_bundle(), 3, CcobMethod::Zstd, options);
  auto header = parse_compressed_header(ccob);
  ASSERT_TRUE(Succeeds(header));
  EXPECT_TRUE(FailsWith(decompress_bundle(ccob, *header), ErrorKind::SizeMismatch));
}

TEST(CompressedBundle, ReadingATinyPayloadDeclaringAHugeSizeIsSizeMismatch) {
  // read_bundle maps address space for the declared 1 GiB; pages come only as
  // bytes arrive, so the lie costs a few KiB.
  testing::CcobOptions options;
  options.overrides.uncompressed_size = (std::uint64_t{1} << 30);
  Bytes ccob = testing::write_ccob(sample_plain_bundle(), 3, CcobMethod::Zstd, options);
  auto binary = FatBinary::from_memory(ccob);
  ASSERT_TRUE(Succeeds(binary));
  EXPECT_TRUE(FailsWith(binary->read(0), ErrorKind::SizeMismatch));
}

TEST(CompressedBundle, ADecompressedBundleTakesNoMoreThanItsCapacity) {
  detail::DecompressedBundle bundle(10);
  ASSERT_TRUE(bundle.allocated());
  Bytes six = testing::to_bytes("abcdef");
  EXPECT_TRUE(bundle.append(six));
  EXPECT_FALSE(bundle.append(testing::to_bytes("ghijk")));
  EXPECT_TRUE(std::ranges::equal(bundle.bytes(), six));
  EXPECT_TRUE(bundle.append(testing::to_bytes("ghij")));
  EXPECT_EQ(bundle.bytes().size(), 10u);
  EXPECT_TRUE(bundle.append({}));
}

TEST(CompressedBundle, ZstdBombStopsAtTheDeclaredSize) {
  // 64 MiB of zeros compress to a few KiB; the header declares only 1 MiB.
  Bytes zeros(64u << 20);
  Bytes plain = testing::write_plain_bundle({{"hipv4-amdgcn-amd-amdhsa--gfx90a", zeros}});
  testing::CcobOptions options;
  options.overrides.uncompressed_size = 1u << 20;
  Bytes ccob = testing::write_ccob(plain, 3, CcobMethod::Zstd, options);
  ASSERT_LT(ccob.size(), 64u << 10);
  auto header = parse_compressed_header(ccob);
  ASSERT_TRUE(Succeeds(header));
  EXPECT_TRUE(FailsWith(decompress_bundle(ccob, *header), ErrorKind::SizeMismatch));
}

TEST(CompressedBundle, SkippableFrameHoldingTheMagicIsSkipped) {
  Bytes plain = sample_plain_bundle();
  testing::CcobOptions options;
  options.payload_prefix = testing::zstd_skippable_frame(testing::to_bytes("CCOB CCOB __CLANG_OFFLOAD_BUNDLE__"));
  for (int version : {1, 3}) {
    Bytes ccob = testing::write_ccob(plain, version, CcobMethod::Zstd, options);
    auto header = parse_compressed_header(ccob);
    ASSERT_TRUE(Succeeds(header));
    // v1: the frame walk counts the skippable frame as a frame, as decoding does.
    Bytes followed = ccob;
    testing::append(followed, ccob);
    auto size = compressed_bundle_size(followed, *header);
    ASSERT_TRUE(Succeeds(size)) << version;
    EXPECT_EQ(*size, ccob.size()) << version;
    auto decompressed = decompress_bundle(ccob, *header);
    ASSERT_TRUE(Succeeds(decompressed)) << version;
    EXPECT_EQ(*decompressed, plain);
  }
}

TEST(CompressedBundle, TrailingBytesInsideTotalSizeAreSizeMismatchOrCorrupt) {
  Bytes plain = sample_plain_bundle();
  testing::CcobOptions options;
  options.payload_suffix = Bytes(16, std::byte{0});
  Bytes zlib = testing::write_ccob(plain, 2, CcobMethod::Zlib, options);
  auto header = parse_compressed_header(zlib);
  ASSERT_TRUE(Succeeds(header));
  EXPECT_TRUE(FailsWith(decompress_bundle(zlib, *header), ErrorKind::SizeMismatch));
  Bytes zstd = testing::write_ccob(plain, 3, CcobMethod::Zstd, options);
  header = parse_compressed_header(zstd);
  ASSERT_TRUE(Succeeds(header));
  EXPECT_TRUE(FailsWith(decompress_bundle(zstd, *header), ErrorKind::CorruptData));
}

// zstd payloads take one of three routes through decode_stream: into the
// sink's own memory (read_bundle's bundle), into scratch memory of the
// content's size (a single-segment frame of 2 MiB or more, as the bundler
// writes), or through libzstd's window in chunks (any other frame). Each
// must decode the same bytes and fail the same way.

/// 3 MiB with matches near and far.
Bytes zstd_content() {
  Bytes content(3u << 20);
  std::uint32_t state = 1;
  for (std::size_t i = 0; i < content.size(); ++i) {
    if (i >= (1u << 20) && i % 4096 < 2048) {
      content[i] = content[i - (1u << 20) + 7];
      continue;
    }
    state = state * 1664525u + 1013904223u;
    content[i] = std::byte(static_cast<std::uint8_t>((state >> 24) & 0x1f));
  }
  return content;
}

struct ZstdRoute {
  const char* name;
  testing::ZstdFrame frame;
  bool sink_memory;   // the sink offers memory of the declared size
  bool in_one_place;  // decoded into memory of the content's size, not through a window
};

// A window of 4 MiB holds the 3 MiB content: zstd writes the frame single-segment.
constexpr testing::ZstdFrame kSingleSegment{.window_log = 22};
// As `zstd --long=28` streaming from a pipe: no content size, a window past libzstd's limit (2^27).
constexpr testing::ZstdFrame kHugeWindow{.window_log = 22, .content_size = false, .declared_window_log = 28};

constexpr ZstdRoute kZstdRoutes[] = {
    {"single-segment frame, scratch memory", kSingleSegment, false, true},
    {"single-segment frame, the sink's memory", kSingleSegment, true, true},
    {"128 KiB window, libzstd's window", {.window_log = 17}, false, false},
    {"128 KiB window, the sink's memory", {.window_log = 17}, true, true},
    {"no content size, 2 MiB window, libzstd's window", {.content_size = false}, false, false},
    {"no content size, 4 MiB window, scratch memory", {.window_log = 22, .content_size = false}, false, true},
    {"2^28 window, scratch memory", kHugeWindow, false, true},
    {"2^28 window, the sink's memory", kHugeWindow, true, true},
};

/// Keeps what it is given, offering memory of `offered` bytes when asked;
/// stops after `stop_after` bytes.
class KeepingSink final : public detail::DecodeSink {
 public:
  KeepingSink(std::uint64_t offered, bool offer, std::uint64_t stop_after = UINT64_MAX)
      : memory_(offer ? offered : 0), stop_after_(stop_after) {}
  void write(detail::Bytes chunk) override {
    if (!memory_.empty() && chunk.data() != memory_.data() + kept_.size()) in_place_ = false;
    if (!kept_.empty() && chunk.data() != last_end_) contiguous_ = false;
    last_end_ = chunk.data() + chunk.size();
    kept_.insert(kept_.end(), chunk.begin(), chunk.end());
  }
  bool done() const override { return kept_.size() >= stop_after_; }
  std::span<std::byte> output() override { return memory_; }

  const Bytes& kept() const { return kept_; }
  bool in_place() const { return in_place_; }      // every chunk at its place in the offered memory
  bool contiguous() const { return contiguous_; }  // every chunk right after the one before

 private:
  Bytes memory_;
  std::uint64_t stop_after_;
  Bytes kept_;
  const std::byte* last_end_ = nullptr;
  bool in_place_ = true;
  bool contiguous_ = true;
};

Expected<std::uint64_t> decode(const Bytes& payload, std::uint64_t expected, KeepingSink& sink) {
  return detail::decode_stream(Compression::Zstd, payload, expected, detail::StreamEnd::EndOfInput, sink);
}

TEST(ZstdDecoding, EveryRouteYieldsTheSameBytes) {
  Bytes content = zstd_content();
  for (const ZstdRoute& route : kZstdRoutes) {
    Bytes payload = testing::compress_zstd(content, route.frame);
    KeepingSink sink(content.size(), route.sink_memory);
    auto consumed = decode(payload, content.size(), sink);
    ASSERT_TRUE(Succeeds(consumed)) << route.name;
    EXPECT_EQ(*consumed, payload.size()) << route.name;
    EXPECT_TRUE(sink.kept() == content) << route.name;
    if (route.sink_memory) EXPECT_TRUE(sink.in_place()) << route.name;
    // Chunks copied out of libzstd's window all start at its chunk buffer.
    EXPECT_EQ(sink.contiguous(), route.in_one_place) << route.name;
  }
}

// A later frame whose window passes libzstd's limit: the rest is decoded in
// scratch memory, as read_bundle decodes it in its own, with the same errors.
TEST(ZstdDecoding, ALaterFramePastTheWindowLimitIsDecodedInPlace) {
  Bytes content = zstd_content();
  Bytes small(1024, std::byte{7});
  Bytes first = testing::compress_zstd(content, {.window_log = 17});
  Bytes second = testing::compress_zstd(small, {.content_size = false, .declared_window_log = 28});
  Bytes payload = first;
  payload.insert(payload.end(), second.begin(), second.end());
  Bytes whole = content;
  whole.insert(whole.end(), small.begin(), small.end());
  for (bool sink_memory : {false, true}) {
    KeepingSink sink(whole.size(), sink_memory);
    auto consumed = decode(payload, whole.size(), sink);
    ASSERT_TRUE(Succeeds(consumed)) << sink_memory;
    EXPECT_EQ(*consumed, payload.size()) << sink_memory;
    EXPECT_TRUE(sink.kept() == whole) << sink_memory;

    KeepingSink cut(whole.size(), sink_memory);
    auto truncated = decode(Bytes(payload.begin(), payload.end() - 1), whole.size(), cut);
    ASSERT_TRUE(FailsWith(truncated, ErrorKind::Truncated)) << sink_memory;
    // Counted from the payload's start, not from the frame that switched to scratch.
    std::string progress = "(" + detail::hex(whole.size() - 1024) + " of " + detail::hex(whole.size());
    EXPECT_NE(truncated.error().message().find(progress), std::string::npos) << truncated.error().message();
    KeepingSink longer(whole.size() + 1, sink_memory);
    EXPECT_TRUE(FailsWith(decode(payload, whole.size() + 1, longer), ErrorKind::SizeMismatch)) << sink_memory;
    KeepingSink shorter(whole.size() - 1, sink_memory);
    EXPECT_TRUE(FailsWith(decode(payload, whole.size() - 1, shorter), ErrorKind::SizeMismatch)) << sink_memory;
  }
}

TEST(ZstdDecoding, EveryRouteFailsTheSameWay) {
  Bytes content = zstd_content();
  Bytes small(1024, std::byte{7});
  for (const ZstdRoute& route : kZstdRoutes) {
    Bytes payload = testing::compress_zstd(content, route.frame);
    auto fails = [&](const Bytes& bytes, std::uint64_t expected, ErrorKind kind, const char* what) {
      KeepingSink sink(expected, route.sink_memory);
      auto consumed = decode(bytes, expected, sink);
      EXPECT_TRUE(FailsWith(consumed, kind)) << route.name << ": " << what;
      EXPECT_LE(sink.kept().size(), expected) << route.name << ": " << what;
    };
    fails(Bytes(payload.begin(), payload.begin() + payload.size() / 2), content.size(), ErrorKind::Truncated,
          "half the payload");
    fails(payload, content.size() - 1, ErrorKind::SizeMismatch, "declared one byte short");
    fails(payload, content.size() + 1, ErrorKind::SizeMismatch, "declared one byte long");
    Bytes two_frames = payload;
    Bytes second = testing::compress_zstd(small, route.frame);
    two_frames.insert(two_frames.end(), second.begin(), second.end());
    fails(two_frames, content.size(), ErrorKind::SizeMismatch, "a second frame past the declared size");
    testing::ZstdFrame checked = route.frame;
    checked.checksum = true;
    Bytes corrupt = testing::compress_zstd(content, checked);
    corrupt.back() ^= std::byte{1};  // inside the checksum
    fails(corrupt, content.size(), ErrorKind::CorruptData, "a wrong checksum");
  }
}

TEST(ZstdDecoding, AStoppedDecodeEndsWithinABlock) {
  Bytes content = zstd_content();
  for (const ZstdRoute& route : kZstdRoutes) {
    Bytes payload = testing::compress_zstd(content, route.frame);
    KeepingSink sink(content.size(), route.sink_memory, 1);
    auto consumed = decode(payload, content.size(), sink);
    ASSERT_TRUE(Succeeds(consumed)) << route.name;
    EXPECT_LT(*consumed, payload.size() / 4) << route.name;
    EXPECT_GE(sink.kept().size(), 1u) << route.name;
    EXPECT_LE(sink.kept().size(), 128u << 10) << route.name;  // zstd's largest block
  }
}

// Verified marks on the whole-bundle path (ReadOptions::verified_cache):
// decompress_bundle, and so read_bundle and FatBinary::read, mark a CCOB whose
// hash they checked and skip the MD5 of a marked one.

/// `plain` as a v3 CCOB whose stored hash is one bit off.
Bytes with_wrong_hash(const Bytes& plain, CcobMethod method) {
  testing::CcobOptions options;
  options.overrides.hash = testing::ccob_hash(plain) ^ 1;
  return testing::write_ccob(plain, 3, method, options);
}

TEST(CompressedBundleMarks, ACheckedCcobIsMarkedAndReadAgainFromTheMark) {
  Bytes plain = sample_plain_bundle();
  for (int version : {1, 2, 3}) {
    for (CcobMethod method : {CcobMethod::Zlib, CcobMethod::Zstd}) {
      testing::ScratchDirectory cache;
      ReadOptions marked{.verified_cache = (cache.path() / "verified").string()};
      Bytes ccob = testing::write_ccob(plain, version, method);
      auto header = parse_compressed_header(ccob);
      ASSERT_TRUE(Succeeds(header));
      for (int run = 0; run < 2; ++run) {
        auto decompressed = decompress_bundle(ccob, *header, marked);
        ASSERT_TRUE(Succeeds(decompressed)) << version << " run " << run;
        EXPECT_EQ(*decompressed, plain);
        EXPECT_EQ(file_names(cache.path() / "verified").size(), 1u) << version << " run " << run;
      }
    }
  }
}

TEST(CompressedBundleMarks, AFailedCheckLeavesNoMark) {
  testing::ScratchDirectory cache;
  Bytes ccob = with_wrong_hash(sample_plain_bundle(), CcobMethod::Zstd);
  auto header = parse_compressed_header(ccob);
  ASSERT_TRUE(Succeeds(header));
  EXPECT_TRUE(FailsWith(decompress_bundle(ccob, *header, {.verified_cache = cache.str()}), ErrorKind::HashMismatch));
  EXPECT_TRUE(file_names(cache.path()).empty());
}

// What a mark saves is the MD5, and only that: a mark planted for a CCOB whose
// stored hash is wrong (this library would never write one) lets it through,
// which shows the MD5 is not computed; its declared size is still checked.
TEST(CompressedBundleMarks, AMarkSkipsTheMd5ButNotTheSizeCheck) {
  testing::ScratchDirectory cache;
  ReadOptions marked{.verified_cache = cache.str()};
  Bytes plain = sample_plain_bundle();
  Bytes ccob = with_wrong_hash(plain, CcobMethod::Zlib);
  auto header = parse_compressed_header(ccob);
  ASSERT_TRUE(Succeeds(header));
  detail::VerifiedMark(cache.str(), ccob, *header).record();
  auto trusted = decompress_bundle(ccob, *header, marked);
  ASSERT_TRUE(Succeeds(trusted));
  EXPECT_EQ(*trusted, plain);
  EXPECT_TRUE(FailsWith(decompress_bundle(ccob, *header), ErrorKind::HashMismatch));

  testing::CcobOptions wrong_size;
  wrong_size.overrides.uncompressed_size = plain.size() + 1;
  Bytes longer = testing::write_ccob(plain, 3, CcobMethod::Zlib, wrong_size);
  header = parse_compressed_header(longer);
  ASSERT_TRUE(Succeeds(header));
  detail::VerifiedMark(cache.str(), longer, *header).record();
  EXPECT_TRUE(FailsWith(decompress_bundle(longer, *header, marked), ErrorKind::SizeMismatch));
}

TEST(CompressedBundleMarks, FatBinaryReadMarksItsCcobs) {
  testing::ScratchDirectory cache;
  Bytes plain = sample_plain_bundle();
  Bytes ccob = testing::write_ccob(plain, 2, CcobMethod::Zstd);
  auto binary = FatBinary::from_memory(ccob, "one.ccob", {.verified_cache = cache.str()});
  ASSERT_TRUE(Succeeds(binary));
  for (int run = 0; run < 2; ++run) {
    auto bundle = binary->read(0);
    ASSERT_TRUE(Succeeds(bundle));
    ASSERT_EQ(bundle->entries().size(), 3u);
    EXPECT_EQ(bundle->entries()[2].id, "hipv4-amdgcn-amd-amdhsa--gfx942");
    EXPECT_EQ(file_names(cache.path()).size(), 1u) << run;
  }
}

}  // namespace
}  // namespace coload
