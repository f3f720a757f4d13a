#include <gtest/gtest.h>

#include <set>
#include <string>

#include "coload/target.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/TargetParser/TargetParser.h"

namespace coload {
namespace {

// A minimal EM_AMDGPU ELF header with the given e_flags, for asking LLVM.
std::string elf_with_flags(std::uint32_t flags) {
  llvm::ELF::Elf64_Ehdr header{};
  std::memcpy(header.e_ident,
              "\x7f"
              "ELF",
              4);
  header.e_ident[llvm::ELF::EI_CLASS] = llvm::ELF::ELFCLASS64;
  header.e_ident[llvm::ELF::EI_DATA] = llvm::ELF::ELFDATA2LSB;
  header.e_ident[llvm::ELF::EI_VERSION] = llvm::ELF::EV_CURRENT;
  header.e_ident[llvm::ELF::EI_OSABI] = llvm::ELF::ELFOSABI_AMDGPU_HSA;
  header.e_ident[llvm::ELF::EI_ABIVERSION] = llvm::ELF::ELFABIVERSION_AMDGPU_HSA_V6;
  header.e_type = llvm::ELF::ET_DYN;
  header.e_machine = llvm::ELF::EM_AMDGPU;
  header.e_version = llvm::ELF::EV_CURRENT;
  header.e_flags = flags;
  header.e_ehsize = sizeof header;
  return std::string(reinterpret_cast<const char*>(&header), sizeof header);
}

TEST(ProcessorTable, NamesAndMachValuesAgreeWithLlvm22) {
  std::size_t checked = 0;
  for (const Processor& row : processors()) {
    if (!row.in_llvm22) continue;
    std::string elf = elf_with_flags(row.mach);
    auto object = llvm::object::ObjectFile::createELFObjectFile(llvm::MemoryBufferRef(elf, "probe"), false);
    ASSERT_TRUE(static_cast<bool>(object)) << llvm::toString(object.takeError());
    auto name = llvm::cast<llvm::object::ELFObjectFileBase>(object->get())->tryGetCPUName();
    ASSERT_TRUE(name.has_value());
    EXPECT_EQ(name->str(), std::string(row.name)) << "mach " << row.mach;
    ++checked;
  }
  EXPECT_GE(checked, 53u);  // every LLVM 22.1 AMDGCN processor, generics included
}

TEST(ProcessorTable, HoldsEveryAmdgcnProcessorOfLlvm22TargetParser) {
  std::set<std::string> ours;
  for (const Processor& row : processors()) ours.insert(std::string(row.name));
  std::size_t seen = 0;
  for (unsigned kind = llvm::AMDGPU::GK_AMDGCN_FIRST; kind <= llvm::AMDGPU::GK_AMDGCN_LAST; ++kind) {
    llvm::StringRef name = llvm::AMDGPU::getArchNameAMDGCN(static_cast<llvm::AMDGPU::GPUKind>(kind));
    if (name.empty()) continue;
    EXPECT_TRUE(ours.count(name.str())) << name.str() << " is in LLVM 22's TargetParser but not in processors.def";
    ++seen;
  }
  EXPECT_GE(seen, 47u);  // TargetParser lists the non-generic ones
}

TEST(ProcessorTable, UnknownAndReservedMachValuesAreNotNamed) {
  for (std::uint32_t mach : {0x00u, 0x01u, 0x27u, 0x40u, 0x4bu, 0x4du, 0x56u, 0xffu}) {
    EXPECT_EQ(find_processor_by_mach(mach), nullptr) << mach;
  }
  EXPECT_EQ(find_processor_by_mach(0x3f)->name, "gfx90a");
  EXPECT_EQ(find_processor_by_mach(0x5f)->name, "gfx9-4-generic");
}

// ISA version, xnack/sramecc modes and wave32 of every row LLVM 22 knows.
TEST(ProcessorTable, IsaVersionFeaturesAndWavesAgreeWithLlvm22TargetParser) {
  std::size_t checked = 0;
  for (const Processor& row : processors()) {
    if (!row.in_llvm22) continue;
    SCOPED_TRACE(std::string(row.name));
    llvm::AMDGPU::GPUKind kind = llvm::AMDGPU::parseArchAMDGCN(row.name);
    ASSERT_NE(kind, llvm::AMDGPU::GK_NONE);
    llvm::AMDGPU::IsaVersion isa = llvm::AMDGPU::getIsaVersion(row.name);
    EXPECT_EQ(isa.Major, row.isa_major);
    EXPECT_EQ(isa.Minor, row.isa_minor);
    EXPECT_EQ(isa.Stepping, row.isa_stepping);
    unsigned attributes = llvm::AMDGPU::getArchAttrAMDGCN(kind);
    EXPECT_EQ(row.xnack == XnackSupport::OnOff, (attributes & llvm::AMDGPU::FEATURE_XNACK) != 0);
    EXPECT_EQ(row.xnack == XnackSupport::AlwaysOn, (attributes & llvm::AMDGPU::FEATURE_XNACK_ALWAYS) != 0);
    EXPECT_EQ(row.sramecc, (attributes & llvm::AMDGPU::FEATURE_SRAMECC) != 0);
    EXPECT_EQ((row.wave_sizes & kWave32) != 0, (attributes & llvm::AMDGPU::FEATURE_WAVE32) != 0);
    EXPECT_EQ(row.is_generic, kind >= llvm::AMDGPU::GK_AMDGCN_GENERIC_FIRST);
    ++checked;
  }
  EXPECT_GE(checked, 53u);
}

// Every name LLVM 22 accepts for -mcpu, aliases included, names the row of its canonical processor.
TEST(ProcessorTable, EveryLlvm22NameAndAliasIsKnown) {
  llvm::SmallVector<llvm::StringRef> names;
  llvm::AMDGPU::fillValidArchListAMDGCN(names);
  std::size_t aliases = 0;
  for (llvm::StringRef name : names) {
    llvm::StringRef canonical = llvm::AMDGPU::getArchNameAMDGCN(llvm::AMDGPU::parseArchAMDGCN(name));
    if (canonical.empty()) continue;  // "generic", "generic-hsa": no processor
    const Processor* row = find_processor(std::string_view(name.data(), name.size()));
    ASSERT_NE(row, nullptr) << name.str();
    EXPECT_EQ(row->name, canonical.str()) << name.str();
    if (name != canonical) ++aliases;
  }
  EXPECT_GE(aliases, 18u);  // tahiti ... tongapro
  EXPECT_EQ(find_processor("tongapro")->name, "gfx805");
}

// Every processor in a family points at a generic row of the table, and the
// generic covers the processor's selectable features only if it has them too.
TEST(ProcessorTable, GenericFamiliesAreGenericRows) {
  for (const Processor& row : processors()) {
    if (row.generic_family.empty()) continue;
    SCOPED_TRACE(std::string(row.name));
    const Processor* family = find_processor(row.generic_family);
    ASSERT_NE(family, nullptr);
    EXPECT_TRUE(family->is_generic);
    EXPECT_FALSE(row.is_generic);
    EXPECT_EQ(row.min_generic_version, 1);
    EXPECT_EQ(family->isa_major, row.isa_major);
    EXPECT_EQ(family->wave_sizes, row.wave_sizes);
  }
  // Family by name, not version arithmetic (docs/selection.md).
  EXPECT_EQ(find_processor("gfx1250")->generic_family, "gfx12-5-generic");
  EXPECT_EQ(find_processor("gfx906")->generic_family, "gfx9-generic");
  EXPECT_EQ(find_processor("gfx908")->generic_family, "");
  EXPECT_EQ(find_processor("gfx90a")->generic_family, "");
  EXPECT_EQ(find_processor("gfx950")->lds_bytes, 163840u);
  EXPECT_EQ(find_processor("gfx1250")->wave_sizes, kWave32);
}

// What ROCr reports as HSA_AGENT_INFO_WAVEFRONT_SIZE (docs/selection.md, the processor table).
TEST(ProcessorTable, DefaultWaveSizeIsWhatTheRuntimeReports) {
  EXPECT_EQ(find_processor("gfx803")->default_wave_size, 64);
  EXPECT_EQ(find_processor("gfx90a")->default_wave_size, 64);
  EXPECT_EQ(find_processor("gfx942")->default_wave_size, 64);
  EXPECT_EQ(find_processor("gfx1030")->default_wave_size, 32);
  EXPECT_EQ(find_processor("gfx1100")->default_wave_size, 32);
  EXPECT_EQ(find_processor("gfx1201")->default_wave_size, 32);
  EXPECT_EQ(find_processor("gfx1250")->default_wave_size, 32);
}

}  // namespace
}  // namespace coload
