// coload run: runs a program with libcoload_preload.so in front of its HIP
// runtime (docs/preload.md). The options become the COLOAD_* variables the
// preload reads; LD_PRELOAD gets the library first; then the program replaces
// this process, so its exit status is the command's.
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "coload/detail/preload_dry_run.h"
#include "command_context.h"
#include "commands.h"

extern char** environ;

namespace coload::cli {

namespace {

namespace fs = std::filesystem;

/// Where libcoload_preload.so is: COLOAD_PRELOAD_LIBRARY, else beside the
/// installed tool (its library directory relative to the tool's), else the
/// build tree's. Empty when none exists.
std::string preload_library() {
  if (const char* given = std::getenv("COLOAD_PRELOAD_LIBRARY"); given && given[0] != '\0') return given;
  std::error_code error;
  const fs::path tool = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    const fs::path installed = tool.parent_path() / COLOAD_PRELOAD_FROM_BINDIR / "libcoload_preload.so";
    if (fs::exists(installed, error)) return installed.lexically_normal().string();
  }
  if (fs::exists(COLOAD_PRELOAD_BUILD_PATH, error)) return COLOAD_PRELOAD_BUILD_PATH;
  return {};
}

std::optional<int> check_run_usage(CommandContext& context) {
  if (!context.operands.empty()) {
    return usage_error("run: put -- before the program: coload run [options] -- PROGRAM [ARG...] (got '" +
                       context.operands.front() + "')");
  }
  if (context.program.empty()) return usage_error("run: no program after --");
  for (const std::string& spec : context.arguments.texts(kRunDevice)) {
    if (auto device = device_from_spec(spec); !device) {
      return usage_error("run: --device '" + spec + "': " + device.error().message());
    }
  }
  return std::nullopt;
}

/// The environment the program runs with: this one, with LD_PRELOAD and the
/// options' COLOAD_* variables set.
std::vector<std::string> program_environment(const CommandContext& context, const std::string& library) {
  std::vector<std::pair<std::string, std::string>> set;
  const char* preloaded = std::getenv("LD_PRELOAD");
  set.emplace_back("LD_PRELOAD", preloaded && preloaded[0] != '\0' ? library + ":" + preloaded : library);
  std::string devices;
  for (const std::string& spec : context.arguments.texts(kRunDevice)) devices += (devices.empty() ? "" : ",") + spec;
  if (!devices.empty()) set.emplace_back("COLOAD_DEVICES", devices);
  if (context.arguments.given(kRunExtendedIsaCompat)) set.emplace_back("COLOAD_EXTENDED_ISA_COMPAT", "all");
  if (context.arguments.given(kRunLog)) set.emplace_back("COLOAD_LOG", context.arguments.text(kRunLog));
  std::vector<std::string> environment;
  for (char** variable = environ; *variable; ++variable) {
    const std::string_view text(*variable);
    const bool replaced = std::any_of(set.begin(), set.end(), [&](const auto& pair) {
      return text.starts_with(pair.first) && text.size() > pair.first.size() && text[pair.first.size()] == '=';
    });
    if (!replaced) environment.emplace_back(text);
  }
  for (const auto& [name, value] : set) environment.push_back(name + "=" + value);
  return environment;
}

/// PROGRAM's path as execvp would find it.
std::string program_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::string_view directories = path ? path : "/usr/bin:/bin";
  while (!directories.empty()) {
    const std::size_t colon = directories.find(':');
    const fs::path candidate = fs::path(directories.substr(0, colon)) / program;
    std::error_code error;
    if (::access(candidate.c_str(), X_OK) == 0 && fs::is_regular_file(candidate, error)) return candidate.string();
    if (colon == std::string_view::npos) break;
    directories.remove_prefix(colon + 1);
  }
  return program;
}

/// What the dry run needs of `program`'s ELF header: whether it is a 64-bit
/// dynamically linked object, and the loader it names (PT_INTERP; empty for
/// a shared library, which names none).
struct DynamicElf {
  bool dynamic = false;
  std::string interpreter;
};

DynamicElf read_dynamic_elf(const std::string& program) {
  DynamicElf out;
  FILE* file = std::fopen(program.c_str(), "rb");
  if (!file) return out;
  Elf64_Ehdr header{};
  const bool elf = std::fread(&header, sizeof header, 1, file) == 1 &&
                   std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 && header.e_ident[EI_CLASS] == ELFCLASS64 &&
                   header.e_phentsize == sizeof(Elf64_Phdr);
  for (unsigned i = 0; elf && i < header.e_phnum; ++i) {
    Elf64_Phdr segment{};
    if (std::fseek(file, static_cast<long>(header.e_phoff + i * sizeof segment), SEEK_SET) != 0 ||
        std::fread(&segment, sizeof segment, 1, file) != 1) {
      break;
    }
    if (segment.p_type == PT_DYNAMIC) out.dynamic = true;
    if (segment.p_type == PT_INTERP && segment.p_filesz > 1 && segment.p_filesz <= PATH_MAX) {
      std::string path(segment.p_filesz - 1, '\0');
      if (std::fseek(file, static_cast<long>(segment.p_offset), SEEK_SET) == 0 &&
          std::fread(path.data(), 1, path.size(), file) == path.size()) {
        out.interpreter = path.c_str();  // up to its NUL
      }
    }
  }
  std::fclose(file);
  return out;
}

/// This process's own dynamic loader (the object at AT_BASE).
std::string own_loader() {
  struct Search {
    std::uintptr_t base = ::getauxval(AT_BASE);
    std::string name;
  } search;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* found = static_cast<Search*>(data);
        if (info->dlpi_addr != found->base || !info->dlpi_name) return 0;
        found->name = info->dlpi_name;
        return 1;
      },
      &search);
  return search.name;
}

/// The shared libraries `program` (an executable or a shared library) links,
/// as the dynamic loader resolves them: `LOADER --list PROGRAM`, which lists
/// them and runs nothing. The program itself is never executed (a statically
/// linked one would run), and a file that is no dynamic ELF object lists none.
std::vector<std::string> linked_libraries(const std::string& program) {
  const DynamicElf elf = read_dynamic_elf(program);
  if (!elf.dynamic) return {};
  const std::string loader = elf.interpreter.empty() ? own_loader() : elf.interpreter;
  if (loader.empty()) return {};
  int pipe_ends[2];
  if (::pipe(pipe_ends) != 0) return {};
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(pipe_ends[1], STDOUT_FILENO);
    ::close(pipe_ends[0]);
    ::close(pipe_ends[1]);
    ::execl(loader.c_str(), loader.c_str(), "--list", program.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(pipe_ends[1]);
  std::string listing;
  char buffer[4096];
  for (ssize_t got; (got = ::read(pipe_ends[0], buffer, sizeof buffer)) > 0;) listing.append(buffer, got);
  ::close(pipe_ends[0]);
  if (child > 0) ::waitpid(child, nullptr, 0);
  std::vector<std::string> libraries;
  std::size_t at = 0;
  while (at < listing.size()) {  // "\tname => /path (0x...)"
    const std::size_t end = std::min(listing.find('\n', at), listing.size());
    const std::string_view line = std::string_view(listing).substr(at, end - at);
    at = end + 1;
    const std::size_t arrow = line.find(" => /");
    if (arrow == std::string_view::npos) continue;
    const std::string_view path = line.substr(arrow + 4, line.rfind(" (") - arrow - 4);
    libraries.emplace_back(path);
  }
  return libraries;
}

/// run --dry-run: every wrapper of PROGRAM and its libraries, planned for each GPU.
int dry_run(CommandContext& context, const std::vector<std::string>& environment) {
  const std::string program = program_path(context.program.front());
  std::vector<std::string> files{program};
  for (std::string& library : linked_libraries(program)) files.push_back(std::move(library));
  const Config::Lookup lookup = [&](std::string_view name) -> std::optional<std::string> {
    for (const std::string& variable : environment)
      if (variable.size() > name.size() && variable.starts_with(name) && variable[name.size()] == '=')
        return variable.substr(name.size() + 1);
    return std::nullopt;
  };
  auto report = preload::dry_run_report(files, lookup);
  if (!report) {
    print_error(Error(report.error().kind(), "run --dry-run: " + report.error().message()));
    return kExitInputError;
  }
  std::fputs(report->c_str(), stdout);
  return kExitOk;
}

int run_program(CommandContext& context) {
  const std::string library = preload_library();
  if (library.empty()) {
    print_error(Error(ErrorKind::NotFound,
                      "run: libcoload_preload.so is not installed beside coload (set "
                      "COLOAD_PRELOAD_LIBRARY to its path)"));
    return kExitInputError;
  }
  std::vector<std::string> environment = program_environment(context, library);
  if (context.arguments.given(kRunDryRun)) return dry_run(context, environment);
  std::vector<char*> envp;
  for (std::string& variable : environment) envp.push_back(variable.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (std::string& word : context.program) argv.push_back(word.data());
  argv.push_back(nullptr);
  ::execvpe(argv[0], argv.data(), envp.data());
  // As a shell says it: 127 when there is no such program, 126 when it cannot be run.
  const int error = errno;
  print_error(Error(ErrorKind::Io, "run: cannot run '" + context.program.front() + "': " + std::strerror(error)));
  return error == ENOENT ? 127 : 126;
}

}  // namespace

const Command kRun{.spec = &kRunCommand, .takes_program = true, .check_usage = check_run_usage, .run = run_program};

}  // namespace coload::cli
