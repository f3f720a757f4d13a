// Internal: a kpack'd host image opened once per process and shared by the
// FatBinaries of its wrappers (FatBinary::open_kpack_wrapper): a runtime
// registering a library's hundred HIPK wrappers maps the image and reads its
// archives' TOCs once, not once per wrapper.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "coload/bundle.h"
#include "coload/detail/source.h"
#include "coload/error.h"
#include "formats/kpack_bundles.h"

namespace coload::detail {

struct KpackImage {
  Source host;
  SourceLayout layout;
  std::vector<KpackBundle> bundles;  ///< one per HIPK wrapper, in layout.kpack_ref->indices' order
};

/// The kpack'd host image at `path` read with `options`: shared with every
/// caller that asked for the same file (device and inode, size, mtime) with
/// the same kpack search while one of them holds it. Errors: the file's,
/// FatBinary::open's; InvalidArgument (field "magic") when the file is no
/// kpack'd host image.
Expected<std::shared_ptr<const KpackImage>> open_kpack_image(const std::string& path, const ReadOptions& options);

/// The file of the kpack'd image that holds the HIPK record at `wrapper`, as
/// CLR finds it (Os::FindFileNameFromAddress): options.kpack.binary_path when
/// the caller gave it, else the loaded object the dynamic loader has there
/// (dladdr), else the file mapped there (/proc/self/maps). Errors: NotFound,
/// naming `name` and the option, for a record no file's mapping holds;
/// mapped_file_at's.
Expected<std::string> kpack_wrapper_file(const void* wrapper, const std::string& name, const ReadOptions& options);

}  // namespace coload::detail
