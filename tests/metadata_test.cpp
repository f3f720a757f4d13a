// The strict msgpack decoder of the NT_AMDGPU_METADATA note
// (src/codeobject/metadata.cpp), on inputs built with the test-side msgpack
// writer. The notes of clang-22's code objects, and comparisons with comgr and
// llvm-readelf, are in metadata_fixture_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codeobject/metadata.h"
#include "common/bytes.h"
#include "support/msgpack_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using detail::decode_metadata;
using detail::DecodedMetadata;
using testing::FailsWith;
using testing::Succeeds;
using testing::msgpack::Node;
using testing::msgpack::Writer;

Expected<DecodedMetadata> decode(const std::vector<std::byte>& bytes) { return decode_metadata(bytes); }
Expected<DecodedMetadata> decode(const Node& document) { return decode(document.encode()); }

/// Fails with exactly `kind`, and the message names `text` (a key path, a value).
::testing::AssertionResult FailsNaming(const Expected<DecodedMetadata>& result, ErrorKind kind, std::string_view text) {
  auto failed = FailsWith(result, kind);
  if (!failed) return failed;
  const std::string& message = result.error().message();
  if (message.find(text) == std::string::npos) {
    return ::testing::AssertionFailure() << "message \"" << message << "\" does not name \"" << text << "\"";
  }
  if (message.find(" at byte 0x") == std::string::npos) {
    return ::testing::AssertionFailure() << "message \"" << message << "\" gives no byte offset";
  }
  return ::testing::AssertionSuccess();
}

Node arg(std::uint32_t offset, std::uint32_t size, const char* kind) {
  return Node::map({{".offset", offset}, {".size", size}, {".value_kind", kind}});
}

Node kernel(const std::string& name) {
  return Node::map({{".name", name},
                    {".symbol", name + ".kd"},
                    {".kernarg_segment_size", 16},
                    {".kernarg_segment_align", 8},
                    {".group_segment_fixed_size", 1024},
                    {".private_segment_fixed_size", 32},
                    {".wavefront_size", 64},
                    {".sgpr_count", 12},
                    {".vgpr_count", 5},
                    {".max_flat_workgroup_size", 256},
                    {".args", Node::array({arg(0, 8, "global_buffer"), arg(8, 4, "by_value")})}});
}

Node metadata(std::vector<Node> kernels) {
  return Node::map({{"amdhsa.version", Node::array({1, 2})},
                    {"amdhsa.target", "amdgcn-amd-amdhsa--gfx90a"},
                    {"amdhsa.kernels", Node::array(std::move(kernels))}});
}

Node one_kernel() { return metadata({kernel("k")}); }
Node& first_kernel(Node& document) { return document["amdhsa.kernels"][0]; }
Node& first_arg(Node& document) { return first_kernel(document)[".args"][0]; }

/// `count` containers nested in one another, the innermost empty.
Writer nested(std::size_t count, bool maps = false) {
  Writer out;
  for (std::size_t i = 0; i + 1 < count; ++i) {
    if (maps) {
      out.map(1).str("k");
    } else {
      out.array(1);
    }
  }
  if (maps) {
    out.map(0);
  } else {
    out.array(0);
  }
  return out;
}

// ---------------------------------------------------------------------------
// Well-formed input.

TEST(Metadata, DecodesTheRequiredKeys) {
  auto result = decode(one_kernel());
  ASSERT_TRUE(Succeeds(result));
  const Metadata& m = result->metadata;
  EXPECT_EQ(m.version_major, 1u);
  EXPECT_EQ(m.version_minor, 2u);
  EXPECT_EQ(m.target, "amdgcn-amd-amdhsa--gfx90a");
  ASSERT_EQ(m.kernels.size(), 1u);
  const Kernel& k = m.kernels[0];
  EXPECT_EQ(k.name, "k");
  EXPECT_EQ(k.symbol, "k.kd");
  EXPECT_EQ(k.kernarg_segment_size, 16u);
  EXPECT_EQ(k.kernarg_segment_align, 8u);
  EXPECT_EQ(k.group_segment_fixed_size, 1024u);
  EXPECT_EQ(k.private_segment_fixed_size, 32u);
  EXPECT_EQ(k.wavefront_size, 64u);
  EXPECT_EQ(k.sgpr_count, 12u);
  EXPECT_EQ(k.vgpr_count, 5u);
  EXPECT_EQ(k.max_flat_workgroup_size, 256u);
  EXPECT_FALSE(k.agpr_count || k.reqd_workgroup_size || k.workgroup_size_hint || k.uses_dynamic_stack ||
               k.workgroup_processor_mode || k.uniform_work_group_size || k.sgpr_spill_count ||
               k.vgpr_spill_count);
  ASSERT_EQ(k.args.size(), 2u);
  EXPECT_EQ(k.args[0].offset, 0u);
  EXPECT_EQ(k.args[0].size, 8u);
  EXPECT_EQ(k.args[0].kind, ValueKind::GlobalBuffer);
  EXPECT_EQ(k.args[0].kind_text, "global_buffer");
  EXPECT_EQ(k.args[1].kind, ValueKind::ByValue);
  EXPECT_TRUE(m.unknown_keys.empty());
  EXPECT_TRUE(result->problems.empty());
}

TEST(Metadata, DecodesEveryOptionalKey) {
  Node document = one_kernel();
  document["amdhsa.printf"] = Node::array({"1:1:4:%d\\n", "2:0:done"});
  Node& k = first_kernel(document);
  k[".agpr_count"] = 4;
  k[".reqd_workgroup_size"] = Node::array({64, 2, 1});
  k[".workgroup_size_hint"] = Node::array({32, 1, 1});
  k[".uses_dynamic_stack"] = Node::boolean(true);
  k[".workgroup_processor_mode"] = 1;
  k[".uniform_work_group_size"] = 1;
  k[".sgpr_spill_count"] = 3;
  k[".vgpr_spill_count"] = 7;
  k[".language"] = "OpenCL C";
  k[".language_version"] = Node::array({2, 0});
  k[".vec_type_hint"] = "int";
  k[".device_enqueue_symbol"] = "k.enq";
  k[".kind"] = "normal";
  Node& a = k[".args"][0];
  a[".name"] = "data";
  a[".type_name"] = "float*";
  a[".address_space"] = "global";
  a[".access"] = "read_only";
  a[".actual_access"] = "read_write";
  a[".pointee_align"] = 16;
  a[".is_const"] = Node::boolean(true);
  a[".is_restrict"] = Node::boolean(true);
  a[".is_volatile"] = Node::boolean(true);
  a[".is_pipe"] = Node::boolean(false);
  a[".value_type"] = "f32";  // deprecated: accepted and ignored

  auto result = decode(document);
  ASSERT_TRUE(Succeeds(result));
  const Metadata& m = result->metadata;
  EXPECT_EQ(m.printf_formats, (std::vector<std::string>{"1:1:4:%d\\n", "2:0:done"}));
  const Kernel& d = m.kernels.at(0);
  EXPECT_EQ(d.agpr_count, 4u);
  EXPECT_EQ(d.reqd_workgroup_size, (std::array<std::uint32_t, 3>{64, 2, 1}));
  EXPECT_EQ(d.workgroup_size_hint, (std::array<std::uint32_t, 3>{32, 1, 1}));
  EXPECT_EQ(d.uses_dynamic_stack, true);
  EXPECT_EQ(d.workgroup_processor_mode, 1u);
  EXPECT_EQ(d.uniform_work_group_size, 1u);
  EXPECT_EQ(d.sgpr_spill_count, 3u);
  EXPECT_EQ(d.vgpr_spill_count, 7u);
  EXPECT_EQ(d.language, "OpenCL C");
  const KernelArg& da = d.args.at(0);
  EXPECT_EQ(da.name, "data");
  EXPECT_EQ(da.type_name, "float*");
  EXPECT_EQ(da.address_space, AddressSpace::Global);
  EXPECT_EQ(da.access, Access::ReadOnly);
  EXPECT_EQ(da.actual_access, Access::ReadWrite);
  EXPECT_EQ(da.pointee_align, 16u);
  EXPECT_TRUE(da.is_const && da.is_restrict && da.is_volatile && !da.is_pipe);
  EXPECT_TRUE(m.unknown_keys.empty()) << m.unknown_keys.front();
  EXPECT_TRUE(result->problems.empty()) << result->problems.front().message;
}

TEST(Metadata, AcceptsAnEmptyKernelListAndKernelsWithoutArgs) {
  ASSERT_TRUE(Succeeds(decode(metadata({}))));
  Node document = one_kernel();
  first_kernel(document).erase(".args");
  auto result = decode(document);
  ASSERT_TRUE(Succeeds(result));
  EXPECT_TRUE(result->metadata.kernels.at(0).args.empty());
  first_kernel(document)[".args"] = Node::array({});
  EXPECT_TRUE(Succeeds(decode(document)));
}

TEST(Metadata, AcceptsTheKeysInAnyOrderAndWithoutTheTarget) {
  Node document = one_kernel();
  std::reverse(document.entries().begin(), document.entries().end());
  std::reverse(first_kernel(document).entries().begin(), first_kernel(document).entries().end());
  document.erase("amdhsa.target");
  auto result = decode(document);
  ASSERT_TRUE(Succeeds(result));
  EXPECT_EQ(result->metadata.target, "");
  EXPECT_EQ(result->metadata.kernels.at(0).name, "k");
}

TEST(Metadata, WorkgroupProcessorModeAndUniformWorkGroupSizeMayBeBooleans) {
  Node document = one_kernel();
  first_kernel(document)[".workgroup_processor_mode"] = Node::boolean(true);
  first_kernel(document)[".uniform_work_group_size"] = Node::boolean(false);
  auto result = decode(document);
  ASSERT_TRUE(Succeeds(result));
  EXPECT_EQ(result->metadata.kernels.at(0).workgroup_processor_mode, 1u);
  EXPECT_EQ(result->metadata.kernels.at(0).uniform_work_group_size, 0u);
  first_kernel(document)[".workgroup_processor_mode"] = "1";
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].workgroup_processor_mode"));
}

// ---------------------------------------------------------------------------
// Value kinds, address spaces, accesses.

TEST(Metadata, EveryValueKindSpellingDecodesToItsKind) {
  std::vector<Node> args;
  std::uint32_t offset = 0;
  for (int i = 0; i < static_cast<int>(ValueKind::HiddenUnknown); ++i) {
    args.push_back(arg(offset, 8, std::string(to_string(static_cast<ValueKind>(i))).c_str()));
    offset += 8;
  }
  Node document = one_kernel();
  first_kernel(document)[".args"] = Node::array(args);
  auto result = decode(document);
  ASSERT_TRUE(Succeeds(result));
  const auto& decoded = result->metadata.kernels.at(0).args;
  ASSERT_EQ(decoded.size(), args.size());
  for (std::size_t i = 0; i < decoded.size(); ++i) {
    EXPECT_EQ(decoded[i].kind, static_cast<ValueKind>(i)) << decoded[i].kind_text;
    EXPECT_EQ(decoded[i].kind_text, to_string(static_cast<ValueKind>(i)));
    EXPECT_EQ(is_hidden(decoded[i].kind), decoded[i].kind_text.starts_with("hidden_"));
  }
}

TEST(Metadata, AnUnknownHiddenKindIsKeptAsHiddenUnknown) {
  Node document = one_kernel();
  first_kernel(document)[".args"].items().push_back(arg(16, 8, "hidden_cluster_id_x"));
  auto result = decode(document);
  ASSERT_TRUE(Succeeds(result));
  const KernelArg& a = result->metadata.kernels.at(0).args.at(2);
  EXPECT_EQ(a.kind, ValueKind::HiddenUnknown);
  EXPECT_EQ(a.kind_text, "hidden_cluster_id_x");
  EXPECT_TRUE(is_hidden(a.kind));
}

TEST(Metadata, AnUnknownExplicitKindIsMalformed) {
  for (const char* kind : {"by_reference", "Global_Buffer", "", "hidden"}) {
    Node document = one_kernel();
    first_arg(document)[".value_kind"] = kind;
    EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].args[0].value_kind")) << kind;
  }
}

TEST(Metadata, AddressSpacesAndAccessesUseTheirSpellings) {
  for (auto space : {AddressSpace::Private, AddressSpace::Global, AddressSpace::Constant, AddressSpace::Local,
                     AddressSpace::Generic, AddressSpace::Region}) {
    Node document = one_kernel();
    first_arg(document)[".address_space"] = std::string(to_string(space));
    auto result = decode(document);
    ASSERT_TRUE(Succeeds(result));
    EXPECT_EQ(result->metadata.kernels[0].args[0].address_space, space);
  }
  for (auto access : {Access::ReadOnly, Access::WriteOnly, Access::ReadWrite}) {
    Node document = one_kernel();
    first_arg(document)[".actual_access"] = std::string(to_string(access));
    auto result = decode(document);
    ASSERT_TRUE(Succeeds(result));
    EXPECT_EQ(result->metadata.kernels[0].args[0].actual_access, access);
  }
  Node document = one_kernel();
  first_arg(document)[".address_space"] = "flat";
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "\"flat\" is not an address space"));
  document = one_kernel();
  first_arg(document)[".access"] = "unspecified";
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].args[0].access"));
}

TEST(Metadata, EnumNames) {
  EXPECT_EQ(to_string(ValueKind::HiddenBlockCountX), "hidden_block_count_x");
  EXPECT_EQ(to_string(ValueKind::HiddenDynamicLdsSize), "hidden_dynamic_lds_size");
  EXPECT_EQ(to_string(ValueKind::DynamicSharedPointer), "dynamic_shared_pointer");
  EXPECT_FALSE(is_hidden(ValueKind::Queue));
  EXPECT_TRUE(is_hidden(ValueKind::HiddenGlobalOffsetX));
  EXPECT_TRUE(is_hidden(ValueKind::HiddenUnknown));
  EXPECT_EQ(to_string(AddressSpace::Region), "region");
  EXPECT_EQ(to_string(AddressSpace::Unspecified), "unspecified");
  EXPECT_EQ(to_string(Access::WriteOnly), "write_only");
  EXPECT_EQ(to_string(Access::Unspecified), "unspecified");
}

// ---------------------------------------------------------------------------
// Structure: one root map, no trailing bytes, required keys, duplicates.

TEST(Metadata, TheRootIsExactlyOneMap) {
  EXPECT_TRUE(FailsNaming(decode(std::vector<std::byte>{}), ErrorKind::Malformed, "metadata ends"));
  EXPECT_TRUE(FailsNaming(decode(Node::array({one_kernel()})), ErrorKind::Malformed, "expected a map"));
  EXPECT_TRUE(FailsNaming(decode(Node("amdhsa.version")), ErrorKind::Malformed, "expected a map"));

  std::vector<std::byte> twice = one_kernel().encode();
  std::vector<std::byte> one = twice;
  twice.insert(twice.end(), one.begin(), one.end());
  EXPECT_TRUE(FailsNaming(decode(twice), ErrorKind::Malformed, "trailing bytes after the root map"));

  std::vector<std::byte> padded = one;
  padded.push_back(std::byte{0});
  auto result = decode(padded);
  EXPECT_TRUE(FailsNaming(result, ErrorKind::Malformed, "1 trailing byte after the root map"));
  EXPECT_NE(result.error().message().find("at byte " + detail::hex(one.size())), std::string::npos)
      << result.error().message();
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
    EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, std::string("required key ") + key)) << key;
  }
}

TEST(Metadata, RequiredKernelKeysMustBePresent) {
  for (const char* key : {".name", ".symbol", ".kernarg_segment_size", ".kernarg_segment_align",
                          ".group_segment_fixed_size", ".private_segment_fixed_size", ".wavefront_size",
                          ".sgpr_count", ".vgpr_count", ".max_flat_workgroup_size"}) {
    Node document = metadata({kernel("a"), kernel("b")});
    document["amdhsa.kernels"][1].erase(key);
    auto result = decode(document);
    EXPECT_TRUE(FailsNaming(result, ErrorKind::Malformed, std::string("required key ") + key)) << key;
    EXPECT_TRUE(FailsNaming(result, ErrorKind::Malformed, "amdhsa.kernels[1] at byte")) << key;
  }
}

TEST(Metadata, RequiredArgumentKeysMustBePresent) {
  for (const char* key : {".offset", ".size", ".value_kind"}) {
    Node document = one_kernel();
    first_kernel(document)[".args"][1].erase(key);
    auto result = decode(document);
    EXPECT_TRUE(FailsNaming(result, ErrorKind::Malformed, std::string("required key ") + key)) << key;
    EXPECT_TRUE(FailsNaming(result, ErrorKind::Malformed, "amdhsa.kernels[0].args[1] at byte")) << key;
  }
}

TEST(Metadata, DuplicateKeysAreRefusedInEveryMap) {
  Node root = one_kernel();
  root.add("amdhsa.kernels", Node::array({}));
  EXPECT_TRUE(FailsNaming(decode(root), ErrorKind::Malformed, "duplicate key string \"amdhsa.kernels\""));

  Node in_kernel = one_kernel();
  first_kernel(in_kernel).add(".group_segment_fixed_size", 0);
  EXPECT_TRUE(FailsNaming(decode(in_kernel), ErrorKind::Malformed, "amdhsa.kernels[0] at byte"));
  EXPECT_TRUE(FailsNaming(decode(in_kernel), ErrorKind::Malformed, "duplicate key string \".group_segment_fixed_size\""));

  Node in_arg = one_kernel();
  first_arg(in_arg).add(".offset", 0);  // the same value: still a duplicate
  EXPECT_TRUE(FailsNaming(decode(in_arg), ErrorKind::Malformed, "amdhsa.kernels[0].args[0] at byte"));

  Node unknown_twice = one_kernel();
  first_kernel(unknown_twice).add(".cluster_dims", Node::array({1, 1, 1})).add(".cluster_dims", 0);
  EXPECT_TRUE(FailsWith(decode(unknown_twice), ErrorKind::Malformed));

  // Inside a value nobody reads, with keys of other types and encodings too.
  Node nested = one_kernel();
  nested["vendor.extra"] = Node::map({{"a", 1}, {"b", Node::map({{"x", 1}, {"x", 2}})}});
  EXPECT_TRUE(FailsNaming(decode(nested), ErrorKind::Malformed, "vendor.extra.b at byte"));
  Writer str8_twice;
  str8_twice.map(2).str("x").uint(1).str8("x").uint(2);
  nested["vendor.extra"] = Node::raw(str8_twice);
  EXPECT_TRUE(FailsWith(decode(nested), ErrorKind::Malformed));
  Writer int_keys;
  int_keys.map(2).uint(7).nil().uint(7).nil();
  nested["vendor.extra"] = Node::raw(int_keys);
  EXPECT_TRUE(FailsNaming(decode(nested), ErrorKind::Malformed, "duplicate key positive fixint 7"));
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
  EXPECT_TRUE(FailsNaming(decode(early), ErrorKind::Malformed, "duplicate key string \"vendor.k3\""));
  Node late = many;
  first_kernel(late).add(".name", "again");  // first seen after it
  EXPECT_TRUE(FailsNaming(decode(late), ErrorKind::Malformed, "duplicate key string \".name\""));
  Node missing = many;
  first_kernel(missing).erase(".vgpr_count");
  EXPECT_TRUE(FailsNaming(decode(missing), ErrorKind::Malformed, "required key .vgpr_count is missing"));
}

TEST(Metadata, KeysOfKnownMapsAreStrings) {
  Writer document;
  document.map(3).str("amdhsa.version").array(2).uint(1).uint(2).str("amdhsa.kernels").array(0).uint(5).nil();
  EXPECT_TRUE(FailsNaming(decode(document.take()), ErrorKind::Malformed, "expected a string key, found positive fixint 5"));
}

TEST(Metadata, ContainersHaveTheirDeclaredType) {
  Node document = one_kernel();
  document["amdhsa.kernels"] = Node::map({});
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "amdhsa.kernels at byte"));
  document = metadata({kernel("a"), Node::array({})});
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "amdhsa.kernels[1] at byte"));
  document = one_kernel();
  first_kernel(document)[".args"] = "none";
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].args at byte"));
  document = one_kernel();
  first_kernel(document)[".args"].items().push_back(7);
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].args[2] at byte"));
  document = one_kernel();
  document["amdhsa.printf"] = Node::array({"1:0:x", 5});
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "amdhsa.printf[1] at byte"));
}

// ---------------------------------------------------------------------------
// Depth and counts.

TEST(Metadata, NestingDeeperThanTheLimitIsRefused) {
  // The root map is depth 1, so a root key's value starts at depth 2.
  Node document = one_kernel();
  document["vendor.deep"] = Node::raw(nested(detail::kMaxMetadataDepth - 1));
  EXPECT_TRUE(Succeeds(decode(document)));
  document["vendor.deep"] = Node::raw(nested(detail::kMaxMetadataDepth));
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::LimitExceeded, "nesting depth 65 exceeds the limit of 64"));
  document["vendor.deep"] = Node::raw(nested(detail::kMaxMetadataDepth, /*maps=*/true));
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::LimitExceeded, "vendor.deep.k.k"));

  // An argument map is depth 5: its unknown values start at 6.
  Node in_arg = one_kernel();
  first_arg(in_arg)["vendor.deep"] = Node::raw(nested(detail::kMaxMetadataDepth - 5));
  EXPECT_TRUE(Succeeds(decode(in_arg)));
  first_arg(in_arg)["vendor.deep"] = Node::raw(nested(detail::kMaxMetadataDepth - 4));
  EXPECT_TRUE(FailsNaming(decode(in_arg), ErrorKind::LimitExceeded, "amdhsa.kernels[0].args[0].vendor.deep"));

  // A million nested arrays: refused at the limit, not after a deep recursion.
  document["vendor.deep"] = Node::raw(nested(1'000'000));
  EXPECT_TRUE(FailsWith(decode(document), ErrorKind::LimitExceeded));
}

TEST(Metadata, KernelAndArgumentCountsAreCapped) {
  constexpr std::uint32_t kTooMany = 65537;
  Writer kernels;
  kernels.map(2).str("amdhsa.version").array(2).uint(1).uint(2).str("amdhsa.kernels").array32(kTooMany);
  for (std::uint32_t i = 0; i < kTooMany; ++i) kernels.map(0);
  EXPECT_TRUE(FailsNaming(decode(kernels.take()), ErrorKind::LimitExceeded, "65537 kernels exceed the limit of 65536"));

  Node document = one_kernel();
  Writer args;
  args.array32(kTooMany);
  for (std::uint32_t i = 0; i < kTooMany; ++i) args.map(0);
  first_kernel(document)[".args"] = Node::raw(args);
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::LimitExceeded, "amdhsa.kernels[0].args at byte"));
}

TEST(Metadata, CountsLargerThanTheBytesLeftAreRefusedBeforeReading) {
  Writer root;
  root.map32(0xffffffff).str("amdhsa.version");
  EXPECT_TRUE(FailsNaming(decode(root.take()), ErrorKind::Malformed, "map32 of 4294967295 entries needs at least"));
  Writer kernels;
  kernels.map(2).str("amdhsa.version").array(2).uint(1).uint(2).str("amdhsa.kernels").array32(0xffffffff).map(0);
  EXPECT_TRUE(FailsNaming(decode(kernels.take()), ErrorKind::LimitExceeded, "amdhsa.kernels"));
  Node document = one_kernel();
  document["vendor.x"] = Node::raw(Writer().array16(100).nil());
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "array16 of 100 elements needs at least 100"));
}

// ---------------------------------------------------------------------------
// Integers, strings, booleans.

const char* const kIntegerKernelKeys[] = {".kernarg_segment_size", ".kernarg_segment_align", ".group_segment_fixed_size",
                                          ".private_segment_fixed_size", ".wavefront_size", ".sgpr_count",
                                          ".vgpr_count", ".agpr_count", ".max_flat_workgroup_size",
                                          ".sgpr_spill_count", ".vgpr_spill_count"};

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
      EXPECT_TRUE(FailsNaming(result, ErrorKind::Malformed, std::string("amdhsa.kernels[0]") + key)) << key;
      EXPECT_TRUE(FailsNaming(result, ErrorKind::Malformed, found)) << key;
    }
  }
  for (const char* key : {".offset", ".size", ".pointee_align"}) {
    Node document = one_kernel();
    first_kernel(document)[".args"][1][key] = "8";
    EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, std::string("amdhsa.kernels[0].args[1]") + key));
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
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].args[0].offset"));
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "negative value negative fixint -1"));
  first_arg(document)[".offset"] = Node::raw(Writer().i64(-4096));
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "int64 -4096"));
}

TEST(Metadata, ValuesAbove32BitsAreRefused) {
  Node document = one_kernel();
  first_kernel(document)[".kernarg_segment_size"] = Node::raw(Writer().u64(0xffffffff));
  auto result = decode(document);
  ASSERT_TRUE(Succeeds(result));
  EXPECT_EQ(result->metadata.kernels[0].kernarg_segment_size, 0xffffffffu);
  first_kernel(document)[".kernarg_segment_size"] = Node::raw(Writer().u64(0x100000000));
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "uint64 4294967296 exceeds the 32-bit limit"));
  first_kernel(document)[".kernarg_segment_size"] = Node::raw(Writer().i64(0x100000000));
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].kernarg_segment_size"));
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
    EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "kernarg_segment_align")) << align;
    document = one_kernel();
    first_arg(document)[".pointee_align"] = align;
    EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "is not a power of two")) << align;
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
    EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "is not 32 or 64")) << size;
  }
}

TEST(Metadata, WorkgroupSizesAreExactlyThreeIntegers) {
  for (const char* key : {".reqd_workgroup_size", ".workgroup_size_hint"}) {
    for (const Node& wrong : {Node::array({64, 1}), Node::array({64, 1, 1, 1}), Node::array({64, "1", 1}),
                              Node::array({64, 1, -1}), Node(64)}) {
      Node document = one_kernel();
      first_kernel(document)[key] = wrong;
      EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, std::string("amdhsa.kernels[0]") + key)) << key;
    }
  }
}

TEST(Metadata, TheVersionIsTwoIntegersWithMajorOne) {
  for (const Node& wrong : {Node::array({1}), Node::array({1, 2, 0}), Node::array({"1", "2"}), Node("1.2")}) {
    Node document = one_kernel();
    document["amdhsa.version"] = wrong;
    EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "amdhsa.version"));
  }
  Node document = one_kernel();
  document["amdhsa.version"] = Node::array({1, 0});
  EXPECT_TRUE(Succeeds(decode(document)));
  document["amdhsa.version"] = Node::array({2, 0});
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::UnsupportedVersion, "metadata version 2.0 is not 1.x"));
}

TEST(Metadata, StringAndBooleanFieldsRefuseOtherTypes) {
  for (const char* key : {".name", ".symbol", ".language", ".vec_type_hint", ".kind"}) {
    Node document = one_kernel();
    first_kernel(document)[key] = 1;
    EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, std::string("amdhsa.kernels[0]") + key)) << key;
  }
  for (const char* key : {".value_kind", ".name", ".type_name", ".address_space", ".access", ".actual_access"}) {
    Node document = one_kernel();
    first_arg(document)[key] = Node::boolean(false);
    EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "found boolean false")) << key;
  }
  for (const char* key : {".is_const", ".is_restrict", ".is_volatile", ".is_pipe"}) {
    Node document = one_kernel();
    first_arg(document)[key] = 1;
    EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "expected a boolean")) << key;
  }
  Node document = one_kernel();
  first_kernel(document)[".uses_dynamic_stack"] = 0;
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].uses_dynamic_stack"));
  document = one_kernel();
  document["amdhsa.target"] = Node::array({});
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "amdhsa.target"));
}

TEST(Metadata, NamesAndSymbolsHaveNoNulBytes) {
  Node document = one_kernel();
  first_kernel(document)[".symbol"] = std::string("k\0.kd", 5);
  EXPECT_TRUE(FailsNaming(decode(document), ErrorKind::Malformed, "\"k\\x00.kd\" contains a NUL byte"));
}

// ---------------------------------------------------------------------------
// Unknown keys, problems.

TEST(Metadata, UnknownKeysAreSkippedAndListedWithTheirPath) {
  Node document = one_kernel();
  document["amdhsa.globals"] = Node::array({Node::map({{".name", "g"}, {".size", 4}})});
  Node& k = first_kernel(document);
  k[".cluster_dims"] = Node::array({1, 1, 1});
  k["vendor.x"] = Node::map({{"f", Node::raw(Writer().f64(0.5))},
                              {"n", Node()},
                              {"b", Node::raw(Writer().bin("abc"))},
                              {"e", Node::raw(Writer().raw({0xd4, 0x01, 0x02}))},  // fixext1
                              {"s", Node::raw(Writer().i64(-5))}});
  first_arg(document)[".image_type"] = "2d";
  auto result = decode(document);
  ASSERT_TRUE(Succeeds(result));
  EXPECT_EQ(result->metadata.unknown_keys,
            (std::vector<std::string>{"amdhsa.kernels[0].args[0].image_type", "amdhsa.kernels[0].cluster_dims",
                                      "amdhsa.kernels[0].vendor.x", "amdhsa.globals"}));
  EXPECT_EQ(result->metadata.kernels.at(0).args.size(), 2u);
}

TEST(Metadata, DuplicateNamesOrSymbolsAreProblems) {
  Node document = metadata({kernel("a"), kernel("b"), kernel("c")});
  document["amdhsa.kernels"][2][".name"] = "a";
  document["amdhsa.kernels"][2][".symbol"] = "b.kd";
  auto result = decode(document);
  ASSERT_TRUE(Succeeds(result));
  ASSERT_EQ(result->problems.size(), 2u);
  EXPECT_EQ(result->problems[0].kind, ErrorKind::Ambiguous);
  EXPECT_EQ(result->problems[0].field, ".name");
  EXPECT_EQ(result->problems[0].message, "amdhsa.kernels[0] and amdhsa.kernels[2] both have .name \"a\"");
  EXPECT_EQ(result->problems[1].field, ".symbol");
  EXPECT_EQ(result->problems[1].kernel, "a");
}

TEST(Metadata, MalformedPrintfFormatsAreProblems) {
  Node document = one_kernel();
  document["amdhsa.printf"] = Node::array({"1:2:4:8:%d %d", "1:2:4", "x:%s", "7"});
  auto result = decode(document);
  ASSERT_TRUE(Succeeds(result));
  ASSERT_EQ(result->problems.size(), 3u);
  EXPECT_EQ(result->problems[0].field, "amdhsa.printf[1]");
  EXPECT_EQ(result->problems[0].kind, ErrorKind::Malformed);
  EXPECT_EQ(result->problems[2].field, "amdhsa.printf[3]");
  EXPECT_EQ(result->metadata.printf_formats.size(), 4u);
}

}  // namespace
}  // namespace coload
