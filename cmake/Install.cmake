# What `cmake --install` and `cpack -G DEB` put where (docs/packaging.md):
#   runtime     -> libcoload0      libcoload.so.MAJOR and .so.VERSION
#   development -> libcoload-dev   headers of the C API, libcoload.so, the CMake
#                                  package, coload.pc, the docs
#   tools       -> coload-tools    the coload tool, its man page, bash completion
#   python      -> python3-coload  the Python package, in COLOAD_INSTALL_PYTHONDIR
# Every path comes from GNUInstallDirs, and every installed file finds the
# others relative to itself, so the tree works under any prefix (and as the
# .debs' /usr).
include(CMakePackageConfigHelpers)

install(TARGETS coload EXPORT coload-targets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT development)
# What `coload run` preloads (docs/preload.md): a component of its own.
install(TARGETS coload_preload_library LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT preload)
# The C ABI's headers only: the C++20 headers declare symbols libcoload.so does not export.
install(FILES ${PROJECT_SOURCE_DIR}/include/coload/coload.h ${PROJECT_SOURCE_DIR}/include/coload/coload_kpack.h
              ${PROJECT_SOURCE_DIR}/include/coload/hotswap_plugin.h
              ${PROJECT_BINARY_DIR}/include/coload/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/coload COMPONENT development)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT development)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/CHANGELOG.md ${PROJECT_SOURCE_DIR}/LICENSE
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT development)

# CMake package: find_package(coload 0.2 CONFIG) -> coload::coload. The build
# tree carries the same package (coload_DIR=<build>), with the build's include paths.
set(COLOAD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/coload)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/coload-config.cmake.in
  ${PROJECT_BINARY_DIR}/coload-config.cmake INSTALL_DESTINATION ${COLOAD_CMAKE_DIR} NO_SET_AND_CHECK_MACRO
  NO_CHECK_REQUIRED_COMPONENTS_MACRO)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/coload-config-version.cmake
  COMPATIBILITY SameMajorVersion)
install(EXPORT coload-targets NAMESPACE coload:: DESTINATION ${COLOAD_CMAKE_DIR} COMPONENT development)
install(FILES ${PROJECT_BINARY_DIR}/coload-config.cmake ${PROJECT_BINARY_DIR}/coload-config-version.cmake
        DESTINATION ${COLOAD_CMAKE_DIR} COMPONENT development)
export(EXPORT coload-targets NAMESPACE coload:: FILE ${PROJECT_BINARY_DIR}/coload-targets.cmake)

# pkg-config: prefix relative to the .pc file, so a relocated tree (or the
# .debs extracted anywhere with dpkg -x) still points at itself.
file(RELATIVE_PATH COLOAD_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" COLOAD_PC_TO_PREFIX "${COLOAD_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/coload.pc.in ${PROJECT_BINARY_DIR}/coload.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/coload.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)

# The Python package where Debian's python3 looks under /usr (relative to
# the prefix; another prefix's users set PYTHONPATH to <prefix>/this). Its
# _paths.py holds the path from the package to libcoload.so.0, so the tree
# stays relocatable.
set(COLOAD_INSTALL_PYTHONDIR lib/python3/dist-packages
    CACHE STRING "Where the Python package is installed, relative to the prefix")
file(RELATIVE_PATH COLOAD_PYTHON_TO_LIBRARY /${COLOAD_INSTALL_PYTHONDIR}/coload
     /${CMAKE_INSTALL_LIBDIR}/libcoload.so.${PROJECT_VERSION_MAJOR})
file(WRITE ${PROJECT_BINARY_DIR}/python-install/_paths.py
     "\"\"\"Where libcoload.so.0 is, from this package (written by the install).\"\"\"\n\n"
     "LIBRARY = \"${COLOAD_PYTHON_TO_LIBRARY}\"\n")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/coload/ DESTINATION ${COLOAD_INSTALL_PYTHONDIR}/coload
        COMPONENT python FILES_MATCHING PATTERN "*.py" PATTERN "py.typed" PATTERN "__pycache__" EXCLUDE)
install(FILES ${PROJECT_BINARY_DIR}/python-install/_paths.py DESTINATION ${COLOAD_INSTALL_PYTHONDIR}/coload
        COMPONENT python)

# Debian packages: `cpack -G DEB` in the build tree writes the three .debs there.
if(PROJECT_IS_TOP_LEVEL)
  set(COLOAD_PACKAGE_MAINTAINER "coload maintainers <coload@localhost>"
      CACHE STRING "The Maintainer field of the Debian packages")
  set(CPACK_PACKAGE_NAME coload)
  set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "reads, selects, checks and loads AMD GPU fat binaries")
  set(CPACK_PACKAGE_CONTACT ${COLOAD_PACKAGE_MAINTAINER})
  set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
  set(CPACK_GENERATOR DEB)
  set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
  set(CPACK_COMPONENTS_ALL runtime development tools python preload)
  set(CPACK_DEB_COMPONENT_INSTALL ON)
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
  set(CPACK_STRIP_FILES ON)
  set(CPACK_DEBIAN_PACKAGE_SECTION libs)
  # dpkg-shlibdeps computes each package's Depends from what its files load
  # (libcoload0: libc6 and libzstd1); the ROCm libraries are opened at run time.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libcoload${PROJECT_VERSION_MAJOR})
  # A shlibs file (so packages built against it depend on it) and the ldconfig trigger.
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_GENERATE_SHLIBS ON)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "libhsa-runtime64-1, libamdhip64-5, libamd-comgr2")
  set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "coload: AMD GPU fat binary reader and loader (C ABI library)
 Reads plain and compressed clang offload bundles, chooses the code object for
 a device, checks it and loads it with ROCr or HIP, opened at run time.")
  set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libcoload-dev)
  set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
  set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS "libcoload${PROJECT_VERSION_MAJOR} (= ${PROJECT_VERSION})")
  set(CPACK_DEBIAN_DEVELOPMENT_DESCRIPTION "coload: AMD GPU fat binary reader and loader (development files)
 Headers of the C API, the CMake package (find_package(coload)), coload.pc
 and the documentation.")
  set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME coload-tools)
  set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION devel)
  set(CPACK_DEBIAN_TOOLS_DESCRIPTION "coload: AMD GPU fat binary reader and loader (command-line tool)
 coload ls, extract, select, check, devices, load and run, with a man page and
 bash completion.")
  set(CPACK_DEBIAN_PRELOAD_PACKAGE_NAME coload-preload)
  set(CPACK_DEBIAN_PRELOAD_PACKAGE_SECTION libs)
  set(CPACK_DEBIAN_PRELOAD_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_PRELOAD_DESCRIPTION "coload: AMD GPU fat binary reader and loader (HIP preload)
 libcoload_preload.so, which coload run preloads in front of the HIP runtime
 so that existing HIP programs load the code object coload chooses per GPU.")
  set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS "coload-preload (= ${PROJECT_VERSION})")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-coload)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_ARCHITECTURE all)
  # Pure Python: no ELF for dpkg-shlibdeps; it opens libcoload.so.0 with ctypes.
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3, libcoload${PROJECT_VERSION_MAJOR} (= ${PROJECT_VERSION})")
  set(CPACK_DEBIAN_PYTHON_DESCRIPTION "coload: AMD GPU fat binary reader and loader (Python package)
 The coload package: registries, kernel lookups, dispatch checks and
 selection reports over libcoload.so.0's C API, with ctypes.")
  include(CPack)
endif()
