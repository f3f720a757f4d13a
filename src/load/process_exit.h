// load/process_exit.h: whether the process has begun to exit, so that
// runtime handles still held then (a registry in a static object, or
// destroyed from an atexit handler) are left to the exiting process instead
// of being released into a runtime whose own static destructors may already
// have run (docs/loading.md, "Shutdown"). Internal.
#pragma once

namespace coload::detail {

/// Arms the exit watch; called after a runtime library is initialised, so the
/// handler registered here runs before that library's static destructors
/// (atexit handlers run in reverse order of registration). Once per process.
void watch_process_exit() noexcept;

/// True from the moment exit() starts running handlers registered after the
/// first runtime was initialised; before watch_process_exit, always false.
bool process_exiting() noexcept;

}  // namespace coload::detail
