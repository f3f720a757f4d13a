// Kernarg layouts (the explicit arguments, then the hidden block) and
// check_dispatch() of a kernel against one dispatch's kernarg buffer, LDS and
// workgroup size, each check with its exact kind, field, value and limit.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "code_object/kernarg_layout.h"
#include "coload/validate.h"
#include "test_util.h"
#include "validate_test_support.h"

namespace coload {
namespace {

using namespace coload::testing;
using validate_test::arg;
using validate_test::device;
using validate_test::fields;
using validate_test::hidden;
using validate_test::kernel;
using validate_test::problems_of;
using validate_test::ptr;
using validate_test::value;
using validate_test::with_lds;

// ---------------------------------------------------------------------------
// Kernarg layouts.

TEST(KernargLayout, NoArguments) {
  Kernel k = kernel("empty", 0, {});
  EXPECT_EQ(k.layout.explicit_size, 0u);
  EXPECT_FALSE(k.layout.hidden_offset);
  EXPECT_EQ(k.layout.hidden_end, 0u);
  EXPECT_EQ(k.layout.segment_size, 0u);
  EXPECT_EQ(k.layout.segment_align, 8u);
  EXPECT_TRUE(problems_of(k).empty());
}

TEST(KernargLayout, OnlyHiddenArguments) {
  Kernel k = kernel("only_hidden", 24,
                    {hidden(0, 4, ValueKind::HiddenBlockCountX, "hidden_block_count_x"),
                     hidden(12, 2, ValueKind::HiddenGroupSizeX, "hidden_group_size_x"),
                     hidden(16, 8, ValueKind::HiddenGlobalOffsetX, "hidden_global_offset_x")});
  EXPECT_EQ(k.layout.explicit_size, 0u);
  EXPECT_EQ(k.layout.hidden_offset, 0u);
  EXPECT_EQ(k.layout.hidden_end, 24u);
  EXPECT_TRUE(problems_of(k).empty());
}

TEST(KernargLayout, ExplicitPrefixThenTheV5HiddenBlock) {
  // clang -O0 v5: a pointer, an int, then the implicit block at 16 (12 aligned up to 8).
  Kernel k = kernel("saxpy", 272,
                    {ptr(0, "x"), value(8, 4, "n"), hidden(16, 4, ValueKind::HiddenBlockCountX, "hidden_block_count_x"),
                     hidden(28, 2, ValueKind::HiddenGroupSizeX, "hidden_group_size_x"),
                     hidden(136, 4, ValueKind::HiddenDynamicLdsSize, "hidden_dynamic_lds_size"),
                     hidden(216, 8, ValueKind::HiddenQueuePtr, "hidden_queue_ptr")});
  EXPECT_EQ(k.layout.explicit_size, 12u);
  EXPECT_EQ(k.layout.hidden_offset, 16u);
  EXPECT_EQ(k.layout.hidden_end, 224u);
  EXPECT_EQ(k.layout.segment_size, 272u);
  EXPECT_TRUE(problems_of(k).empty());
}

TEST(KernargLayout, HiddenArgumentsInAnyMetadataOrder) {
  Kernel k = kernel("shuffled", 40,
                    {hidden(32, 8, ValueKind::HiddenQueuePtr, "hidden_queue_ptr"), ptr(0),
                     hidden(8, 4, ValueKind::HiddenBlockCountX, "hidden_block_count_x")});
  EXPECT_EQ(k.layout.explicit_size, 8u);
  EXPECT_EQ(k.layout.hidden_offset, 8u);
  EXPECT_EQ(k.layout.hidden_end, 40u);
  EXPECT_TRUE(problems_of(k).empty());
}

TEST(KernargLayout, ExplicitArgumentAfterAHiddenOneIsAProblem) {
  // The hrx-system PR #12 case: a visible by_value at 16 after a hidden arg at 8.
  Kernel k = kernel(
      "late", 24,
      {ptr(0, "out"), hidden(8, 8, ValueKind::HiddenGlobalOffsetX, "hidden_global_offset_x"), value(16, 4, "n")});
  EXPECT_EQ(k.layout.explicit_size, 20u);
  EXPECT_EQ(k.layout.hidden_offset, 8u);
  auto problems = problems_of(k);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, ErrorKind::Malformed);
  EXPECT_EQ(problems[0].kernel, "late");
  EXPECT_EQ(problems[0].field, "args[2].offset");
  EXPECT_EQ(problems[0].message,
            "kernel \"late\": args[2] (\"n\", by_value) at offset 16 is at or after the first hidden argument, "
            "args[1] (hidden_global_offset_x) at offset 8");
}

TEST(KernargLayout, ExplicitArgumentAtTheFirstHiddenOffsetIsAProblem) {
  Kernel k = kernel("same", 16, {hidden(8, 0, ValueKind::HiddenNone, "hidden_none"), value(8, 4, "n"), ptr(0)});
  auto problems = problems_of(k);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "args[1].offset");
}

TEST(KernargLayout, OverlappingArguments) {
  Kernel k = kernel("overlap", 16, {value(0, 8, "a"), value(4, 4, "b"), value(8, 8, "c")});
  auto problems = problems_of(k);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, ErrorKind::Malformed);
  EXPECT_EQ(problems[0].field, "args[1].offset");
  EXPECT_EQ(problems[0].message,
            "kernel \"overlap\": args[1] (\"b\", by_value) at offset 4 overlaps args[0] (\"a\", by_value), which "
            "covers bytes [0, 8)");
}

TEST(KernargLayout, OverlapIsFoundWhateverTheMetadataOrder) {
  Kernel k = kernel("overlap", 32, {value(16, 4, "late"), value(0, 24, "wide")});
  auto problems = problems_of(k);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "args[0].offset");
  EXPECT_NE(problems[0].message.find("overlaps args[1] (\"wide\", by_value), which covers bytes [0, 24)"),
            std::string::npos)
      << problems[0].message;
}

TEST(KernargLayout, EmptyArgumentsOverlapNothing) {
  Kernel k = kernel("empty_struct", 8, {value(0, 8, "a"), value(4, 0, "nothing")});
  EXPECT_TRUE(problems_of(k).empty());
}

TEST(KernargLayout, ArgumentPastTheSegment) {
  Kernel k = kernel("short", 20, {ptr(0), value(16, 8, "x")});
  auto problems = problems_of(k);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "args[1].size");
  EXPECT_EQ(problems[0].message,
            "kernel \"short\": args[1] (\"x\", by_value) ends at byte 24 (offset 16 + size 8), past "
            ".kernarg_segment_size 20");
}

TEST(KernargLayout, OffsetPlusSizeBeyond32BitsIsComputedIn64) {
  Kernel k = kernel("huge", 64, {value(0xfffffff0u, 0x20, "x")});
  EXPECT_EQ(k.layout.explicit_size, std::numeric_limits<std::uint32_t>::max());
  auto problems = problems_of(k);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "args[0].size");
  EXPECT_NE(problems[0].message.find("ends at byte 4294967312 (offset 4294967280 + size 32)"), std::string::npos)
      << problems[0].message;
}

TEST(KernargLayout, UnalignedPartialHiddenBlockIsFine) {
  // MIOpen-style assembly: the hidden block starts at byte 201 and declares
  // only some fields; the segment ends before a full 256-byte block.
  Kernel k = kernel("miopen_asm", 224,
                    {ptr(0, "in"), ptr(8, "out"), value(16, 184, "params"), value(200, 1, "flag"),
                     hidden(201, 4, ValueKind::HiddenBlockCountX, "hidden_block_count_x"),
                     hidden(213, 2, ValueKind::HiddenGroupSizeX, "hidden_group_size_x"),
                     hidden(215, 8, ValueKind::HiddenGlobalOffsetX, "hidden_global_offset_x")},
                    4);
  EXPECT_EQ(k.layout.explicit_size, 201u);
  EXPECT_EQ(k.layout.hidden_offset, 201u);
  EXPECT_EQ(k.layout.hidden_end, 223u);
  auto problems = problems_of(k);
  EXPECT_TRUE(problems.empty()) << problems.front().message;
}

TEST(KernargLayout, PointerOffsetMustBeNaturallyAligned) {
  Kernel k = kernel("misaligned", 16, {value(0, 4, "n"), ptr(4, "p")});
  auto problems = problems_of(k);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "args[1].offset");
  EXPECT_EQ(problems[0].message,
            "kernel \"misaligned\": args[1] (\"p\", global_buffer) at offset 4 is not a multiple of its alignment 8 "
            "(its size 8, at most .kernarg_segment_align 8)");
  // A segment declared 4-aligned (hand-written assembly) only needs dword alignment.
  EXPECT_TRUE(problems_of(kernel("dword", 12, {value(0, 4, "n"), ptr(4, "p")}, 4)).empty());
}

TEST(KernargLayout, PointeeAlignDoesNotConstrainTheOffset) {
  // clang-22 for `local float4* l` after a global pointer: offset 8, size 4, pointee_align 16.
  KernelArg local = arg(8, 4, ValueKind::DynamicSharedPointer, "dynamic_shared_pointer", "l");
  local.pointee_align = 16;
  local.address_space = AddressSpace::Local;
  EXPECT_TRUE(problems_of(kernel("opencl", 12, {ptr(0, "a"), local})).empty());
}

TEST(KernargLayout, ByValueArgumentsHaveNoDeclaredAlignment) {
  EXPECT_TRUE(problems_of(kernel("packed", 16, {value(0, 1, "c"), value(1, 8, "pair")})).empty());
}

// ---------------------------------------------------------------------------
// check_dispatch().

Kernel dispatchable() {
  // 20 explicit bytes, then a hidden block at 24.
  Kernel k = kernel("dispatch", 280,
                    {ptr(0, "out"), ptr(8, "in"), value(16, 4, "n"),
                     hidden(24, 4, ValueKind::HiddenBlockCountX, "hidden_block_count_x"),
                     hidden(140, 4, ValueKind::HiddenDynamicLdsSize, "hidden_dynamic_lds_size")});
  k.group_segment_fixed_size = 32768;
  k.max_flat_workgroup_size = 256;
  return k;
}

TEST(CheckDispatch, KernargBufferBetweenTheExplicitEndAndTheHiddenBlock) {
  Kernel k = dispatchable();
  Device gfx942 = device("gfx942");
  EXPECT_TRUE(Succeeds(check_dispatch(k, gfx942, {.kernarg_bytes = 20})));
  EXPECT_TRUE(Succeeds(check_dispatch(k, gfx942, {.kernarg_bytes = 24})));
  // The limit: where the explicit arguments end, then where the hidden ones start.
  EXPECT_TRUE(FailsAtField(check_dispatch(k, gfx942, {.kernarg_bytes = 19}), ErrorKind::SizeMismatch, "kernarg_bytes",
                           std::nullopt, 19, 20));
  EXPECT_TRUE(FailsAtField(check_dispatch(k, gfx942, {.kernarg_bytes = 25}), ErrorKind::SizeMismatch, "kernarg_bytes",
                           std::nullopt, 25, 24));
}

TEST(CheckDispatch, KernargBufferWithoutHiddenArgumentsEndsAtTheSegment) {
  Kernel k = kernel("plain", 24, {ptr(0), value(8, 12)});
  Device gfx942 = device("gfx942");
  EXPECT_TRUE(Succeeds(check_dispatch(k, gfx942, {.kernarg_bytes = 24})));
  EXPECT_TRUE(FailsAtField(check_dispatch(k, gfx942, {.kernarg_bytes = 25}), ErrorKind::SizeMismatch, "kernarg_bytes",
                           std::nullopt, 25, 24));
  EXPECT_TRUE(FailsWith(check_dispatch(k, gfx942, {.kernarg_bytes = std::numeric_limits<std::uint64_t>::max()}),
                        ErrorKind::SizeMismatch));
}

TEST(CheckDispatch, KernelWithoutArgumentsTakesAnEmptyBuffer) {
  Kernel k = kernel("noargs", 0, {});
  EXPECT_TRUE(Succeeds(check_dispatch(k, device("gfx942"), {})));
  EXPECT_TRUE(FailsWith(check_dispatch(k, device("gfx942"), {.kernarg_bytes = 1}), ErrorKind::SizeMismatch));
}

// docs/loading.md: an explicit size of 0 must not mean "take the caller's length".
// Without `.args` the layout is unknown, so the buffer is the whole segment.
TEST(CheckDispatch, KernelWithoutArgsMetadataTakesTheWholeSegment) {
  Kernel k = kernel("asm_kernel", 24, {});
  Device gfx942 = device("gfx942");
  EXPECT_TRUE(Succeeds(check_dispatch(k, gfx942, {.kernarg_bytes = 24})));
  for (std::uint64_t bytes : {0u, 4u, 23u, 25u}) {
    auto result = check_dispatch(k, gfx942, {.kernarg_bytes = bytes});
    EXPECT_TRUE(FailsAtField(result, ErrorKind::SizeMismatch, "kernarg_bytes", std::nullopt, bytes, 24)) << bytes;
    // The reason is the behaviour: say why the whole segment is wanted.
    EXPECT_NE(result.error().message().find("the metadata lists no .args"), std::string::npos) << bytes;
  }
}

TEST(CheckDispatch, StaticPlusDynamicLds) {
  Kernel k = dispatchable();
  Device gfx942 = device("gfx942");
  EXPECT_TRUE(Succeeds(check_dispatch(k, gfx942, {.kernarg_bytes = 20, .dynamic_lds = 32768})));
  // The limit: what the 32768 static bytes leave of gfx942's 65536.
  EXPECT_TRUE(FailsAtField(check_dispatch(k, gfx942, {.kernarg_bytes = 20, .dynamic_lds = 32769}),
                           ErrorKind::LimitExceeded, "dynamic_lds", std::nullopt, 32769, 32768));
}

TEST(CheckDispatch, LdsSumOverflowing64BitsIsCaught) {
  Kernel k = dispatchable();
  auto result = check_dispatch(k, device("gfx942"),
                               {.kernarg_bytes = 20, .dynamic_lds = std::numeric_limits<std::uint64_t>::max()});
  EXPECT_TRUE(FailsAtField(result, ErrorKind::LimitExceeded, "dynamic_lds", std::nullopt,
                           std::numeric_limits<std::uint64_t>::max(), 32768));
  EXPECT_NE(result.error().message().find("overflows 64 bits"), std::string::npos) << result.error().message();
}

TEST(CheckDispatch, UnknownLdsIsBoundedByThePacketField) {
  Kernel k = dispatchable();
  k.group_segment_fixed_size = 0;
  Device unknown = device("gfx942", with_lds(0));
  EXPECT_TRUE(Succeeds(check_dispatch(k, unknown, {.kernarg_bytes = 20, .dynamic_lds = 0xffffffffu})));
  auto result = check_dispatch(k, unknown, {.kernarg_bytes = 20, .dynamic_lds = 0x100000000u});
  ASSERT_TRUE(FailsWith(result, ErrorKind::LimitExceeded));
  EXPECT_NE(result.error().message().find("exceeds 4294967295, the largest group segment an AQL packet carries"),
            std::string::npos)
      << result.error().message();
}

TEST(CheckDispatch, WorkgroupSizeWithinTheKernelsMaximum) {
  Kernel k = dispatchable();
  Device gfx942 = device("gfx942");
  EXPECT_TRUE(Succeeds(check_dispatch(k, gfx942, {.kernarg_bytes = 20, .workgroup_size = {64, 2, 2}})));
  EXPECT_TRUE(FailsAtField(check_dispatch(k, gfx942, {.kernarg_bytes = 20, .workgroup_size = {257, 1, 1}}),
                           ErrorKind::InvalidArgument, "workgroup_size", std::nullopt, 257, 256));
  EXPECT_TRUE(FailsAtField(check_dispatch(k, gfx942, {.kernarg_bytes = 20, .workgroup_size = {64, 0, 1}}),
                           ErrorKind::InvalidArgument, "workgroup_size[1]", std::nullopt, 0));
  // 2^96 work-items must not wrap to something small.
  EXPECT_TRUE(FailsWith(
      check_dispatch(k, gfx942, {.kernarg_bytes = 20, .workgroup_size = {0xffffffffu, 0xffffffffu, 0xffffffffu}}),
      ErrorKind::InvalidArgument));
  EXPECT_TRUE(FailsWith(check_dispatch(k, gfx942, {.kernarg_bytes = 20, .workgroup_size = {65536, 65536, 1}}),
                        ErrorKind::InvalidArgument));
}

TEST(CheckDispatch, RequiredWorkgroupSizeMustMatchExactly) {
  Kernel k = dispatchable();
  k.reqd_workgroup_size = std::array<std::uint32_t, 3>{64, 1, 1};
  Device gfx942 = device("gfx942");
  EXPECT_TRUE(Succeeds(check_dispatch(k, gfx942, {.kernarg_bytes = 20, .workgroup_size = {64, 1, 1}})));
  auto result = check_dispatch(k, gfx942, {.kernarg_bytes = 20, .workgroup_size = {32, 2, 1}});
  ASSERT_TRUE(FailsWith(result, ErrorKind::InvalidArgument));
  EXPECT_TRUE(FailsAtField(result, ErrorKind::InvalidArgument, "workgroup_size", std::nullopt, 64));
  EXPECT_NE(result.error().message().find("differs from reqd_workgroup_size 64x1x1"), std::string::npos)
      << result.error().message();
}

TEST(CheckDispatch, KernelWithALayoutProblemCannotBeDispatched) {
  Kernel k = kernel(
      "late", 24,
      {ptr(0, "out"), hidden(8, 8, ValueKind::HiddenGlobalOffsetX, "hidden_global_offset_x"), value(16, 4, "n")});
  for (std::uint64_t bytes : {8u, 16u, 20u, 24u}) {
    auto result = check_dispatch(k, device("gfx942"), {.kernarg_bytes = bytes});
    ASSERT_TRUE(FailsWith(result, ErrorKind::Malformed)) << bytes;
    EXPECT_EQ(result.error().message(),
              "kernel \"late\": args[2] (\"n\", by_value) at offset 16 is at or after the first hidden argument, "
              "args[1] (hidden_global_offset_x) at offset 8; the kernel cannot be dispatched");
  }
}

}  // namespace
}  // namespace coload
