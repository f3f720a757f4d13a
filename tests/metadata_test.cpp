// The strict msgpack decoder of the NT_AMDGPU_METADATA note
// (src/code_object/metadata.cpp), on inputs built with the test-side msgpack
// writer: well-formed input, value kinds, unknown keys and the findings that
// do not stop decoding. The strict msgpack rules (structure, limits, value
// types) are in metadata_strict_test.cpp; the notes of clang-22's code
// objects, and comparisons with comgr and llvm-readelf, in
// metadata_fixture_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "code_object/metadata.h"
#include "common/bytes.h"
#include "metadata_test_support.h"
#include "support/msgpack_writer.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::Succeeds;
using namespace metadata_test;

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
               k.workgroup_processor_mode || k.uniform_work_group_size || k.sgpr_spill_count || k.vgpr_spill_count);
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
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].workgroup_processor_mode"));
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
    EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].args[0].value_kind")) << kind;
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
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].args[0].address_space"));
  document = one_kernel();
  first_arg(document)[".access"] = "unspecified";
  EXPECT_TRUE(FailsAtPath(decode(document), ErrorKind::Malformed, "amdhsa.kernels[0].args[0].access"));
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
