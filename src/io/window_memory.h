// Internal: memory for libzstd's decoding buffers, for the scratch memory a
// single-segment frame is decoded into in place (ccob/decompress.cpp), and
// for the bundles read_bundle decompresses (detail::DecompressedBundle).
//
// The bundler writes one single-segment zstd frame, whose window is as large
// as its content (29.4 MiB on large.ccob). From malloc, a fresh process
// faults that in 4 KiB at a time: ~7 500 faults, ~15 ms of kernel time, more
// than the decoding. Buffers of 2 MiB or more are therefore mapped on their
// own, 2 MiB aligned, and marked for transparent huge pages, so a fault maps
// 2 MiB; pages are still faulted only as the decoder reaches them, so an early
// stop holds at most one huge page more than it touched. A freed mapping is
// kept (the largest, at most kKeptMappings of them and kKeptBytes in all) for
// the next large frame, lazily freed (MADV_FREE): the kernel may take its
// pages back under memory pressure, and until it does, the next frame reuses
// them without faulting or zeroing. They count in the process's RSS until
// then, hence the cap. Smaller buffers come from malloc.
#pragma once

#include <cstddef>

namespace coload::detail::window_memory {

inline constexpr std::size_t kHugePage = std::size_t{2} << 20;
inline constexpr std::size_t kKeptMappings = 2;
// Twice the window of a large bundle (29.4 MiB in bench/'s large.ccob); a
// process that decoded a 1 GiB bundle does not hold on to it.
inline constexpr std::size_t kKeptBytes = std::size_t{64} << 20;

/// ZSTD_allocFunction and ZSTD_freeFunction (`opaque` is unused).
void* allocate(void* opaque, std::size_t size);
void release(void* opaque, void* buffer);

/// Faults in the whole pages inside `bytes` (memory of the caller's, such
/// as a large vector it is about to fill) with one call, where the first
/// writes would fault once per 4 KiB page: 2 800 faults for an 11 MB
/// entry. Nothing else changes; a range under kPopulateFrom is left alone.
inline constexpr std::size_t kPopulateFrom = std::size_t{64} << 10;
void populate(void* bytes, std::size_t size);

/// Bytes of the kept (released, reusable) mappings.
std::size_t kept_bytes();
/// Unmaps the kept mappings.
void drop_kept();

}  // namespace coload::detail::window_memory
