// coload_select and coload_select_wrapper through libcoload.so: per ISA the
// entry, tier, offset and size of plain bundles (checked against the table
// and the bundler's unbundled bytes), CCOBs decoded into owned buffers equal
// to what the bundler unbundles, and the arguments refused with their index.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "c_api_test_support.h"
#include "coload/coload.h"
#include "loaded_wrappers.h"

namespace {

using coload::testing::file_bytes;
using coload::testing::loaded_wrappers;
using Bytes = std::vector<char>;

const std::string kFixtures = COLOAD_FIXTURE_DIR;
constexpr const char* kDevice = "hipv4-amdgcn-amd-amdhsa--";

Bytes read(const std::string& relative) {
  std::ifstream in(kFixtures + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in) << relative;
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

/// The rows of a fixture table (docs/fixtures.md), without the header.
std::vector<std::vector<std::string>> table(const std::string& name) {
  std::ifstream in(kFixtures + "/" + name);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    std::stringstream split(line);
    for (std::string field; std::getline(split, field, '\t');) fields.push_back(field);
    rows.push_back(std::move(fields));
  }
  return rows;
}

/// Fixtures that are one bundle of `format` ("plain", "ccob3-zstd", ...):
/// bundles.tsv rows whose file is the bundle itself.
std::vector<std::string> single_bundles(const std::string& format_prefix) {
  std::vector<std::string> files;
  for (const auto& row : table("bundles.tsv")) {
    if (row.size() >= 4 && row[0] == row[2] && row[3].rfind(format_prefix, 0) == 0) files.push_back(row[0]);
  }
  return files;
}

/// A plain bundle's table, read here from its layout (docs/format.md): ID →
/// (offset, size).
std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> entries_of(const Bytes& bundle) {
  auto u64 = [&](std::size_t at) {
    std::uint64_t value = 0;
    std::memcpy(&value, bundle.data() + at, 8);
    return value;
  };
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> entries;
  std::size_t at = 24;
  const std::uint64_t count = u64(at);
  at += 8;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t offset = u64(at), size = u64(at + 8), id_size = u64(at + 16);
    entries[std::string(bundle.data() + at + 24, id_size)] = {offset, size};
    at += 24 + id_size;
  }
  return entries;
}

/// The expected file of each (fixture, entry ID) in manifest.tsv.
std::map<std::pair<std::string, std::string>, std::string> manifest() {
  std::map<std::pair<std::string, std::string>, std::string> expected;
  for (const auto& row : table("manifest.tsv")) {
    if (row.size() >= 4 && row[1] == "0") expected[{row[0], row[2]}] = row[3];
  }
  return expected;
}

bool is_generic(const std::string& target) { return target.find("-generic") != std::string::npos; }

/// Options that leave the environment out (the tests must not depend on it).
coload_select_options quiet() {
  coload_select_options options;
  std::memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.ignore_environment = 1;
  return options;
}

/// coload_select of `bytes` for `isas`, freed when it goes.
struct Selected {
  coload_status status = COLOAD_ERROR_INTERNAL;
  coload_selection* selection = nullptr;
  Selected(const Bytes& bytes, std::vector<const char*> isas, coload_select_options options = quiet(),
           std::size_t size = 0) {
    status = coload_select(bytes.data(), size ? size : bytes.size(), isas.data(), isas.size(), &options, &selection);
  }
  ~Selected() { coload_selection_free(selection); }
  Selected(const Selected&) = delete;
  Selected& operator=(const Selected&) = delete;
  const coload_selected& operator[](std::size_t i) const { return *selection->results[i]; }
};

Bytes bytes_of(const coload_selected& result) {
  const char* begin = static_cast<const char*>(result.bytes);
  return Bytes(begin, begin + result.size);
}

TEST(CApiSelect, EveryDeviceEntryOfEveryPlainBundleIsFoundInPlaceAsItsTableSays) {
  const auto expected = manifest();
  std::size_t checked = 0;
  for (const std::string& fixture : single_bundles("plain")) {
    Bytes bundle = read(fixture);
    for (const auto& [id, extent] : entries_of(bundle)) {
      if (id.rfind(kDevice, 0) != 0) continue;
      const std::string target = id.substr(std::strlen(kDevice));
      if (is_generic(target)) continue;  // not a device: EveryGenericFallbackIsTheGenericTier
      SCOPED_TRACE(fixture + " " + target);
      // As ROCr names the device, and as a bare target ID (HIP's gcnArchName).
      const std::string isa = "amdgcn-amd-amdhsa--" + target;
      Selected selected(bundle, {isa.c_str(), target.c_str()});
      ASSERT_EQ(selected.status, COLOAD_OK) << coload_last_error_message();
      ASSERT_EQ(selected.selection->count, 2u);
      EXPECT_EQ(selected.selection->image, bundle.data());
      EXPECT_EQ(selected.selection->image_size, bundle.size());
      for (std::size_t i = 0; i < 2; ++i) {
        const coload_selected& result = selected[i];
        ASSERT_EQ(result.status, COLOAD_OK) << result.message;
        EXPECT_EQ(result.struct_size, sizeof(coload_selected));
        EXPECT_STREQ(result.entry_id, id.c_str());
        EXPECT_EQ(result.tier, COLOAD_TIER_NATIVE);
        EXPECT_STREQ(result.message, "");
        EXPECT_EQ(result.owned, 0);
        EXPECT_EQ(result.offset, extent.first);
        EXPECT_EQ(result.size, extent.second);
        EXPECT_EQ(result.bytes, bundle.data() + extent.first);  // zero-copy
        auto file = expected.find({fixture, id});
        ASSERT_NE(file, expected.end());
        EXPECT_EQ(bytes_of(result), read(file->second)) << "not what the bundler unbundles";
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 30u);
}

TEST(CApiSelect, EveryGenericFallbackIsTheGenericTier) {
  Bytes bundle = read("bundles/driver_generic.hipfb");  // gfx10-3, gfx11, gfx12, gfx9 generic (v6)
  const auto entries = entries_of(bundle);
  const std::vector<std::pair<const char*, std::string>> cases{
      {"amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-", "gfx9-generic"},
      {"gfx1031", "gfx10-3-generic"},
      {"gfx1100", "gfx11-generic"},
      {"gfx1201", "gfx12-generic"}};
  std::vector<const char*> isas;
  for (const auto& [isa, generic] : cases) isas.push_back(isa);
  isas.push_back("gfx90a:sramecc+:xnack-");  // no generic family: nothing fits
  Selected selected(bundle, isas);
  ASSERT_EQ(selected.status, COLOAD_OK) << coload_last_error_message();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].first);
    const std::string id = kDevice + cases[i].second;
    ASSERT_EQ(selected[i].status, COLOAD_OK) << selected[i].message;
    EXPECT_EQ(selected[i].tier, COLOAD_TIER_GENERIC);
    EXPECT_STREQ(selected[i].entry_id, id.c_str());
    EXPECT_EQ(selected[i].offset, entries.at(id).first);
    EXPECT_EQ(selected[i].size, entries.at(id).second);
  }
  const coload_selected& none = selected[cases.size()];
  EXPECT_EQ(none.status, COLOAD_ERROR_NOT_FOUND);
  EXPECT_EQ(none.bytes, nullptr);
  EXPECT_EQ(none.size, 0u);
  EXPECT_STREQ(none.entry_id, "");
  EXPECT_NE(std::string(none.message).find("gfx90a:sramecc+:xnack-"), std::string::npos) << none.message;
  EXPECT_NE(std::string(none.report).find("nothing selected: "), std::string::npos) << none.report;
}

TEST(CApiSelect, TheReportListsEveryEntryWithTierVerdictAndReason) {
  Bytes bundle = read("select/any_first.hipfb");  // host, gfx90a, gfx90a:xnack-
  Selected selected(bundle, {"amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"});
  ASSERT_EQ(selected.status, COLOAD_OK) << coload_last_error_message();
  const std::string report = selected[0].report;
  EXPECT_EQ(
      report.rfind(
          "device gfx90a:sramecc+:xnack-\nbundle 0: selected " + std::string(kDevice) + "gfx90a:xnack- (native)\n", 0),
      0u)
      << report;
  EXPECT_NE(report.find("  [0] rejected   -          host-"), std::string::npos) << report;
  EXPECT_NE(report.find("  [1] compatible native     " + std::string(kDevice) + "gfx90a: "), std::string::npos)
      << report;
  EXPECT_NE(report.find("  [2] selected   native     " + std::string(kDevice) + "gfx90a:xnack-: "), std::string::npos)
      << report;
  EXPECT_EQ(std::count(report.begin(), report.end(), '\n'), 5) << report;
}

TEST(CApiSelect, EveryCcobEntryIsDecodedIntoAnOwnedBufferEqualToTheUnbundledBytes) {
  const auto expected = manifest();
  std::size_t checked = 0;
  for (const std::string& fixture : single_bundles("ccob")) {
    Bytes ccob = read(fixture);
    for (const auto& [key, file] : expected) {
      if (key.first != fixture || key.second.rfind(kDevice, 0) != 0) continue;
      const std::string target = key.second.substr(std::strlen(kDevice));
      if (is_generic(target)) continue;
      SCOPED_TRACE(fixture + " " + target);
      for (coload_hash_check hash : {COLOAD_HASH_CHECK_VERIFY, COLOAD_HASH_CHECK_SKIP}) {
        coload_select_options options = quiet();
        options.hash_check = hash;
        Selected selected(ccob, {target.c_str()}, options);
        ASSERT_EQ(selected.status, COLOAD_OK) << coload_last_error_message();
        const coload_selected& result = selected[0];
        ASSERT_EQ(result.status, COLOAD_OK) << result.message;
        EXPECT_EQ(result.tier, COLOAD_TIER_NATIVE);
        EXPECT_STREQ(result.entry_id, key.second.c_str());
        EXPECT_NE(result.owned, 0);
        const char* begin = static_cast<const char*>(result.bytes);
        EXPECT_TRUE(begin < ccob.data() || begin >= ccob.data() + ccob.size()) << "owned, not in the image";
        EXPECT_EQ(bytes_of(result), read(file)) << "not what the bundler unbundles";
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 25u);
}

TEST(CApiSelect, ACcobIsDecodedOnceForIsasThatShareAnEntry) {
  // make_ccob of bundles/bundler_plain.hipfb (docs/fixtures.md): decoded, the
  // same bytes, so the same table.
  Bytes plain = read("bundles/bundler_plain.hipfb");  // host, gfx1030, gfx90a
  const auto entries = entries_of(plain);
  for (const char* fixture : {"compressed/handmade_v1_zstd.hipfb", "compressed/handmade_v1_zlib.hipfb",
                              "compressed/handmade_v2_zlib.hipfb", "compressed/handmade_v2_zstd.hipfb",
                              "compressed/handmade_v3_zlib.hipfb", "compressed/handmade_v3_zstd.hipfb"}) {
    SCOPED_TRACE(fixture);
    Bytes ccob = read(fixture);
    Selected selected(ccob, {"amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", "gfx1030", "gfx90a:sramecc-:xnack+",
                             "gfx908:sramecc+:xnack-"});
    ASSERT_EQ(selected.status, COLOAD_OK) << coload_last_error_message();
    ASSERT_EQ(selected.selection->count, 4u);
    EXPECT_EQ(selected.selection->image, ccob.data());
    EXPECT_EQ(selected.selection->image_size, ccob.size());
    for (std::size_t i : {0u, 1u, 2u}) {
      ASSERT_EQ(selected[i].status, COLOAD_OK) << selected[i].message;
      EXPECT_NE(selected[i].owned, 0);
      const auto& extent = entries.at(selected[i].entry_id);
      EXPECT_EQ(selected[i].offset, extent.first);
      EXPECT_EQ(selected[i].size, extent.second);
      EXPECT_EQ(bytes_of(selected[i]),
                Bytes(plain.begin() + extent.first, plain.begin() + extent.first + extent.second));
    }
    EXPECT_STREQ(selected[0].entry_id, (std::string(kDevice) + "gfx90a").c_str());
    EXPECT_STREQ(selected[1].entry_id, (std::string(kDevice) + "gfx1030").c_str());
    EXPECT_EQ(selected[2].bytes, selected[0].bytes) << "the gfx90a entry is decoded and kept once";
    EXPECT_EQ(selected[3].status, COLOAD_ERROR_NOT_FOUND);
    EXPECT_EQ(selected[3].owned, 0);
    EXPECT_EQ(selected[3].bytes, nullptr);
  }
}

TEST(CApiSelect, ABareCodeObjectIsItsOwnEntry) {
  Bytes object = read("co/gfx90a-cov4.co");
  Selected selected(object, {"gfx90a:xnack+", "gfx1030"});
  ASSERT_EQ(selected.status, COLOAD_OK) << coload_last_error_message();
  EXPECT_EQ(selected[0].status, COLOAD_OK) << selected[0].message;
  EXPECT_EQ(selected[0].offset, 0u);
  EXPECT_EQ(selected[0].size, object.size());
  EXPECT_EQ(selected[0].bytes, object.data());
  EXPECT_EQ(selected[1].status, COLOAD_ERROR_NOT_FOUND);
}

TEST(CApiSelect, ExtendedIsaCompatIsAnOption) {
  Bytes bundle = read("select/gfx1030_only.hipfb");
  Selected without(bundle, {"gfx1031"});
  ASSERT_EQ(without.status, COLOAD_OK);
  EXPECT_EQ(without[0].status, COLOAD_ERROR_NOT_FOUND);
  coload_select_options options = quiet();
  options.extended_isa_compat = "gfx1031";
  Selected with(bundle, {"gfx1031"}, options);
  ASSERT_EQ(with.status, COLOAD_OK) << coload_last_error_message();
  EXPECT_EQ(with[0].status, COLOAD_OK) << with[0].message;
  EXPECT_EQ(with[0].tier, COLOAD_TIER_EQUIVALENT);
}

TEST(CApiSelect, MappedSizeAndWrappersFindTheSameImage) {
  Bytes bundle = read("bundles/driver_two_arch.hipfb");
  Selected sized(bundle, {"gfx90a:sramecc+:xnack-"});
  ASSERT_EQ(sized.status, COLOAD_OK) << coload_last_error_message();
  // The heap block holding it is its mapping: measured from the headers.
  Selected mapped(bundle, {"gfx90a:sramecc+:xnack-"}, quiet(), COLOAD_AVAILABLE_MAPPED);
  ASSERT_EQ(mapped.status, COLOAD_OK) << coload_last_error_message();
  EXPECT_EQ(mapped.selection->image_size, bundle.size());
  EXPECT_EQ(mapped[0].offset, sized[0].offset);
  EXPECT_EQ(mapped[0].size, sized[0].size);

  struct {
    std::uint32_t magic = 0x48495046, version = 1;
    const void* binary = nullptr;
    void* reserved = nullptr;
  } wrapper;
  wrapper.binary = bundle.data();
  const char* isa = "gfx90a:sramecc+:xnack-";
  coload_select_options options = quiet();
  coload_selection* selection = nullptr;
  ASSERT_EQ(coload_select_wrapper(&wrapper, &isa, 1, &options, &selection), COLOAD_OK) << coload_last_error_message();
  EXPECT_EQ(selection->image, bundle.data());
  EXPECT_EQ(selection->results[0]->offset, sized[0].offset);
  EXPECT_EQ(selection->results[0]->bytes, sized[0].bytes);
  coload_selection_free(selection);

  wrapper.magic = 0x12345678;
  selection = reinterpret_cast<coload_selection*>(&wrapper);
  EXPECT_EQ(coload_select_wrapper(&wrapper, &isa, 1, &options, &selection), COLOAD_ERROR_BAD_MAGIC);
  EXPECT_EQ(selection, nullptr);
  EXPECT_NE(std::string(coload_last_error_message()).find("__hip_fatbin_wrapper at 0x"), std::string::npos)
      << coload_last_error_message();
}

TEST(CApiSelect, TheWrappersOfALoadedLibraryAnswerAsTheirTranslationUnitsBundles) {
  const std::string path = kFixtures + "/host/libkernels_mixed.so";
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  std::vector<const void*> wrappers = loaded_wrappers(path, handle);
  // Link order (docs/fixtures.md): each TU's own fat binary, as clang saved it.
  const char* parts[] = {"host/parts/compressed-vector_ops.hipfb", "host/parts/plain-lds_static.hipfb",
                         "host/parts/compressed-lds_dynamic.hipfb"};
  ASSERT_EQ(wrappers.size(), 3u);
  std::vector<const char*> isas{"amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", "gfx1030", "gfx1100", "gfx906:xnack-"};
  coload_select_options options = quiet();
  std::size_t found = 0;
  for (std::size_t w = 0; w < wrappers.size(); ++w) {
    SCOPED_TRACE(parts[w]);
    coload_selection* selection = nullptr;
    ASSERT_EQ(coload_select_wrapper(wrappers[w], isas.data(), isas.size(), &options, &selection), COLOAD_OK)
        << coload_last_error_message();
    Bytes part = read(parts[w]);
    ASSERT_EQ(selection->image_size, part.size());
    EXPECT_EQ(std::memcmp(selection->image, part.data(), part.size()), 0);
    Selected from_file(part, isas);
    ASSERT_EQ(from_file.status, COLOAD_OK) << coload_last_error_message();
    for (std::size_t i = 0; i < isas.size(); ++i) {
      const coload_selected& result = *selection->results[i];
      EXPECT_EQ(result.status, from_file[i].status) << isas[i] << ": " << result.message;
      EXPECT_STREQ(result.entry_id, from_file[i].entry_id) << isas[i];
      EXPECT_EQ(result.tier, from_file[i].tier) << isas[i];
      EXPECT_EQ(result.offset, from_file[i].offset) << isas[i];
      EXPECT_EQ(bytes_of(result), bytes_of(from_file[i])) << isas[i];
      EXPECT_EQ(result.owned, from_file[i].owned) << isas[i];
      if (result.status != COLOAD_OK) continue;
      ++found;
      // A plain TU's entry is a view of the loaded image, where the wrapper points.
      if (!result.owned) EXPECT_EQ(result.bytes, static_cast<const char*>(selection->image) + result.offset);
    }
    coload_selection_free(selection);
  }
  EXPECT_GE(found, 3u);
  ::dlclose(handle);
}

TEST(CApiSelect, ACorruptCcobIsEveryIsasStatusNotTheCalls) {
  Bytes ccob = read("compressed/handmade_v3_zstd.hipfb");  // v3: measured from total_size, nothing decoded
  ccob[ccob.size() - 40] = static_cast<char>(ccob[ccob.size() - 40] ^ 0x5a);
  Selected selected(ccob, {"gfx90a:sramecc+:xnack-", "gfx1030"});
  ASSERT_EQ(selected.status, COLOAD_OK) << coload_last_error_message();
  for (std::size_t i = 0; i < 2; ++i) {
    const coload_selected& result = selected[i];
    EXPECT_TRUE(result.status == COLOAD_ERROR_HASH_MISMATCH || result.status == COLOAD_ERROR_CORRUPT_DATA)
        << coload_status_string(result.status) << ": " << result.message;
    EXPECT_EQ(result.bytes, nullptr);
    EXPECT_NE(std::string(result.message).find("bundle 0"), std::string::npos) << result.message;
    EXPECT_NE(std::string(result.report).find("nothing selected: "), std::string::npos) << result.report;
  }
}

TEST(CApiSelect, ABadIsaIsRefusedByItsIndex) {
  Bytes bundle = read("bundles/driver_two_arch.hipfb");
  for (const char* bad :
       {"gfx9000", "gfx9-generic", "gfx90a:xnack", "amdgcn-amd-amdhsa-gfx90a", "gfx1030:xnack-", ""}) {
    SCOPED_TRACE(bad);
    Selected selected(bundle, {"gfx90a", bad});
    EXPECT_EQ(selected.status, COLOAD_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(selected.selection, nullptr);
    const std::string message = coload_last_error_message();
    EXPECT_NE(message.find("coload_select: isas[1] \"" + std::string(bad) + "\": "), std::string::npos) << message;
  }
}

TEST(CApiSelect, AnIsaCountAboveTheLimitIsRefusedByItsValue) {
  Bytes bundle = read("bundles/driver_two_arch.hipfb");
  std::vector<const char*> isas(4097, "gfx90a");
  coload_select_options options = quiet();
  coload_selection* selection = nullptr;
  EXPECT_EQ(coload_select(bundle.data(), bundle.size(), isas.data(), isas.size(), &options, &selection),
            COLOAD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(selection, nullptr);
  EXPECT_NE(std::string(coload_last_error_message()).find("isa_count 4097 is above the limit of 4096"),
            std::string::npos)
      << coload_last_error_message();
}

TEST(CApiSelect, NullArgumentsAndBadOptionsAreRefused) {
  Bytes bundle = read("bundles/driver_two_arch.hipfb");
  const char* isas[] = {"gfx90a", nullptr};
  coload_select_options options = quiet();
  coload_selection* selection = reinterpret_cast<coload_selection*>(&options);  // must be reset
  EXPECT_EQ(coload_select(bundle.data(), bundle.size(), isas, 1, &options, nullptr), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_select(nullptr, bundle.size(), isas, 1, &options, &selection), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(selection, nullptr);
  EXPECT_NE(std::string(coload_last_error_message()).find("bytes is null"), std::string::npos);
  EXPECT_EQ(coload_select(bundle.data(), bundle.size(), nullptr, 1, &options, &selection), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_select(bundle.data(), bundle.size(), isas, 2, &options, &selection), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_NE(std::string(coload_last_error_message()).find("isas[1] is null"), std::string::npos);
  EXPECT_EQ(coload_select_wrapper(nullptr, isas, 1, &options, &selection), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_select_wrapper(bundle.data(), isas, 1, &options, nullptr), COLOAD_ERROR_NULL_ARGUMENT);

  // No ISA is an empty answer; null options are the defaults.
  ASSERT_EQ(coload_select(bundle.data(), bundle.size(), nullptr, 0, nullptr, &selection), COLOAD_OK)
      << coload_last_error_message();
  EXPECT_EQ(selection->count, 0u);
  EXPECT_EQ(selection->image_size, bundle.size());
  coload_selection_free(selection);
  coload_selection_free(nullptr);

  options.struct_size = sizeof(size_t);
  EXPECT_EQ(coload_select(bundle.data(), bundle.size(), isas, 1, &options, &selection), COLOAD_ERROR_BAD_STRUCT_SIZE);
  options = quiet();
  std::memset(&options.hash_check, 0x7f, sizeof options.hash_check);  // no such setting
  EXPECT_EQ(coload_select(bundle.data(), bundle.size(), isas, 1, &options, &selection), COLOAD_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(coload_last_error_message()).find("coload_select_options.hash_check"), std::string::npos)
      << coload_last_error_message();
  options = quiet();
  options.extended_isa_compat = "gfx9999";
  EXPECT_EQ(coload_select(bundle.data(), bundle.size(), isas, 1, &options, &selection), COLOAD_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(coload_last_error_message()).find("coload_select_options.extended_isa_compat"),
            std::string::npos)
      << coload_last_error_message();
  EXPECT_EQ(selection, nullptr);
}

TEST(CApiSelect, NoPrefixOfAnImageIsAccepted) {
  for (const char* fixture : {"bundles/driver_two_arch.hipfb", "compressed/driver_v3.hipfb", "co/gfx90a-cov4.co"}) {
    Bytes image = read(fixture);
    std::size_t step = image.size() / 500 + 1;
    for (std::size_t size = 0; size < image.size(); size += (size < 256 ? 1 : step)) {
      Selected selected(image, {"gfx90a"}, quiet(), size ? size : 1);
      if (size == 0) continue;  // a one-byte image: bad magic
      ASSERT_NE(selected.status, COLOAD_OK) << fixture << " cut to " << size << " bytes";
      EXPECT_EQ(selected.selection, nullptr);
    }
  }
  // A plain bundle cut inside its last entry: the entry runs past the image.
  Bytes bundle = read("bundles/driver_two_arch.hipfb");
  Selected cut(bundle, {"gfx90a"}, quiet(), bundle.size() - 1);
  EXPECT_EQ(cut.status, COLOAD_ERROR_OUT_OF_BOUNDS) << coload_last_error_message();
}

TEST(CApiSelect, AHostImageOrACapBelowTheBundleIsAnError) {
  Bytes host = read("host/libkernels.so");
  Selected selected(host, {"gfx90a"});  // one image, not a host ELF of several
  EXPECT_EQ(selected.status, COLOAD_ERROR_MALFORMED);
  EXPECT_EQ(selected.selection, nullptr);
  EXPECT_STREQ(coload::testing::last_error_location().field, "e_machine") << coload_last_error_message();
  Bytes ccob = read("compressed/driver_v3.hipfb");
  coload_select_options options = quiet();
  options.max_decompressed_bytes = 4096;
  Selected capped(ccob, {"gfx90a"}, options);
  EXPECT_EQ(capped.status, COLOAD_ERROR_LIMIT_EXCEEDED) << coload_last_error_message();
}

}  // namespace
