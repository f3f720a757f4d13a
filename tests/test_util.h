// Shared helpers for coload's tests: assertions on exact error kinds, a
// selection written out whole for comparisons, a scratch directory.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "coload/error.h"
#include "coload/select.h"
#include "support/elf_writer.h"

namespace coload::testing {

/// The rows of a fixtures table (tab-separated; empty and "#" lines skipped), as cells.
inline std::vector<std::vector<std::string>> read_tsv(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::stringstream stream(line);
    std::string cell;
    while (std::getline(stream, cell, '\t')) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

inline std::span<const std::byte> view(const std::vector<std::byte>& bytes) { return bytes; }

/// A code object stand-in of `size` bytes: an AMDGPU ELF header with
/// `e_flags`, then `fill`. All selection reads of an entry.
inline std::vector<std::byte> entry_bytes(std::uint32_t e_flags, std::size_t size, std::uint8_t fill) {
  std::vector<std::byte> bytes = amdgpu_elf_header(e_flags);
  bytes.resize(size, std::byte{fill});
  return bytes;
}

/// Asserts that `result` failed with exactly `kind`; prints the message otherwise.
template <class T>
::testing::AssertionResult FailsWith(const Expected<T>& result, ErrorKind kind) {
  if (result.has_value()) return ::testing::AssertionFailure() << "succeeded, expected " << to_string(kind);
  if (result.error().kind() != kind) {
    return ::testing::AssertionFailure() << "failed with " << to_string(result.error().kind()) << " ("
                                         << result.error().message() << "), expected " << to_string(kind);
  }
  return ::testing::AssertionSuccess();
}

/// Asserts that `result` failed with exactly `kind` and that its location
/// names `field` with exactly this offset, value and limit (nullopt: unset).
template <class T>
::testing::AssertionResult FailsAtField(const Expected<T>& result, ErrorKind kind, std::string_view field,
                                        std::optional<std::uint64_t> offset,
                                        std::optional<std::uint64_t> value = std::nullopt,
                                        std::optional<std::uint64_t> limit = std::nullopt) {
  auto failed = FailsWith(result, kind);
  if (!failed) return failed;
  const ErrorLocation& at = result.error().location();
  auto show = [](std::optional<std::uint64_t> number) { return number ? std::to_string(*number) : std::string("-"); };
  if (at.field != field || at.offset != offset || at.value != value || at.limit != limit) {
    return ::testing::AssertionFailure() << "at field \"" << at.field << "\" offset " << show(at.offset) << " value "
                                         << show(at.value) << " limit " << show(at.limit) << ", expected \"" << field
                                         << "\" " << show(offset) << " " << show(value) << " " << show(limit) << " ("
                                         << result.error().message() << ")";
  }
  return ::testing::AssertionSuccess();
}

/// Asserts success, printing the error otherwise.
template <class T>
::testing::AssertionResult Succeeds(const Expected<T>& result) {
  if (result.has_value()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << to_string(result.error().kind()) << ": " << result.error().message();
}

/// The device a spec names; a test failure (and a default device) when it names none.
inline Device device(std::string_view spec) {
  auto result = device_from_spec(spec);
  EXPECT_TRUE(Succeeds(result)) << spec;
  return result ? *result : Device{};
}

/// Every field of a selection, one line per candidate, to compare two whole.
inline std::string describe(const Selection& selection) {
  std::string text = "device " + selection.device + " selected " +
                     (selection.selected ? std::to_string(*selection.selected) : std::string("none")) + "\n";
  for (const Candidate& c : selection.candidates) {
    text += std::to_string(c.entry_index) + " " + c.id + " tier " + (c.tier ? std::string(to_string(*c.tier)) : "-") +
            " " + std::string(to_string(c.verdict)) + " jit " + (c.needs_jit ? "1" : "0") + " code ";
    if (c.code_object) {
      text += c.code_object->target.str() + " v" + std::to_string(c.code_object->code_object_version) + " g" +
              std::to_string(c.code_object->generic_version) + " f" + std::to_string(c.code_object->e_flags);
    } else {
      text += "-";
    }
    text += " | " + c.reason + "\n";
  }
  return text;
}

/// A fresh directory under the system's temporary one, removed with its contents.
class ScratchDirectory {
 public:
  ScratchDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "coload_test_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp " << pattern;
    path_ = pattern;
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

/// The names of the files in `directory` (none when it does not exist), e.g.
/// the verified marks a test left there.
inline std::vector<std::string> file_names(const std::filesystem::path& directory) {
  std::vector<std::string> names;
  std::error_code missing;
  for (const auto& file : std::filesystem::directory_iterator(directory, missing)) {
    names.push_back(file.path().filename().string());
  }
  return names;
}

}  // namespace coload::testing
