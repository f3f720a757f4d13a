// coload: list, extract, select, check and load the code objects of AMD GPU fat binaries.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "coload/coload.h"
#include "command_context.h"

namespace {

constexpr const char* kUsage = R"(usage: coload <command> [options] FILE...
       coload <command> --help
       coload --version

commands:
  ls [--json] [--max-decompressed-bytes N] FILE...
      List every bundle of each FILE (a host executable or shared library with a
      .hip_fatbin section, a bundle file, or a bare code object) and each entry:
      bundle index, offset, size, format (plain/ccob), CCOB version and
      compression; entry ID, offset, size and a file:// URI (roc-obj-ls style,
      plain bundles only: a compressed entry has no range in the file).
      --json prints one JSON document (docs/cli-json.md): an object for one
      FILE, an array of them for several.

  extract --target ENTRY_OR_TARGET_ID [--bundle N] -o OUT [--max-decompressed-bytes N] FILE
      Write the bytes of the entry whose bundle entry ID (hipv4-amdgcn-amd-amdhsa--gfx90a)
      or target ID (gfx90a, gfx90a:xnack-) equals the one given; byte-identical to
      clang-offload-bundler --unbundle, except that of entries sharing one ID the
      first is written (as comgr does; the bundler writes the last). A host entry
      is written when named by its full ID (empty, as the bundler writes it).
      Matching is exact: no compatibility rules.
      With --bundle N, only bundle N is searched and OUT is written. Without it, a
      file whose only one bundle holds the entry writes OUT; when several bundles
      hold it, each is written to OUT.N (N = bundle index) and the names printed.

  extract --device SPEC [--retarget] [--extended-isa-compat] [--lds BYTES] [--co-versions 4,5,6]
          [--bundle N] -o OUT [--max-decompressed-bytes N] FILE
      Write the entry `coload select` chooses for the device SPEC (every bundle
      searched must have one; OUT.N per bundle when several do). --retarget
      implies --extended-isa-compat and relabels a same-ISA equivalent (gfx1030
      code for gfx1031) for the device: only the ELF header's mach and
      xnack/sramecc bits and the metadata's amdhsa.target change. A native or
      generic entry is written unchanged (said on stderr). Nothing fits: exit 1.

  select --device SPEC [--extended-isa-compat] [--lds BYTES] [--co-versions 4,5,6]
         [--json] [-o OUT] [--max-decompressed-bytes N] FILE
      For the device SPEC (a target ID: gfx942, gfx90a:sramecc+:xnack-; features
      left out take the device defaults, xnack- and sramecc+), choose the entry
      of each bundle to load: native first (an exact xnack/sramecc match before
      "any"), then same-ISA equivalents (only with --extended-isa-compat or
      COLOAD_EXTENDED_ISA_COMPAT), then the device's generic family, then an
      allowlisted hotswap source. Prints every entry with its tier, verdict and
      reason. --json: one document (docs/cli-json.md). -o writes the chosen
      code object to OUT, or to OUT.N per bundle when several bundles have one.
      Exit 1 when some bundle has no entry for the device. The COLOAD_*
      variables apply (docs/environment.md).

  check [--device SPEC] [--lds BYTES] [--co-versions 4,5,6] [--extended-isa-compat]
        [--json] [--max-decompressed-bytes N] FILE
      Read a code object and check it: its ELF tables, metadata note, kernel
      descriptors and kernarg layouts; with --device, also its code object
      version, target, static LDS, wave sizes and workgroup sizes against the
      device. FILE is a bare code object (--device optional) or a fat binary
      (--device required: each bundle's entry is chosen as `select` does).
      Prints every kernel (kernarg size, LDS, private size, wave size,
      VGPR/SGPR/AGPR counts), every problem and every violation. --json: one
      document (docs/cli-json.md). Exit 1 when anything is wrong.

  devices [--runtime hsa|hip] [--json]
      List the GPU devices the runtime (default hsa) reports: target ID, LDS,
      wave sizes, code object versions. Exit 1 with the runtime's reason when
      there is no GPU (no /dev/kfd) or the runtime library is missing.

  load [--runtime hsa|hip|dry-run] [--device N|SPEC] [--lds BYTES] [--co-versions 4,5,6]
       [--extended-isa-compat] [--json] FILE
      Select, validate and load FILE's code objects on one device, as a runtime
      would through coload's registry (every bundle with an entry for the
      device), and list each kernel with its handle and sizes. hsa/hip: --device
      is an index (default 0) or a target ID/processor of a runtime device.
      dry-run (no GPU needed; handles are 0): --device SPEC is required and the
      device options of `select` apply. --json: one document (docs/cli-json.md).
      Exit 1 when nothing fits, a check fails or the runtime refuses.

  run [--device SPEC]... [--extended-isa-compat] [--log error|warn|info|debug] [--dry-run] -- PROGRAM [ARG...]
      Run PROGRAM with libcoload_preload.so in front of its HIP runtime: each
      wrapper its libraries register goes on untouched where the runtime finds
      native code for every GPU; otherwise the runtime gets a bundle holding,
      per GPU, the code object coload chooses, relabelled so that it finds it
      (docs/preload.md). --device lists the GPUs (default: the machine's);
      the COLOAD_* variables apply. Exits with PROGRAM's status (127: no such
      program). --dry-run runs nothing: it lists, per GPU, what each wrapper
      of PROGRAM and of the libraries it links would get; PROGRAM may be a
      shared library (one a program would dlopen).

Numbers (--lds, --bundle, --device N) are decimal or 0x-prefixed; the
--max-decompressed-bytes cap takes what COLOAD_MAX_DECOMPRESSED_BYTES takes
(decimal, optional K/M/G suffix, above 0).

exit codes: 0 success, 1 input error (the message names file, bundle, field and
offset), 2 usage error.
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return coload::cli::kExitUsage;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return coload::cli::kExitOk;
  }
  if (command == "--version" || command == "version") {
    std::printf("coload %s\n", coload_version());
    return coload::cli::kExitOk;
  }
  int status = coload::cli::kExitOk;
  try {
    std::optional<int> ran = coload::cli::dispatch(command, args);
    if (!ran) return coload::cli::usage_error("unknown command '" + command + "' (try coload --help)");
    status = *ran;
  } catch (const std::bad_alloc&) {
    // The commands catch it where they can name the bundle; this is the net under them, not an abort.
    std::fflush(stdout);
    std::fputs("coload: out of memory\n", stderr);
    return coload::cli::kExitInputError;
  }
  // A report that did not reach its reader (a full disk, a closed pipe) is not a success.
  int flushed = std::fflush(stdout);
  int flush_error = errno;
  if (flushed != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "coload: writing the output failed: %s\n",
                 flushed != 0 ? std::strerror(flush_error) : "an earlier write failed");
    if (status == coload::cli::kExitOk) status = coload::cli::kExitInputError;
  }
  return status;
}
