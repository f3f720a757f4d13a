// coload_last_error_location: real errors from the toolchain's fixtures (a
// truncated bundle, a decompression cap, a corrupt code object, a file cut
// short after registering, a missing file) give their kind and each field of
// their location; an older, smaller struct gets only the fields it covers;
// a null or too small struct is refused without erasing the last error;
// with no error, nothing is set.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "c_api_test_support.h"
#include "coload/coload.h"
#include "loaded_wrappers.h"

namespace {

using coload::testing::dry_run_options;
using coload::testing::file_bytes;
using coload::testing::fixture;

constexpr const char* kGfx90aEntry = "hipv4-amdgcn-amd-amdhsa--gfx90a";

/// This thread's last error's location, read with a full-size struct.
coload_error_location last_location() {
  coload_error_location location;
  std::memset(&location, 0, sizeof location);
  location.struct_size = sizeof location;
  EXPECT_EQ(coload_last_error_location(&location), COLOAD_OK);
  return location;
}

/// The little-endian uint64 at `offset` of `bytes`.
std::uint64_t u64_at(const std::vector<std::byte>& bytes, std::size_t offset) {
  std::uint64_t value = 0;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

/// Writes `bytes` to a fresh file in the test's temporary directory.
std::string write_file(const std::string& name, const std::vector<std::byte>& bytes) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

class CApiErrorLocation : public ::testing::Test {
 protected:
  void SetUp() override { create(dry_run_options("gfx90a")); }
  void TearDown() override {
    if (registry) EXPECT_EQ(coload_registry_destroy(registry), COLOAD_OK);
  }
  void create(const coload_registry_options& options) {
    if (registry) ASSERT_EQ(coload_registry_destroy(registry), COLOAD_OK);
    registry = nullptr;
    ASSERT_EQ(coload_registry_create(&options, &registry), COLOAD_OK) << coload_last_error_message();
  }
  coload_registry* registry = nullptr;
};

// A plain bundle cut inside its entry table: the header's num_entries, where
// it is, what it declares and how many entries the bytes left hold.
TEST_F(CApiErrorLocation, ATruncatedBundleNamesItsFieldValueAndLimit) {
  std::vector<std::byte> bytes = file_bytes(fixture("bundles/driver_two_arch.hipfb"));
  ASSERT_GT(bytes.size(), 56u);
  bytes.resize(56);  // magic (24), num_entries (8), one 24-byte entry's room
  const std::string path = write_file("coload_error_location_cut.hipfb", bytes);
  coload_binary binary = 0;
  EXPECT_EQ(coload_register_file(registry, path.c_str(), &binary), COLOAD_ERROR_TRUNCATED);
  coload_error_location location = last_location();
  ::unlink(path.c_str());
  EXPECT_EQ(location.status, COLOAD_ERROR_TRUNCATED);
  EXPECT_EQ(location.has, COLOAD_LOCATION_HAS_BUNDLE | COLOAD_LOCATION_HAS_BUNDLE_OFFSET | COLOAD_LOCATION_HAS_OFFSET |
                              COLOAD_LOCATION_HAS_VALUE | COLOAD_LOCATION_HAS_LIMIT);
  EXPECT_STREQ(location.file, path.c_str());
  EXPECT_EQ(location.bundle, 0u);
  EXPECT_EQ(location.bundle_offset, 0u);
  EXPECT_EQ(location.entry, 0u);
  EXPECT_STREQ(location.entry_id, "");
  EXPECT_STREQ(location.field, "num_entries");
  EXPECT_EQ(location.offset, 0x18u);
  EXPECT_EQ(location.value, 3u);  // the fixture's host, gfx1030 and gfx90a entries
  EXPECT_EQ(location.limit, 1u);  // entries the 0x18 bytes after the count could hold
}

// max_decompressed_bytes below a CCOB's declared size: refused when it
// registers, at the header's uncompressed_size, with the cap as the limit.
TEST_F(CApiErrorLocation, MaxDecompressedBytesIsTheLimitOfUncompressedSize) {
  coload_registry_options options = dry_run_options("gfx90a");
  options.max_decompressed_bytes = 1024;
  create(options);
  const std::string path = fixture("compressed/driver_v3.hipfb");
  const std::vector<std::byte> bytes = file_bytes(path);
  ASSERT_EQ(std::memcmp(bytes.data(), "CCOB", 4), 0);
  coload_binary binary = 0;
  EXPECT_EQ(coload_register_file(registry, path.c_str(), &binary), COLOAD_ERROR_LIMIT_EXCEEDED);
  coload_error_location location = last_location();
  EXPECT_EQ(location.status, COLOAD_ERROR_LIMIT_EXCEEDED);
  EXPECT_EQ(location.has, COLOAD_LOCATION_HAS_BUNDLE | COLOAD_LOCATION_HAS_BUNDLE_OFFSET | COLOAD_LOCATION_HAS_OFFSET |
                              COLOAD_LOCATION_HAS_VALUE | COLOAD_LOCATION_HAS_LIMIT);
  EXPECT_STREQ(location.file, path.c_str());
  EXPECT_EQ(location.bundle, 0u);
  EXPECT_EQ(location.bundle_offset, 0u);
  EXPECT_EQ(location.entry, 0u);
  EXPECT_STREQ(location.entry_id, "");
  EXPECT_STREQ(location.field, "uncompressed_size");
  EXPECT_EQ(location.offset, 0x10u);  // v3 header: magic, version, method, total_size, then it
  EXPECT_EQ(location.value, u64_at(bytes, 0x10));
  EXPECT_EQ(location.limit, 1024u);
}

// The same cap on a host image: the bundle's offset is the file's, where
// __hip_fatbin_wrapper's pointer led (docs/fixtures.md: bundle 0 at 0x1000).
TEST_F(CApiErrorLocation, AHostImagesBundleCarriesItsOffset) {
  coload_registry_options options = dry_run_options("gfx90a");
  options.max_decompressed_bytes = 1024;
  create(options);
  const std::string path = fixture("host/libkernels_mixed.so");
  const std::vector<std::byte> bytes = file_bytes(path);
  ASSERT_GT(bytes.size(), 0x1018u);
  ASSERT_EQ(std::memcmp(bytes.data() + 0x1000, "CCOB", 4), 0);
  coload_binary binary = 0;
  EXPECT_EQ(coload_register_file(registry, path.c_str(), &binary), COLOAD_ERROR_LIMIT_EXCEEDED);
  coload_error_location location = last_location();
  EXPECT_EQ(location.status, COLOAD_ERROR_LIMIT_EXCEEDED);
  EXPECT_STREQ(location.file, path.c_str());
  EXPECT_EQ(location.has & COLOAD_LOCATION_HAS_BUNDLE_OFFSET, COLOAD_LOCATION_HAS_BUNDLE_OFFSET);
  EXPECT_EQ(location.bundle, 0u);
  EXPECT_EQ(location.bundle_offset, 0x1000u);
  EXPECT_STREQ(location.field, "uncompressed_size");
  EXPECT_EQ(location.offset, 0x10u);
  EXPECT_EQ(location.value, u64_at(bytes, 0x1000 + 0x10));
  EXPECT_EQ(location.limit, 1024u);
}

// A code object whose e_shoff points far past its end, inside a plain
// bundle: the load names the entry (index and ID) and the ELF field.
TEST_F(CApiErrorLocation, ACorruptCodeObjectNamesItsEntryAndField) {
  std::vector<std::byte> bytes = file_bytes(fixture("bundles/driver_two_arch.hipfb"));
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_memory(registry, bytes.data(), bytes.size(), "clean.hipfb", &binary), COLOAD_OK);
  struct Chosen {
    std::size_t index = 0;
    std::size_t offset = 0;
    std::size_t size = 0;
  } chosen;
  auto take = [](void* user_data, const coload_choice* choice) {
    auto* into = static_cast<std::pair<Chosen*, const std::byte*>*>(user_data);
    into->first->index = choice->entry_index;
    into->first->offset = static_cast<std::size_t>(static_cast<const std::byte*>(choice->bytes) - into->second);
    into->first->size = choice->size;
    return 0;
  };
  std::pair<Chosen*, const std::byte*> into{&chosen, bytes.data()};
  ASSERT_EQ(coload_choose(registry, binary, 0, take, &into), COLOAD_OK);
  ASSERT_EQ(coload_unregister(registry, binary), COLOAD_OK);
  ASSERT_EQ(chosen.index, 2u);
  constexpr std::size_t kShoff = 0x28;  // Elf64_Ehdr.e_shoff
  const std::uint64_t far = 0x7f000000;
  std::memcpy(bytes.data() + chosen.offset + kShoff, &far, sizeof far);

  ASSERT_EQ(coload_register_memory(registry, bytes.data(), bytes.size(), "corrupt.hipfb", &binary), COLOAD_OK);
  EXPECT_EQ(coload_load(registry, binary, 0), COLOAD_ERROR_OUT_OF_BOUNDS);
  coload_error_location location = last_location();
  EXPECT_EQ(location.status, COLOAD_ERROR_OUT_OF_BOUNDS);
  EXPECT_EQ(location.has, COLOAD_LOCATION_HAS_BUNDLE | COLOAD_LOCATION_HAS_ENTRY | COLOAD_LOCATION_HAS_OFFSET |
                              COLOAD_LOCATION_HAS_VALUE | COLOAD_LOCATION_HAS_LIMIT);
  EXPECT_STREQ(location.file, "corrupt.hipfb");
  EXPECT_EQ(location.bundle, 0u);
  EXPECT_EQ(location.bundle_offset, 0u);  // not set: a registered buffer's bundle is read where it starts
  EXPECT_EQ(location.entry, 2u);
  EXPECT_STREQ(location.entry_id, kGfx90aEntry);
  EXPECT_STREQ(location.field, "e_shoff");
  EXPECT_EQ(location.offset, kShoff);
  EXPECT_EQ(location.value, far);
  EXPECT_EQ(location.limit, chosen.size);  // the code object's bytes
}

// A code object the validator refuses when it loads (its LDS, 160 KiB, on a
// 64 KiB gfx942): the registry names the bundle and the entry it chose as
// fields, the validator the field, its value and the device's limit.
TEST_F(CApiErrorLocation, ARefusedLoadNamesItsBundleEntryAndField) {
  create(dry_run_options("gfx942"));
  std::vector<std::byte> bytes = file_bytes(fixture("check/lds_heavy-gfx950.co"));
  ASSERT_GT(bytes.size(), 64u);
  // Relabelled gfx942 (as tests/registry_hotswap_test.cpp does): its
  // metadata's target and e_flags' EF_AMDGPU_MACH (gfx950 0x4f -> 0x4c).
  const std::string from = "gfx950", to = "gfx942";
  for (std::size_t i = 0; i + from.size() <= bytes.size(); ++i) {
    if (std::memcmp(bytes.data() + i, from.data(), from.size()) == 0)
      std::memcpy(bytes.data() + i, to.data(), to.size());
  }
  ASSERT_EQ(bytes[48], std::byte{0x4f});
  bytes[48] = std::byte{0x4c};
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_memory(registry, bytes.data(), bytes.size(), "heavy.co", &binary), COLOAD_OK)
      << coload_last_error_message();
  EXPECT_EQ(coload_load(registry, binary, 0), COLOAD_ERROR_LIMIT_EXCEEDED);
  const std::string message = coload_last_error_message();
  coload_error_location location = last_location();
  EXPECT_EQ(location.status, COLOAD_ERROR_LIMIT_EXCEEDED);
  EXPECT_EQ(location.has, COLOAD_LOCATION_HAS_BUNDLE | COLOAD_LOCATION_HAS_ENTRY | COLOAD_LOCATION_HAS_VALUE |
                              COLOAD_LOCATION_HAS_LIMIT);
  EXPECT_STREQ(location.file, "heavy.co");
  EXPECT_EQ(location.bundle, 0u);
  EXPECT_EQ(location.entry, 0u);
  EXPECT_STREQ(location.entry_id, "hipv4-amdgcn-amd-amdhsa--gfx942");
  EXPECT_STREQ(location.field, "group_segment_fixed_size");
  EXPECT_EQ(location.value, 98304u);
  EXPECT_EQ(location.limit, 65536u);
  // The sentence is rendered from the same fields.
  EXPECT_EQ(
      message.rfind("heavy.co: bundle 0: entry 0 (hipv4-amdgcn-amd-amdhsa--gfx942): refused by the validator: ", 0), 0u)
      << message;
}

// A registered file cut short before its first use: Io at the first byte
// that cannot be read, what was wanted as the limit.
TEST_F(CApiErrorLocation, AFileCutShortAfterRegisteringNamesWhereItEnds) {
  const std::vector<std::byte> bytes = file_bytes(fixture("bundles/driver_two_arch.hipfb"));
  ASSERT_GT(bytes.size(), 0x5000u);
  const std::string path = write_file("coload_error_location_shrunk.hipfb", bytes);
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_file(registry, path.c_str(), &binary), COLOAD_OK) << coload_last_error_message();
  ASSERT_EQ(::truncate(path.c_str(), 0x5000), 0);
  EXPECT_EQ(coload_load(registry, binary, 0), COLOAD_ERROR_IO);
  coload_error_location location = last_location();
  ::unlink(path.c_str());
  EXPECT_EQ(location.status, COLOAD_ERROR_IO);
  EXPECT_EQ(location.has, COLOAD_LOCATION_HAS_BUNDLE | COLOAD_LOCATION_HAS_OFFSET | COLOAD_LOCATION_HAS_VALUE |
                              COLOAD_LOCATION_HAS_LIMIT);
  EXPECT_STREQ(location.file, path.c_str());
  EXPECT_EQ(location.bundle, 0u);
  EXPECT_EQ(location.entry, 0u);
  EXPECT_STREQ(location.entry_id, "");
  EXPECT_STREQ(location.field, "bundle");
  EXPECT_EQ(location.offset, 0x5000u);
  EXPECT_EQ(location.value, 0x5000u);       // the bytes that can be read
  EXPECT_EQ(location.limit, bytes.size());  // the bundle's, the whole file
}

// A file that cannot be opened: Io. The opening layer says the path in its
// sentence and sets no location field (yet), so every field is unset.
TEST_F(CApiErrorLocation, AMissingFileIsIo) {
  coload_binary binary = 0;
  EXPECT_EQ(coload_register_file(registry, "/nonexistent/file.hipfb", &binary), COLOAD_ERROR_IO);
  EXPECT_STREQ(coload_last_error_message(), "/nonexistent/file.hipfb: cannot open: No such file or directory");
  coload_error_location location = last_location();
  EXPECT_EQ(location.status, COLOAD_ERROR_IO);
  EXPECT_EQ(location.has, 0u);
  EXPECT_STREQ(location.file, "/nonexistent/file.hipfb");  // the message is the same sentence
  EXPECT_STREQ(location.entry_id, "");
  EXPECT_STREQ(location.field, "");
  EXPECT_EQ(location.bundle, 0u);
  EXPECT_EQ(location.limit, 0u);
}

// A caller built against a shorter coload_error_location: only the fields
// that lie wholly inside its struct_size are written, struct_size never.
TEST_F(CApiErrorLocation, AnOlderStructSizeGetsOnlyTheFieldsItCovers) {
  coload_registry_options options = dry_run_options("gfx90a");
  options.max_decompressed_bytes = 1024;
  create(options);
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_file(registry, fixture("compressed/driver_v3.hipfb").c_str(), &binary),
            COLOAD_ERROR_LIMIT_EXCEEDED);

  constexpr unsigned char kUntouched = 0xab;
  coload_error_location older;
  std::memset(&older, kUntouched, sizeof older);
  const std::size_t older_size = offsetof(coload_error_location, entry_id);  // through `entry`
  older.struct_size = older_size;
  ASSERT_EQ(coload_last_error_location(&older), COLOAD_OK);
  EXPECT_EQ(older.struct_size, older_size);
  EXPECT_EQ(older.status, COLOAD_ERROR_LIMIT_EXCEEDED);
  EXPECT_EQ(older.has & COLOAD_LOCATION_HAS_LIMIT, COLOAD_LOCATION_HAS_LIMIT);
  EXPECT_STREQ(older.file, fixture("compressed/driver_v3.hipfb").c_str());
  EXPECT_EQ(older.bundle, 0u);
  EXPECT_EQ(older.bundle_offset, 0u);
  EXPECT_EQ(older.entry, 0u);
  const auto* raw = reinterpret_cast<const unsigned char*>(&older);
  for (std::size_t at = older_size; at < sizeof older; ++at)
    EXPECT_EQ(raw[at], kUntouched) << "byte " << at << " lies past struct_size " << older_size;

  // The smallest struct accepted ends with `has`; a field cut by
  // struct_size (half of `file`) is not written either.
  coload_error_location smallest;
  std::memset(&smallest, kUntouched, sizeof smallest);
  const std::size_t smallest_size = offsetof(coload_error_location, file) + sizeof(std::uint32_t);
  smallest.struct_size = smallest_size;
  ASSERT_EQ(coload_last_error_location(&smallest), COLOAD_OK);
  EXPECT_EQ(smallest.status, COLOAD_ERROR_LIMIT_EXCEEDED);
  EXPECT_EQ(smallest.has, COLOAD_LOCATION_HAS_BUNDLE | COLOAD_LOCATION_HAS_BUNDLE_OFFSET | COLOAD_LOCATION_HAS_OFFSET |
                              COLOAD_LOCATION_HAS_VALUE | COLOAD_LOCATION_HAS_LIMIT);
  raw = reinterpret_cast<const unsigned char*>(&smallest);
  for (std::size_t at = offsetof(coload_error_location, file); at < sizeof smallest; ++at)
    EXPECT_EQ(raw[at], kUntouched) << "byte " << at;
}

// Null, or a struct_size that does not reach `has`, is refused, and the
// last error stays the one the caller is inspecting.
TEST_F(CApiErrorLocation, NullAndTooSmallAreRefusedAndKeepTheLastError) {
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_file(registry, "/nonexistent/file.hipfb", &binary), COLOAD_ERROR_IO);
  const std::string message = coload_last_error_message();

  EXPECT_EQ(coload_last_error_location(nullptr), COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(coload_last_error_message(), message);
  for (std::size_t size : {std::size_t{0}, sizeof(std::size_t), offsetof(coload_error_location, has)}) {
    coload_error_location small;
    std::memset(&small, 0xab, sizeof small);
    small.struct_size = size;
    EXPECT_EQ(coload_last_error_location(&small), COLOAD_ERROR_BAD_STRUCT_SIZE) << size;
    EXPECT_EQ(small.struct_size, size);
    EXPECT_EQ(small.has, 0xababababu) << "nothing is written to a struct that is refused";
  }
  EXPECT_EQ(coload_last_error_message(), message);
  EXPECT_EQ(last_location().status, COLOAD_ERROR_IO);
}

// No error yet on a thread, or a success since: COLOAD_OK with nothing set
// and every string "" (never null). A failure without a place (a null
// argument) sets its status only.
TEST_F(CApiErrorLocation, NoErrorAndAnErrorWithoutAPlace) {
  coload_binary binary = 0;
  ASSERT_EQ(coload_register_file(registry, fixture("compressed/driver_v3.hipfb").c_str(), &binary), COLOAD_OK);
  EXPECT_EQ(coload_lookup_kernel(registry, binary, 0, "no_such_kernel", nullptr), COLOAD_ERROR_NULL_ARGUMENT);
  coload_error_location location = last_location();
  EXPECT_EQ(location.status, COLOAD_ERROR_NULL_ARGUMENT);
  EXPECT_EQ(location.has, 0u);
  EXPECT_STREQ(location.file, "");

  auto expect_none = [](const coload_error_location& none) {
    EXPECT_EQ(none.status, COLOAD_OK);
    EXPECT_EQ(none.has, 0u);
    ASSERT_NE(none.file, nullptr);
    ASSERT_NE(none.entry_id, nullptr);
    ASSERT_NE(none.field, nullptr);
    EXPECT_STREQ(none.file, "");
    EXPECT_STREQ(none.entry_id, "");
    EXPECT_STREQ(none.field, "");
    EXPECT_EQ(none.bundle | none.bundle_offset | none.entry | none.offset | none.value | none.limit, 0u);
  };
  coload_error_location fresh;
  std::thread([&] { fresh = last_location(); }).join();  // a thread that never called coload
  expect_none(fresh);

  // A located failure, then a success: the success clears it.
  ASSERT_EQ(coload_register_file(registry, "/nonexistent/file.hipfb", &binary), COLOAD_ERROR_IO);
  coload_registry_options options = dry_run_options("gfx90a");
  options.max_decompressed_bytes = 1024;
  coload_registry* capped = nullptr;
  ASSERT_EQ(coload_registry_create(&options, &capped), COLOAD_OK);
  EXPECT_EQ(coload_register_file(capped, fixture("compressed/driver_v3.hipfb").c_str(), &binary),
            COLOAD_ERROR_LIMIT_EXCEEDED);
  EXPECT_STREQ(last_location().field, "uncompressed_size");
  std::size_t count = 0;
  EXPECT_EQ(coload_device_count(capped, &count), COLOAD_OK);
  expect_none(last_location());
  EXPECT_EQ(coload_registry_destroy(capped), COLOAD_OK);
}

}  // namespace
