// Reads of this process's memory that cannot fault (src/io/checked_read.h).
#include "io/checked_read.h"

#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>

#include <cstring>
#include <vector>

#include "fault_child.h"
#include "test_util.h"

namespace coload {
namespace {

using testing::ChildEnd;
using testing::in_child;
using testing::page_size;
using testing::PastEndMapping;

/// Makes the system calls `refused` fail with EPERM in this process from
/// now on, as a container's seccomp profile may; false when it cannot.
bool refuse(std::initializer_list<long> refused) {
  std::vector<sock_filter> program{BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr))};
  for (long call : refused) {
    program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(call), 0, 1));
    program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM));
  }
  program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  sock_fprog filter{static_cast<unsigned short>(program.size()), program.data()};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter) == 0;
}

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

TEST(CheckedCopy, UnderASeccompFilterRefusingProcessVmReadvProcSelfMemServes) {
  std::vector<std::byte> page(page_size(), std::byte{7});
  PastEndMapping mapping(page.data(), page.size(), 3 * page_size());
  ASSERT_NE(mapping.base(), nullptr);
  ChildEnd end = in_child([&] {
    std::vector<std::byte> out(3 * page_size());
    if (!detail::checked_copy(mapping.base(), 8, out.data())) return 90;  // Auto has used process_vm_readv
    if (!refuse({SYS_process_vm_readv})) return 91;
    auto copied = detail::checked_copy(mapping.base(), out.size(), out.data());
    if (!copied) return 1;
    if (*copied != page_size() || out[0] != std::byte{7}) return 2;
    auto probed = detail::checked_probe(mapping.base(), out.size());
    return probed && *probed == page_size() ? 0 : 3;
  });
  EXPECT_EQ(end, (ChildEnd{.code = 0})) << describe(end);
}

TEST(CheckedCopy, WithNeitherMethodAllowedIsIoNotAFault) {
  ChildEnd end = in_child([&] {
    static const char kBytes[] = "bytes";
    char out[8] = {};
    if (!refuse({SYS_process_vm_readv, SYS_openat, SYS_open})) return 91;
    auto copied = detail::checked_copy(kBytes, sizeof kBytes, out);
    return !copied && copied.error().kind() == ErrorKind::Io ? 0 : 1;
  });
  EXPECT_EQ(end, (ChildEnd{.code = 0})) << describe(end);
}

}  // namespace
}  // namespace coload
