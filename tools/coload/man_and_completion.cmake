# The tool's man page and bash completion (coload-tools package, cmake/Install.cmake).
#
# The man page is generated at build time from the built tool's own help by
# help2man, with an include file (man_sections.sh) holding each command's
# `coload CMD --help` and the COLOAD_* variables of docs/environment.md, so
# the page never disagrees with the option tables. Without help2man (a
# parent project's build may lack it) there is no man page, and the build
# says so. The completion script reads the same help at completion time.

find_program(COLOAD_HELP2MAN help2man)
if(COLOAD_HELP2MAN)
  set(COLOAD_MAN_PAGE ${CMAKE_CURRENT_BINARY_DIR}/coload.1)
  set(COLOAD_MAN_SECTIONS ${CMAKE_CURRENT_BINARY_DIR}/coload.h2m)
  add_custom_command(OUTPUT ${COLOAD_MAN_SECTIONS}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/man_sections.sh $<TARGET_FILE:coload_cli>
            ${PROJECT_SOURCE_DIR}/docs/environment.md ${CMAKE_INSTALL_DOCDIR} ${COLOAD_MAN_SECTIONS}
    DEPENDS coload_cli ${CMAKE_CURRENT_SOURCE_DIR}/man_sections.sh ${PROJECT_SOURCE_DIR}/docs/environment.md
    COMMENT "Collecting the coload commands' help for the man page"
    VERBATIM)
  add_custom_command(OUTPUT ${COLOAD_MAN_PAGE}
    COMMAND ${COLOAD_HELP2MAN} --no-info --section 1
            --name "list, select, check and load the code objects of AMD GPU fat binaries"
            --include ${COLOAD_MAN_SECTIONS} --output ${COLOAD_MAN_PAGE} $<TARGET_FILE:coload_cli>
    DEPENDS coload_cli ${COLOAD_MAN_SECTIONS}
    COMMENT "Generating the coload man page with help2man"
    VERBATIM)
  add_custom_target(coload_man ALL DEPENDS ${COLOAD_MAN_PAGE})
  if(COLOAD_INSTALL)
    install(FILES ${COLOAD_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT tools)
  endif()
else()
  message(STATUS "help2man not found: no man page for the coload tool")
endif()

if(COLOAD_INSTALL)
  install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/coload.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
          RENAME coload COMPONENT tools)
endif()
