// Reads of this process's memory that cannot fault (src/source/checked_read.h).
#include "source/checked_read.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <vector>

#include "fault_child.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::page_size;
using testing::PastEndMapping;

TEST(CheckedCopy, StopsAtAPageThatCannotBeRead) {
  const std::size_t page = page_size();
  void* mapping = ::mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapping, MAP_FAILED);
  auto* bytes = static_cast<std::byte*>(mapping);
  std::memset(bytes, 0x5a, 2 * page);
  ASSERT_EQ(::mprotect(bytes + 2 * page, page, PROT_NONE), 0);
  std::vector<std::byte> out(3 * page);
  auto copied =
      detail::checked_copy(bytes + 100, 3 * page - 100, out.data(), detail::CheckedReadMethod::ProcessVmReadv);
  ASSERT_TRUE(testing::Succeeds(copied));
  EXPECT_EQ(*copied, 2 * page - 100);
  EXPECT_EQ(out[0], std::byte{0x5a});
  EXPECT_EQ(*detail::checked_copy(bytes + 2 * page, 8, out.data()), 0u);
  EXPECT_EQ(*detail::checked_probe(bytes + 100, 3 * page - 100), 2 * page - 100);
  EXPECT_EQ(*detail::checked_probe(bytes + 100, page), page);
  // /proc/self/mem, the fallback, is let through PROT_NONE by the kernel: it still cannot fault.
  auto forced = detail::checked_copy(bytes + 100, 3 * page - 100, out.data(), detail::CheckedReadMethod::ProcSelfMem);
  ASSERT_TRUE(testing::Succeeds(forced));
  EXPECT_EQ(*forced, 3 * page - 100);
  ::munmap(mapping, 3 * page);
}

TEST(CheckedCopy, StopsAtThePagesPastAFilesEndByEitherMethod) {
  std::vector<std::byte> page(page_size(), std::byte{7});
  PastEndMapping mapping(page.data(), page.size() - 10, 3 * page_size());
  ASSERT_NE(mapping.base(), nullptr);
  std::vector<std::byte> out(3 * page_size());
  for (auto method : {detail::CheckedReadMethod::ProcessVmReadv, detail::CheckedReadMethod::ProcSelfMem}) {
    auto copied = detail::checked_copy(mapping.base(), out.size(), out.data(), method);
    ASSERT_TRUE(testing::Succeeds(copied));
    EXPECT_EQ(*copied, page_size());  // the file's last page, zero past its end
  }
  EXPECT_EQ(*detail::checked_probe(mapping.base(), out.size()), page_size());
  if (const void* vvar = testing::vvar_page()) EXPECT_EQ(*detail::checked_copy(vvar, 8, out.data()), 0u);
}

}  // namespace
}  // namespace coload
