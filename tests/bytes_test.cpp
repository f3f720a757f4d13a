#include "common/bytes.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace coload::detail {
namespace {

using coload::testing::FailsWith;
using coload::testing::Succeeds;

TEST(CheckRange, AcceptsRangesEndingAtTheLimit) {
  EXPECT_TRUE(Succeeds(check_range("r", 0, 16, 16, "buffer")));
  EXPECT_TRUE(Succeeds(check_range("r", 16, 0, 16, "buffer")));
}

TEST(CheckRange, RejectsRangesPastTheLimitNamingValues) {
  auto result = check_range("bundle entry 3", 0x1f000, 0x8000, 0x20000, "the bundle");
  ASSERT_TRUE(FailsWith(result, ErrorKind::OutOfBounds));
  EXPECT_EQ(result.error().message(),
            "bundle entry 3: offset 0x1f000 + size 0x8000 runs past the end of the bundle (0x20000 bytes)");
  EXPECT_TRUE(FailsWith(check_range("r", 17, 0, 16, "buffer"), ErrorKind::OutOfBounds));
  // No name: the caller sets the range's location as fields (Error::in_bundle, at_entry).
  auto unnamed = check_range({}, 0x1f000, 0x8000, 0x20000, "the bundle");
  ASSERT_TRUE(FailsWith(unnamed, ErrorKind::OutOfBounds));
  EXPECT_EQ(unnamed.error().message(), "offset 0x1f000 + size 0x8000 runs past the end of the bundle (0x20000 bytes)");
}

TEST(CheckRange, RejectsOverflowingRanges) {
  EXPECT_TRUE(FailsWith(check_range("r", UINT64_MAX, 2, UINT64_MAX, "buffer"), ErrorKind::Overflow));
  EXPECT_TRUE(FailsWith(check_range("r", 1, UINT64_MAX, UINT64_MAX, "buffer"), ErrorKind::Overflow));
}

TEST(Cursor, ReadsLittleEndianAndNamesTheFieldOnShortReads) {
  const std::uint8_t raw[] = {0x01, 0x02, 0x03, 0x04, 0x05};
  Cursor cursor(Bytes(reinterpret_cast<const std::byte*>(raw), sizeof raw), "test header");
  auto first = cursor.u32("first");
  ASSERT_TRUE(Succeeds(first));
  EXPECT_EQ(*first, 0x04030201u);
  auto second = cursor.u16("second");
  ASSERT_TRUE(FailsWith(second, ErrorKind::Truncated));
  EXPECT_EQ(second.error().message(), "test header: field second at offset 0x4 needs 0x2 bytes, only 0x1 remain");
}

TEST(AlignUp, RoundsAndDetectsOverflow) {
  EXPECT_EQ(align_up(0, 4096), 0u);
  EXPECT_EQ(align_up(1, 4096), 4096u);
  EXPECT_EQ(align_up(4096, 4096), 4096u);
  EXPECT_FALSE(align_up(UINT64_MAX - 10, 4096).has_value());
}

}  // namespace
}  // namespace coload::detail
