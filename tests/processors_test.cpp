#include "target/processors.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/TargetParser/TargetParser.h"

namespace coload::detail {
namespace {

// A minimal EM_AMDGPU ELF header with the given e_flags, for asking LLVM.
std::string elf_with_flags(std::uint32_t flags) {
  llvm::ELF::Elf64_Ehdr header{};
  std::memcpy(header.e_ident, "\x7f" "ELF", 4);
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
  for (const ProcessorRow& row : processor_table()) {
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
  for (const ProcessorRow& row : processor_table()) ours.insert(std::string(row.name));
  std::size_t seen = 0;
  for (int kind = llvm::AMDGPU::GK_AMDGCN_FIRST; kind <= llvm::AMDGPU::GK_AMDGCN_LAST; ++kind) {
    llvm::StringRef name = llvm::AMDGPU::getArchNameAMDGCN(static_cast<llvm::AMDGPU::GPUKind>(kind));
    if (name.empty()) continue;
    EXPECT_TRUE(ours.count(name.str())) << name.str() << " is in LLVM 22's TargetParser but not in processors.def";
    ++seen;
  }
  EXPECT_GE(seen, 47u);  // TargetParser lists the non-generic ones
}

TEST(ProcessorTable, UnknownAndReservedMachValuesAreNotNamed) {
  for (std::uint32_t mach : {0x00u, 0x01u, 0x27u, 0x40u, 0x4bu, 0x4du, 0x56u, 0xffu}) {
    EXPECT_FALSE(processor_for_mach(mach).has_value()) << mach;
  }
  EXPECT_EQ(processor_for_mach(0x3f), "gfx90a");
  EXPECT_EQ(processor_for_mach(0x5f), "gfx9-4-generic");
}

}  // namespace
}  // namespace coload::detail
