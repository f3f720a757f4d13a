// Internal: copying memory of this process that may not be readable, without
// a fault (docs/reading-rules.md, "What coload requires of the caller's
// memory and files").
//
// A page that /proc/self/maps lists readable, or that lies in a loaded
// object's PF_R segment, can still fault: one made PROT_NONE by a later
// mprotect (SIGSEGV), a file page past the file's end or a [vvar] page
// (SIGBUS). These reads go through the kernel instead, which reports such a
// page as an error: process_vm_readv on this process, or, where a seccomp
// filter refuses it, pread of /proc/self/mem.
#pragma once

#include <cstddef>

#include "coload/error.h"

namespace coload::detail {

/// How checked_copy reads; Auto tries each in turn.
enum class CheckedReadMethod : unsigned char { Auto, ProcessVmReadv, ProcSelfMem };

/// Copies the bytes at [address, address + size) to `out` up to the first
/// one this process cannot read now; returns how many it copied (size when
/// all). Never faults. A read through /proc/self/mem also reads a PROT_NONE
/// page (the kernel forces it), never one past its file's end. Errors: Io
/// when neither method is available (both refused, e.g. by seccomp), naming
/// each one's errno.
Expected<std::size_t> checked_copy(const void* address, std::size_t size, void* out,
                                   CheckedReadMethod method = CheckedReadMethod::Auto);

/// How many bytes from `address`, up to `size`, this process can read now,
/// tried a byte per page (one system call per 1024 pages; nothing is
/// copied): size, or the offset of the first unreadable page. Errors: as
/// checked_copy's.
Expected<std::size_t> checked_probe(const void* address, std::size_t size);

}  // namespace coload::detail
