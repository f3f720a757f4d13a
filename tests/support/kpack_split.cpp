// kpack_split: packs host ELF images as TheRock's post-link packer does
// (rocm-kpack's artifact_splitter.py + elf/kpack_transform.py), for tests of
// kpack'd (HIPK) host images. Test-side code, independent of the library
// under test: the bundles of .hip_fatbin are read here (plain and CCOB, zstd
// or zlib) and the archives are written by tests/support/kpack_writer.
//
//   kpack_split [--scheme none|zstd-per-kernel] [--no-archives]
//               PREFIX ROOT INPUT RELPATH [INPUT RELPATH]...
//
// For each INPUT (an x86-64 ET_EXEC or ET_DYN host image with .hip_fatbin and
// .hipFatBinSegment) writes ROOT/RELPATH, the kpack'd image:
//   * a new section .rocm_kpack_ref (SHF_ALLOC) holding the msgpack map
//     {"kpack_search_paths": ["<../ per directory of RELPATH>.kpack/PREFIX_@GFXARCH@.kpack"],
//      "kernel_name": "PREFIX/RELPATH"},
//     mapped by a new read-only PT_LOAD appended at the end of the file that
//     also holds the relocated program header table (PT_PHDR follows it; the
//     section header table and .shstrtab are rewritten after it);
//   * every 24-byte wrapper of .hipFatBinSegment: magic HIPF -> HIPK, the
//     pointer field 0, the low u32 of reserved1 = the wrapper's index; for
//     ET_DYN the R_X86_64_RELATIVE relocation of the pointer gets the marker's
//     address as its addend; for ET_EXEC (non-PIE) the pointer stays 0 with
//     no relocation, as the packer leaves it (its defect, kept on purpose);
//   * .hip_fatbin: SHT_NOBITS, its file bytes zeroed (file size unchanged).
// and (unless --no-archives) ROOT/.kpack/PREFIX_<target>.kpack, one archive
// per target with every INPUT's code objects in argument order: key
// "PREFIX/RELPATH#N", N counting that binary's code objects of that target
// in .hip_fatbin bundle order (the packer's code_object_index[arch], which
// differs from the wrapper index when TUs were built for different target
// lists), metadata.target = the bundle entry ID, gfx_arches = [target].
//
// Prints one line per written archive and per image (marker address, wrapper
// count) on stdout; errors on stderr with exit status 1, usage errors 2.
#include "kpack_writer.h"
#include "msgpack_writer.h"

#include <elf.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

constexpr std::uint32_t kHipfMagic = 0x48495046;
constexpr std::uint32_t kHipkMagic = 0x4B504948;
constexpr std::uint64_t kWrapperSize = 24;
constexpr std::uint64_t kPage = 0x1000;
constexpr std::string_view kPlainMagic = "__CLANG_OFFLOAD_BUNDLE__";
constexpr std::string_view kCcobMagic = "CCOB";

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

template <typename T>
T load(const Bytes& data, std::uint64_t offset) {
  if (offset > data.size() || data.size() - offset < sizeof(T)) fail("read past the end of the input");
  T value;
  std::memcpy(&value, data.data() + offset, sizeof(T));
  return value;
}

template <typename T>
void store(Bytes& data, std::uint64_t offset, const T& value) {
  if (offset > data.size() || data.size() - offset < sizeof(T)) fail("write past the end of the output");
  std::memcpy(data.data() + offset, &value, sizeof(T));
}

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::uint64_t align_up(std::uint64_t value, std::uint64_t align) { return (value + align - 1) / align * align; }

Bytes read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open " + path.string());
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const fs::path& path, const void* data, std::size_t size, bool executable) {
  fs::create_directories(path.parent_path());
  fs::remove(path);
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) fail("cannot write " + path.string());
  out.close();
  if (executable) {
    fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add);
  }
}

// --- Bundles -----------------------------------------------------------------

struct Entry {
  std::string id;
  Bytes bytes;
};

bool starts_with(const Bytes& data, std::uint64_t offset, std::string_view magic) {
  return data.size() >= offset && data.size() - offset >= magic.size() &&
         std::memcmp(data.data() + offset, magic.data(), magic.size()) == 0;
}

// Device entries of the plain bundle at `offset`, in entry-table order; sets
// `end` to the end of its last entry.
std::vector<Entry> plain_bundle(const Bytes& data, std::uint64_t offset, std::uint64_t& end) {
  std::uint64_t at = offset + kPlainMagic.size();
  auto count = load<std::uint64_t>(data, at);
  at += 8;
  if (count > 4096) fail("plain bundle with " + std::to_string(count) + " entries");
  std::vector<Entry> entries;
  end = at;
  for (std::uint64_t i = 0; i < count; ++i) {
    auto entry_offset = load<std::uint64_t>(data, at);
    auto entry_size = load<std::uint64_t>(data, at + 8);
    auto id_size = load<std::uint64_t>(data, at + 16);
    at += 24;
    if (id_size > data.size() - at) fail("bundle entry ID past the end");
    std::string id(reinterpret_cast<const char*>(data.data() + at), id_size);
    at += id_size;
    end = std::max(end, at);
    std::uint64_t start = offset + entry_offset;
    if (entry_offset > data.size() || start > data.size() || entry_size > data.size() - start) {
      fail("bundle entry " + id + " past the end");
    }
    end = std::max(end, start + entry_size);
    if (id.starts_with("host-")) continue;
    entries.push_back({id, Bytes(data.begin() + static_cast<std::ptrdiff_t>(start),
                                 data.begin() + static_cast<std::ptrdiff_t>(start + entry_size))});
  }
  return entries;
}

// The plain bundle a CCOB at `offset` holds; sets `end` to the CCOB's end.
Bytes decompress_ccob(const Bytes& data, std::uint64_t offset, std::uint64_t& end) {
  auto version = load<std::uint16_t>(data, offset + 4);
  auto method = load<std::uint16_t>(data, offset + 6);
  std::uint64_t header = 0, total = 0, raw_size = 0;
  switch (version) {
    case 1:
      header = 20;
      raw_size = load<std::uint32_t>(data, offset + 8);
      break;
    case 2:
      header = 24;
      total = load<std::uint32_t>(data, offset + 8);
      raw_size = load<std::uint32_t>(data, offset + 12);
      break;
    case 3:
      header = 32;
      total = load<std::uint64_t>(data, offset + 8);
      raw_size = load<std::uint64_t>(data, offset + 16);
      break;
    default: fail("CCOB version " + std::to_string(version));
  }
  std::uint64_t stream = offset + header;
  if (stream > data.size()) fail("CCOB header past the end");
  std::uint64_t stream_size = total != 0 ? total - header : data.size() - stream;
  if (total != 0 && (total < header || stream_size > data.size() - stream)) fail("CCOB total size past the end");
  if (raw_size > (std::uint64_t{1} << 32)) fail("CCOB uncompressed size too large");
  Bytes raw(raw_size);
  if (method == 1) {
    std::size_t frame = ZSTD_findFrameCompressedSize(data.data() + stream, stream_size);
    if (ZSTD_isError(frame)) fail("CCOB zstd frame: " + std::string(ZSTD_getErrorName(frame)));
    std::size_t got = ZSTD_decompress(raw.data(), raw.size(), data.data() + stream, frame);
    if (ZSTD_isError(got) || got != raw.size()) fail("CCOB zstd payload does not decode");
    end = total != 0 ? offset + total : stream + frame;
  } else if (method == 0) {
    z_stream z{};
    if (inflateInit(&z) != Z_OK) fail("inflateInit");
    z.next_in = const_cast<Bytef*>(data.data() + stream);
    z.avail_in = static_cast<uInt>(std::min<std::uint64_t>(stream_size, UINT32_MAX));
    z.next_out = raw.data();
    z.avail_out = static_cast<uInt>(raw.size());
    int rc = inflate(&z, Z_FINISH);
    std::uint64_t used = z.total_in, produced = z.total_out;
    inflateEnd(&z);
    if (rc != Z_STREAM_END || produced != raw.size()) fail("CCOB zlib payload does not decode");
    end = total != 0 ? offset + total : stream + used;
  } else {
    fail("CCOB method " + std::to_string(method));
  }
  return raw;
}

// Every bundle of a .hip_fatbin section in order, each its device entries:
// as the packer walks the section (ccob_parser.parse_fatbin_data), bytes
// between bundles skipped until the next magic.
std::vector<std::vector<Entry>> read_bundles(const Bytes& fatbin) {
  std::vector<std::vector<Entry>> bundles;
  std::uint64_t at = 0;
  while (at < fatbin.size()) {
    std::uint64_t end = 0;
    if (starts_with(fatbin, at, kCcobMagic)) {
      Bytes plain = decompress_ccob(fatbin, at, end);
      if (!starts_with(plain, 0, kPlainMagic)) fail("CCOB payload is not a plain bundle");
      std::uint64_t inner_end = 0;
      bundles.push_back(plain_bundle(plain, 0, inner_end));
    } else if (starts_with(fatbin, at, kPlainMagic)) {
      bundles.push_back(plain_bundle(fatbin, at, end));
    } else {
      ++at;
      continue;
    }
    at = std::max(end, at + 1);
  }
  return bundles;
}

// --- The host image ----------------------------------------------------------

struct Section {
  Elf64_Shdr header;
  std::string name;
};

struct Image {
  Bytes data;
  Elf64_Ehdr ehdr;
  std::vector<Elf64_Phdr> phdrs;
  std::vector<Section> sections;

  explicit Image(Bytes bytes) : data(std::move(bytes)) {
    ehdr = load<Elf64_Ehdr>(data, 0);
    if (std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) != 0 || ehdr.e_ident[EI_CLASS] != ELFCLASS64 ||
        ehdr.e_ident[EI_DATA] != ELFDATA2LSB || ehdr.e_machine != EM_X86_64) {
      fail("not an x86-64 ELF64 little-endian image");
    }
    if (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN) fail("not an executable or shared object");
    if (ehdr.e_phentsize != sizeof(Elf64_Phdr) || ehdr.e_shentsize != sizeof(Elf64_Shdr)) fail("odd header sizes");
    if (ehdr.e_shnum == 0 || ehdr.e_shstrndx == SHN_UNDEF || ehdr.e_shstrndx >= ehdr.e_shnum) {
      fail("no section names (extended numbering is not handled)");
    }
    for (unsigned i = 0; i < ehdr.e_phnum; ++i) phdrs.push_back(load<Elf64_Phdr>(data, ehdr.e_phoff + i * 56ull));
    for (unsigned i = 0; i < ehdr.e_shnum; ++i) {
      sections.push_back({load<Elf64_Shdr>(data, ehdr.e_shoff + i * 64ull), {}});
    }
    const Elf64_Shdr& names = sections[ehdr.e_shstrndx].header;
    for (Section& s : sections) {
      std::uint64_t at = names.sh_offset + s.header.sh_name;
      while (at < names.sh_offset + names.sh_size && at < data.size() && data[at] != 0) s.name += char(data[at++]);
    }
  }

  Section* find(std::string_view name) {
    for (Section& s : sections) {
      if (s.name == name) return &s;
    }
    return nullptr;
  }

  Bytes contents(const Section& s) const {
    if (s.header.sh_type == SHT_NOBITS) fail(s.name + " has no file contents (already packed?)");
    if (s.header.sh_offset > data.size() || s.header.sh_size > data.size() - s.header.sh_offset) {
      fail(s.name + " past the end of the file");
    }
    auto begin = data.begin() + static_cast<std::ptrdiff_t>(s.header.sh_offset);
    return Bytes(begin, begin + static_cast<std::ptrdiff_t>(s.header.sh_size));
  }
};

struct Packed {
  Bytes image;
  std::uint64_t marker_address = 0;
  std::uint64_t wrappers = 0;
};

// The file offset of the one R_X86_64_RELATIVE relocation entry at address `where`.
std::uint64_t relative_relocation_at(Image& image, std::uint64_t where) {
  std::uint64_t found = 0;
  int count = 0;
  for (const Section& s : image.sections) {
    if (s.header.sh_type != SHT_RELA || (s.header.sh_flags & SHF_ALLOC) == 0) continue;
    for (std::uint64_t at = s.header.sh_offset; at + sizeof(Elf64_Rela) <= s.header.sh_offset + s.header.sh_size;
         at += sizeof(Elf64_Rela)) {
      auto rela = load<Elf64_Rela>(image.data, at);
      if (rela.r_offset != where) continue;
      if (ELF64_R_TYPE(rela.r_info) != R_X86_64_RELATIVE) {
        fail("the wrapper pointer at " + hex(where) + " has a relocation of type " +
             std::to_string(ELF64_R_TYPE(rela.r_info)) + ", not R_X86_64_RELATIVE");
      }
      found = at;
      ++count;
    }
  }
  if (count != 1) {
    fail(std::to_string(count) + " R_X86_64_RELATIVE relocations for the wrapper pointer at address " + hex(where) +
         " (RELR is not handled)");
  }
  return found;
}

Packed pack_image(Image image, const std::vector<std::uint8_t>& marker) {
  Section* fatbin = image.find(".hip_fatbin");
  Section* segment = image.find(".hipFatBinSegment");
  if (fatbin == nullptr || segment == nullptr) fail("no .hip_fatbin or .hipFatBinSegment section");
  if (segment->header.sh_size % kWrapperSize != 0) fail(".hipFatBinSegment is not a whole number of wrappers");
  if (image.find(".rocm_kpack_ref") != nullptr) fail("already has .rocm_kpack_ref");
  const bool pie = image.ehdr.e_type == ET_DYN;

  // The new PT_LOAD: page-aligned after the file's end and after every segment's memory.
  std::uint64_t memory_end = 0;
  std::size_t last_load = 0;
  for (std::size_t i = 0; i < image.phdrs.size(); ++i) {
    const Elf64_Phdr& p = image.phdrs[i];
    if (p.p_type != PT_LOAD) continue;
    memory_end = std::max(memory_end, p.p_vaddr + p.p_memsz);
    last_load = i + 1;
  }
  if (last_load == 0) fail("no PT_LOAD");
  const std::uint64_t load_offset = align_up(image.data.size(), kPage);
  const std::uint64_t load_address = align_up(memory_end, kPage);
  const std::uint64_t phnum = image.phdrs.size() + 1;
  const std::uint64_t phdr_bytes = phnum * sizeof(Elf64_Phdr);
  const std::uint64_t marker_offset = load_offset + phdr_bytes;
  const std::uint64_t marker_address = load_address + phdr_bytes;

  std::vector<Elf64_Phdr> phdrs = image.phdrs;
  Elf64_Phdr added{};
  added.p_type = PT_LOAD;
  added.p_flags = PF_R;
  added.p_offset = load_offset;
  added.p_vaddr = added.p_paddr = load_address;
  added.p_filesz = added.p_memsz = phdr_bytes + marker.size();
  added.p_align = kPage;
  phdrs.insert(phdrs.begin() + static_cast<std::ptrdiff_t>(last_load), added);
  for (Elf64_Phdr& p : phdrs) {
    if (p.p_type != PT_PHDR) continue;
    p.p_offset = load_offset;
    p.p_vaddr = p.p_paddr = load_address;
    p.p_filesz = p.p_memsz = phdr_bytes;
  }

  Bytes& out = image.data;
  // Wrappers (before .hip_fatbin's bytes go: nothing below reads them).
  const std::uint64_t wrappers = segment->header.sh_size / kWrapperSize;
  for (std::uint64_t i = 0; i < wrappers; ++i) {
    const std::uint64_t at = segment->header.sh_offset + i * kWrapperSize;
    if (load<std::uint32_t>(out, at) != kHipfMagic) fail("wrapper " + std::to_string(i) + " is not HIPF");
    store<std::uint32_t>(out, at, kHipkMagic);
    store<std::uint64_t>(out, at + 8, 0);
    store<std::uint32_t>(out, at + 16, static_cast<std::uint32_t>(i));
    if (pie) {
      const std::uint64_t rela = relative_relocation_at(image, segment->header.sh_addr + i * kWrapperSize + 8);
      auto entry = load<Elf64_Rela>(out, rela);
      const std::uint64_t target = static_cast<std::uint64_t>(entry.r_addend);
      if (target < fatbin->header.sh_addr || target >= fatbin->header.sh_addr + fatbin->header.sh_size) {
        fail("wrapper " + std::to_string(i) + " does not point into .hip_fatbin");
      }
      entry.r_addend = static_cast<std::int64_t>(marker_address);
      store(out, rela, entry);
    }
  }
  // .hip_fatbin: no file contents.
  std::fill_n(out.begin() + static_cast<std::ptrdiff_t>(fatbin->header.sh_offset), fatbin->header.sh_size, 0);
  fatbin->header.sh_type = SHT_NOBITS;

  // The new PT_LOAD's contents: the program header table, then the marker.
  out.resize(load_offset, 0);
  for (const Elf64_Phdr& p : phdrs) {
    out.resize(out.size() + sizeof p);
    store(out, out.size() - sizeof p, p);
  }
  out.insert(out.end(), marker.begin(), marker.end());

  // .shstrtab with the new name, then the section header table.
  Section& names = image.sections[image.ehdr.e_shstrndx];
  Bytes name_bytes = image.contents(names);
  const auto marker_name = static_cast<std::uint32_t>(name_bytes.size());
  for (char c : std::string_view(".rocm_kpack_ref")) name_bytes.push_back(static_cast<std::uint8_t>(c));
  name_bytes.push_back(0);
  names.header.sh_offset = out.size();
  names.header.sh_size = name_bytes.size();
  out.insert(out.end(), name_bytes.begin(), name_bytes.end());

  Elf64_Shdr ref{};
  ref.sh_name = marker_name;
  ref.sh_type = SHT_PROGBITS;
  ref.sh_flags = SHF_ALLOC;
  ref.sh_addr = marker_address;
  ref.sh_offset = marker_offset;
  ref.sh_size = marker.size();
  ref.sh_addralign = 1;
  image.sections.push_back({ref, ".rocm_kpack_ref"});
  out.resize(align_up(out.size(), 8), 0);
  const std::uint64_t shoff = out.size();
  for (const Section& s : image.sections) {
    out.resize(out.size() + sizeof(Elf64_Shdr));
    store(out, out.size() - sizeof(Elf64_Shdr), s.header);
  }

  image.ehdr.e_phoff = load_offset;
  image.ehdr.e_phnum = static_cast<std::uint16_t>(phnum);
  image.ehdr.e_shoff = shoff;
  image.ehdr.e_shnum = static_cast<std::uint16_t>(image.sections.size());
  store(out, 0, image.ehdr);
  return {std::move(out), marker_address, wrappers};
}

// --- Driver --------------------------------------------------------------------

std::string search_pattern(const fs::path& relpath, const std::string& prefix) {
  std::string up;
  for (auto it = relpath.begin(); it != relpath.end() && std::next(it) != relpath.end(); ++it) up += "../";
  return up + ".kpack/" + prefix + "_@GFXARCH@.kpack";
}

std::vector<std::uint8_t> marker_bytes(const std::string& pattern, const std::string& kernel_name) {
  coload::testing::msgpack::Writer w;
  w.map(2).str("kpack_search_paths").array(1).str(pattern).str("kernel_name").str(kernel_name);
  std::vector<std::uint8_t> out;
  for (std::byte b : w.bytes()) out.push_back(static_cast<std::uint8_t>(b));
  return out;
}

int usage() {
  std::fprintf(stderr,
               "usage: kpack_split [--scheme none|zstd-per-kernel] [--no-archives] PREFIX ROOT INPUT RELPATH "
               "[INPUT RELPATH]...\n");
  return 2;
}

int run(int argc, char** argv) {
  namespace kp = coload::testing::kpack;
  kp::Scheme scheme = kp::Scheme::None;
  bool archives = true;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--scheme" && i + 1 < argc) {
      std::string_view s = argv[++i];
      if (s == "none") {
        scheme = kp::Scheme::None;
      } else if (s == "zstd-per-kernel") {
        scheme = kp::Scheme::ZstdPerKernel;
      } else {
        return usage();
      }
    } else if (a == "--no-archives") {
      archives = false;
    } else if (a.starts_with("--")) {
      return usage();
    } else {
      args.emplace_back(a);
    }
  }
  if (args.size() < 4 || args.size() % 2 != 0) return usage();
  const std::string prefix = args[0];
  const fs::path root = args[1];

  // Per target, the objects in add order (binaries in argument order).
  std::map<std::string, std::vector<kp::Object>> by_target;
  std::vector<std::string> target_order;
  for (std::size_t i = 2; i < args.size(); i += 2) {
    const fs::path input = args[i];
    const fs::path relpath = fs::path(args[i + 1]).lexically_normal();
    if (relpath.is_absolute() || relpath.empty() || *relpath.begin() == "..") fail("RELPATH must be inside ROOT");
    Image image(read_file(input));
    const std::string kernel_name = prefix + "/" + relpath.generic_string();
    Section* fatbin = image.find(".hip_fatbin");
    if (fatbin == nullptr) fail(input.string() + ": no .hip_fatbin");
    std::map<std::string, std::uint64_t> code_object_index;
    for (const auto& bundle : read_bundles(image.contents(*fatbin))) {
      for (const Entry& e : bundle) {
        const std::string target = kp::target_of(e.id);
        const std::uint64_t n = code_object_index[target]++;
        if (!by_target.contains(target)) target_order.push_back(target);
        kp::Object object;
        object.key = kernel_name + "#" + std::to_string(n);
        object.target = target;
        object.bytes.resize(e.bytes.size());
        std::memcpy(object.bytes.data(), e.bytes.data(), e.bytes.size());
        object.metadata_target = e.id;
        object.source_prefix = prefix;
        by_target[target].push_back(std::move(object));
      }
    }
    Packed packed = pack_image(std::move(image), marker_bytes(search_pattern(relpath, prefix), kernel_name));
    write_file(root / relpath, packed.image.data(), packed.image.size(), true);
    std::printf("image %s marker 0x%llx wrappers %llu\n", (root / relpath).c_str(),
                static_cast<unsigned long long>(packed.marker_address),
                static_cast<unsigned long long>(packed.wrappers));
  }
  if (!archives) return 0;
  for (const std::string& target : target_order) {
    kp::Options options;
    options.scheme = scheme;
    options.group_name = prefix;
    options.gfx_arch_family = target;
    options.gfx_arches = std::vector<std::string>{target};
    const auto& objects = by_target[target];
    std::vector<std::byte> archive = kp::write(objects, options);
    const fs::path path = root / ".kpack" / (prefix + "_" + target + ".kpack");
    write_file(path, archive.data(), archive.size(), false);
    std::printf("archive %s objects %zu\n", path.c_str(), objects.size());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kpack_split: error: %s\n", e.what());
    return 1;
  }
}
