// The strict msgpack rules of the metadata decoder (src/code_object/msgpack_reader.cpp
// under src/code_object/metadata.cpp): one root map, required keys, duplicate
// keys, container types, the depth and count limits, and the type and range
// of every value. Well-formed input and findings that do not stop decoding
// are in metadata_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "code_object/metadata.h"
#include "metadata_test_support.h"
#include "support/msgpack_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using namespace metadata_test;
using testing::FailsAtField;
using testing::Succeeds;

// ---------------------------------------------------------------------------
// Structure: one root map, no trailing bytes, required keys, duplicates.

TEST(Metadata, TheRootIsExactlyOneMap) {
  // The root's field is "metadata"; the empty input is its own limit.
  EXPECT_TRUE(FailsAtField(decode(std::vector<std::byte>{}), ErrorKind::Malformed, "metadata", 0, std::nullopt, 0));
  EXPECT_TRUE(FailsAtField(decode(Node::array({one_kernel()})), ErrorKind::Malformed, "metadata", 0));
  EXPECT_TRUE(FailsAtField(decode(Node("amdhsa.version")), ErrorKind::Malformed, "metadata", 0));

  std::vector<std::byte> twice = one_kernel().encode();
  std::vector<std::byte> one = twice;
  twice.insert(twice.end(), one.begin(), one.end());
  EXPECT_TRUE(FailsAtField(decode(twice), ErrorKind::Malformed, "metadata", one.size(), one.size()));

  std::vector<std::byte> padded = one;
  padded.push_back(std::byte{0});
  auto result = decode(padded);
  EXPECT_TRUE(FailsAtField(result, ErrorKind::Malformed, "metadata", one.size(), 1));
}

TEST(Metadata, EveryPrefixOfValidMetadataIsRefused) {
  std::vector<std::byte> bytes = one_kernel().encode();
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    std::vector<std::byte> prefix(bytes.begin(), bytes.begin() + size);
    EXPECT_TRUE(FailsWith(decode(prefix), ErrorKind::Malformed)) << "prefix of " << size << " bytes";
  }
}

TEST(Metadata, RequiredRootKeysMustBePresent) {
  for (const char* key : {"amdhsa.version", "amdhsa.kernels"}) {
    Node document = one_kernel();
    document.erase(key);
    EXPECT_TRUE(FailsAtField(decode(document), ErrorKind::Malformed, "metadata", 0)) << key;
  }
}

TEST(Metadata, RequiredKernelKeysMustBePresent) {
  for (const char* key :
       {".name", ".symbol", ".kernarg_segment_size", ".kernarg_segment_align", ".group_segment_fixed_size",
        ".private_segment_fixed_size", ".wavefront_size", ".sgpr_count", ".vgpr_count", ".max_flat_workgroup_size"}) {
    Node document = metadata({kernel("a"), kernel("b")});
    document["amdhsa.kernels"][1].erase(key);
    auto result = decode(document);
    EXPECT_TRUE(FailsAtPath(result, ErrorKind::Malformed, "amdhsa.kernels[1]")) << key;
  }
}

TEST(Metadata, RequiredArgumentKeysMustBePresent) {
  for (const char* key : {".offset", ".size", ".value_kind"}) {
    Node document = one_kernel();
    first_kernel(document)[".args"][1].erase(key);
    auto result = decode(document);
    EXPECT_TRUE(FailsAtPath(result, ErrorKind::Malformed, "amdhsa.kernels[0].args[1]")) << key;
  }
}

TEST(Metadata, DuplicateKeysAreRefusedInEveryMap) {
  Node root = one_kernel();
  root.add("amdhsa.kernels", Node::array({}));
  EXPECT_TRUE(FailsAtPath(decode(root), ErrorKind::Malformed, "metadata"));

  Node in_kernel = one_kernel();
  first_kernel(in_kernel).add(".group_segment_fixed_size", 0);
  EXPECT_TRUE(FailsAtPath(decode(in_kernel), ErrorKind::Malformed, "amdhsa.kernels[0]"));

  Node in_arg = one_kernel();
  first_arg(in_arg).add(".offset", 0);  // the same value: still a duplicate
  EXPECT_TRUE(FailsAtPath(decode(in_arg), ErrorKind::Malformed, "amdhsa.kernels[0].args[0]"));

  Node unknown_twice = one_kernel();
  first_kernel(unknown_twice).add(".cluster_dims", Node::array({1, 1, 1})).add(".cluster_dims", 0);
  EXPECT_TRUE(FailsWith(decode(unknown_twice), ErrorKind::Malformed));

  // Inside a value nobody reads, with keys of other types and encodings too.
  Node nested = one_kernel();
  nested["vendor.extra"] = Node::map({{"a", 1}, {"b", Node::map({{"x", 1}, {"x", 2}})}});
  EXPECT_TRUE(FailsAtPath(decode(nested), ErrorKind::Malformed, "vendor.extra.b"));
  Writer str8_twice;
  str8_twice.map(2).str("x").uint(1).str8("x").uint(2);
  nested["vendor.extra"] = Node::raw(str8_twice);
  EXPECT_TRUE(FailsWith(decode(nested), ErrorKind::Malformed));
  Writer int_keys;
  int_keys.map(2).uint(7).nil().uint(7).nil();
  nested["vendor.extra"] = Node::raw(int_keys);
  EXPECT_TRUE(FailsAtPath(decode(nested), ErrorKind::Malformed, "vendor.extra"));
  Writer distinct;
  distinct.map(3).uint(7).nil().str("7").nil().array(0).nil();
  nested["vendor.extra"] = Node::raw(distinct);
  EXPECT_TRUE(Succeeds(decode(nested)));
}

// A map's keys are compared in a flat array up to 32 of them and hashed
// beyond (KeySet in metadata.cpp): duplicates and required keys are found
// on both sides of the switch.
TEST(Metadata, DuplicateAndRequiredKeysAreFoundInMapsOfManyKeys) {
  Node many = one_kernel();
  std::vector<Node::Entry>& entries = first_kernel(many).entries();
  std::vector<Node::Entry> known = std::move(entries);
  entries.clear();
  for (int i = 0; i < 40; ++i) entries.emplace_back("vendor.k" + std::to_string(i), i);
  entries.insert(entries.end(), known.begin(), known.end());  // the required keys come after the switch
  auto result = decode(many);
  ASSERT_TRUE(Succeeds(result));
  EXPECT_EQ(result->metadata.unknown_keys.size(), 40u);
  EXPECT_EQ(result->metadata.kernels.at(0).name, "k");

  Node early = many;
  first_kernel(early).add("vendor.k3", 0);  // first seen before the switch
  EXPECT_TRUE(FailsAtPath(decode(early), ErrorKind::Malformed, "amdhsa.kernels[0]"));
  Node late = many;
  first_kernel(late).add(".name", "again");  // first seen after it
  EXPECT_TRUE(FailsAtPath(decode(late), ErrorKind::Malformed, "amdhsa.kernels[0]"));
  Node missing = many;
  first_kernel(missing).erase(".vgpr_count");
  EXPECT_TRUE(FailsAtPath(decode(missing), ErrorKind::Malformed, "amdhsa.kernels[0]"));
}

TEST(Metadata, KeysOfKnownMapsAreStrings) {
  Writer document;
  document.map(3).str("amdhsa.version").array(2).uint(1).uint(2).str("amdhsa.kernels").array(0).uint(5).nil();
  EXPECT_TRUE(FailsAtPath(decode(document.take()), ErrorKind::Malformed, "metadata"));
}

TEST(Metadata, ContainersHaveTheirDeclaredType) {
  Node document = one_kernel();
  document["amdhsa.kernels"] = Node::map({});
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels"));
  document = metadata({kernel("a"), Node::array({})});
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels[1]"));
  document = one_kernel();
  first_kernel(document)[".args"] = "none";
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].args"));
  document = one_kernel();
  first_kernel(document)[".args"].items().push_back(7);
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].args[2]"));
  document = one_kernel();
  document["amdhsa.printf"] = Node::array({"1:0:x", 5});
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.printf[1]"));
}

// ---------------------------------------------------------------------------
// Depth and counts.

/// `step` `count` times: the key path down a nest of containers.
std::string repeated(std::string_view step, std::size_t count) {
  std::string path;
  for (std::size_t i = 0; i < count; ++i) path += step;
  return path;
}

TEST(Metadata, NestingDeeperThanTheLimitIsRefused) {
  // The root map is depth 1, so a root key's value starts at depth 2: the
  // container at depth 65 is the 64th of the nest, 63 steps below the key.
  Node document = one_kernel();
  document["vendor.deep"] = Node::raw(nested(detail::kMaxMetadataDepth - 1));
  EXPECT_TRUE(Succeeds(decode(document)));
  document["vendor.deep"] = Node::raw(nested(detail::kMaxMetadataDepth));
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::LimitExceeded, "vendor.deep" + repeated("[0]", 63), 65, 64));
  document["vendor.deep"] = Node::raw(nested(detail::kMaxMetadataDepth, /*maps=*/true));
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::LimitExceeded, "vendor.deep" + repeated(".k", 63), 65, 64));

  // An argument map is depth 5: its unknown values start at 6.
  Node in_arg = one_kernel();
  first_arg(in_arg)["vendor.deep"] = Node::raw(nested(detail::kMaxMetadataDepth - 5));
  EXPECT_TRUE(Succeeds(decode(in_arg)));
  first_arg(in_arg)["vendor.deep"] = Node::raw(nested(detail::kMaxMetadataDepth - 4));
  EXPECT_TRUE(FailsAtPath(decode(in_arg), ErrorKind::LimitExceeded,
                          "amdhsa.kernels[0].args[0].vendor.deep" + repeated("[0]", 59), 65, 64));

  // A million nested arrays: refused at the limit, not after a deep recursion.
  document["vendor.deep"] = Node::raw(nested(1'000'000));
  EXPECT_TRUE(FailsWith(decode(document), ErrorKind::LimitExceeded));
}

TEST(Metadata, KernelAndArgumentCountsAreCapped) {
  constexpr std::uint32_t kTooMany = 65537;
  Writer kernels;
  kernels.map(2).str("amdhsa.version").array(2).uint(1).uint(2).str("amdhsa.kernels").array32(kTooMany);
  for (std::uint32_t i = 0; i < kTooMany; ++i) kernels.map(0);
  EXPECT_TRUE(FailsAtPath(decode(kernels.take()), ErrorKind::LimitExceeded, "amdhsa.kernels", kTooMany, 65536));

  Node document = one_kernel();
  Writer args;
  args.array32(kTooMany);
  for (std::uint32_t i = 0; i < kTooMany; ++i) args.map(0);
  first_kernel(document)[".args"] = Node::raw(args);
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::LimitExceeded, "amdhsa.kernels[0].args", kTooMany, 65536));
}

TEST(Metadata, CountsLargerThanTheBytesLeftAreRefusedBeforeReading) {
  Writer root;
  root.map32(0xffffffff).str("amdhsa.version");
  std::vector<std::byte> bytes = root.take();
  // A map entry takes at least two bytes: the count needs twice as many as are left.
  EXPECT_TRUE(FailsAtField(decode(bytes), ErrorKind::Malformed, "metadata", 0, 2 * std::uint64_t{0xffffffff},
                           bytes.size() - 5));
  Writer kernels;
  kernels.map(2).str("amdhsa.version").array(2).uint(1).uint(2).str("amdhsa.kernels").array32(0xffffffff).map(0);
  EXPECT_TRUE(FailsAtPath(decode(kernels.take()), ErrorKind::LimitExceeded, "amdhsa.kernels", 0xffffffff, 65536));
  Node document = one_kernel();
  document["vendor.x"] = Node::raw(Writer().array16(100).nil());
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "vendor.x", 100, 1));
}

// ---------------------------------------------------------------------------
// Integers, strings, booleans.

const char* const kIntegerKernelKeys[] = {".kernarg_segment_size",
                                          ".kernarg_segment_align",
                                          ".group_segment_fixed_size",
                                          ".private_segment_fixed_size",
                                          ".wavefront_size",
                                          ".sgpr_count",
                                          ".vgpr_count",
                                          ".agpr_count",
                                          ".max_flat_workgroup_size",
                                          ".sgpr_spill_count",
                                          ".vgpr_spill_count"};

TEST(Metadata, IntegerFieldsRefuseOtherTypes) {
  const std::pair<Node, const char*> wrong[] = {
      {Node("8"), "found string \"8\""},
      {Node::boolean(true), "found boolean true"},
      {Node(), "found nil"},
      {Node::raw(Writer().f64(8.0)), "found float64 8"},
      {Node::raw(Writer().bin("\x08")), "found bin8 of 1 bytes"},
      {Node::array({8}), "found fixarray of 1 elements"},
  };
  for (const char* key : kIntegerKernelKeys) {
    for (const auto& [value, found] : wrong) {
      Node document = one_kernel();
      first_kernel(document)[key] = value;
      auto result = decode(document);
      EXPECT_TRUE(FailsAtPath(result, ErrorKind::Malformed, std::string("amdhsa.kernels[0]") + key)) << key << found;
    }
  }
  for (const char* key : {".offset", ".size", ".pointee_align"}) {
    Node document = one_kernel();
    first_kernel(document)[".args"][1][key] = "8";
    EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, std::string("amdhsa.kernels[0].args[1]") + key));
  }
}

TEST(Metadata, SignedEncodingsAreAcceptedOnlyWhenNotNegative) {
  Node document = one_kernel();
  first_arg(document)[".offset"] = Node::raw(Writer().i8(0));
  first_arg(document)[".size"] = Node::raw(Writer().i64(8));
  first_kernel(document)[".sgpr_count"] = Node::raw(Writer().i16(300));
  auto result = decode(document);
  ASSERT_TRUE(Succeeds(result));
  EXPECT_EQ(result->metadata.kernels[0].args[0].size, 8u);
  EXPECT_EQ(result->metadata.kernels[0].sgpr_count, 300u);

  first_arg(document)[".offset"] = -1;  // negative fixint
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].args[0].offset"));
  first_arg(document)[".offset"] = Node::raw(Writer().i64(-4096));
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].args[0].offset"));
}

TEST(Metadata, ValuesAbove32BitsAreRefused) {
  Node document = one_kernel();
  first_kernel(document)[".kernarg_segment_size"] = Node::raw(Writer().u64(0xffffffff));
  auto result = decode(document);
  ASSERT_TRUE(Succeeds(result));
  EXPECT_EQ(result->metadata.kernels[0].kernarg_segment_size, 0xffffffffu);
  first_kernel(document)[".kernarg_segment_size"] = Node::raw(Writer().u64(0x100000000));
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].kernarg_segment_size", 0x100000000,
                          0xffffffff));
  first_kernel(document)[".kernarg_segment_size"] = Node::raw(Writer().i64(0x100000000));
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].kernarg_segment_size", 0x100000000,
                          0xffffffff));
}

TEST(Metadata, AlignmentsArePowersOfTwo) {
  for (int align : {1, 4, 16, 256}) {
    Node document = one_kernel();
    first_kernel(document)[".kernarg_segment_align"] = align;
    first_arg(document)[".pointee_align"] = align;
    EXPECT_TRUE(Succeeds(decode(document))) << align;
  }
  for (int align : {0, 3, 12, 255}) {
    Node document = one_kernel();
    first_kernel(document)[".kernarg_segment_align"] = align;
    EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].kernarg_segment_align", align))
        << align;
    document = one_kernel();
    first_arg(document)[".pointee_align"] = align;
    EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].args[0].pointee_align", align))
        << align;
  }
}

TEST(Metadata, WavefrontSizeIs32Or64) {
  for (int size : {32, 64}) {
    Node document = one_kernel();
    first_kernel(document)[".wavefront_size"] = size;
    auto result = decode(document);
    ASSERT_TRUE(Succeeds(result));
    EXPECT_EQ(result->metadata.kernels[0].wavefront_size, static_cast<std::uint32_t>(size));
  }
  for (int size : {0, 16, 48, 128}) {
    Node document = one_kernel();
    first_kernel(document)[".wavefront_size"] = size;
    EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].wavefront_size", size)) << size;
  }
}

TEST(Metadata, WorkgroupSizesAreExactlyThreeIntegers) {
  for (const char* key : {".reqd_workgroup_size", ".workgroup_size_hint"}) {
    // A wrong count or type is the key's; a wrong element is that element's.
    const std::pair<Node, const char*> wrong[] = {{Node::array({64, 1}), ""},
                                                  {Node::array({64, 1, 1, 1}), ""},
                                                  {Node::array({64, "1", 1}), "[1]"},
                                                  {Node::array({64, 1, -1}), "[2]"},
                                                  {Node(64), ""}};
    for (const auto& [value, element] : wrong) {
      Node document = one_kernel();
      first_kernel(document)[key] = value;
      EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, std::string("amdhsa.kernels[0]") + key + element))
          << key << element;
    }
  }
}

TEST(Metadata, TheVersionIsTwoIntegersWithMajorOne) {
  const std::pair<Node, const char*> wrong[] = {
      {Node::array({1}), ""}, {Node::array({1, 2, 0}), ""}, {Node::array({"1", "2"}), "[0]"}, {Node("1.2"), ""}};
  for (const auto& [value, element] : wrong) {
    Node document = one_kernel();
    document["amdhsa.version"] = value;
    EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, std::string("amdhsa.version") + element))
        << element;
  }
  Node document = one_kernel();
  document["amdhsa.version"] = Node::array({1, 0});
  EXPECT_TRUE(Succeeds(decode(document)));
  document["amdhsa.version"] = Node::array({2, 0});
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::UnsupportedVersion, "amdhsa.version", 2));
}

TEST(Metadata, StringAndBooleanFieldsRefuseOtherTypes) {
  for (const char* key : {".name", ".symbol", ".language", ".vec_type_hint", ".kind"}) {
    Node document = one_kernel();
    first_kernel(document)[key] = 1;
    EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, std::string("amdhsa.kernels[0]") + key)) << key;
  }
  for (const char* key : {".value_kind", ".name", ".type_name", ".address_space", ".access", ".actual_access"}) {
    Node document = one_kernel();
    first_arg(document)[key] = Node::boolean(false);
    EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, std::string("amdhsa.kernels[0].args[0]") + key))
        << key;
  }
  for (const char* key : {".is_const", ".is_restrict", ".is_volatile", ".is_pipe"}) {
    Node document = one_kernel();
    first_arg(document)[key] = 1;
    EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, std::string("amdhsa.kernels[0].args[0]") + key))
        << key;
  }
  Node document = one_kernel();
  first_kernel(document)[".uses_dynamic_stack"] = 0;
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].uses_dynamic_stack"));
  document = one_kernel();
  document["amdhsa.target"] = Node::array({});
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.target"));
}

TEST(Metadata, NamesAndSymbolsHaveNoNulBytes) {
  Node document = one_kernel();
  first_kernel(document)[".symbol"] = std::string("k\0.kd", 5);
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].symbol"));
}

}  // namespace
}  // namespace coload
