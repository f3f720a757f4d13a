// coload/detail/ordered_pool.h: the pipeline's machinery, for the coload tool
// and the tests. Unstable: it may change in any release; programs use
// coload/pipeline.h.
//
// Covers: the decode-thread policy, the ordered pool, the error for an
// exception out of reading a bundle. Threads: the pool joins its helpers
// before it returns; `take` runs on the calling thread (docs/pipeline.md).
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <span>

#include "coload/error.h"
#include "coload/fat_binary.h"
#include "coload/select.h"

namespace coload {

/// Threads worth reading bundles `indices` of `binary` on: one per bundle
/// worth a thread, up to the hardware's concurrency (at most 8); 1 when
/// fewer than two are, or when the comgr unbundler reads them. A CCOB is
/// worth a thread; a plain bundle only when its chosen entry's code object is
/// read too (`reads_entries`): choosing alone costs less than a thread's start.
std::size_t decode_threads(const FatBinary& binary, std::span<const std::size_t> indices, Unbundler unbundler,
                           bool reads_entries = false);

/// The error for an exception out of reading bundle `index`: LimitExceeded
/// for bad_alloc, InvalidArgument otherwise, located at the bundle.
Error bundle_failure(std::size_t index, const std::exception& exception);

/// The ordered pool under choose_in_binary: calls `work(slot)` for each slot
/// in [0, count) on up to `threads` threads (this one included) and
/// `take(slot)` on this thread in slot order, each as soon as its work and
/// that of every slot before it is done. Results live in the caller's
/// storage, indexed by slot. A helper begins no new work while `ahead` slots
/// (0: 8 x `threads`) wait to be taken, so a slow `take` holds a few results,
/// not all; a caller that keeps every result anyway passes `count`.
/// `take` returns false to stop: work not begun is skipped. An exception
/// from `work` is rethrown here, in slot order, once the helpers are joined.
void for_each_in_order(std::size_t count, std::size_t threads, const std::function<void(std::size_t slot)>& work,
                       const std::function<bool(std::size_t slot)>& take, std::size_t ahead = 0);

}  // namespace coload
