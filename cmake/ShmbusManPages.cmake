# Manual pages generated at build time from a program's own --help by
# help2man (Debian's help2man), with the EXIT STATUS, ENVIRONMENT and SEE
# ALSO sections of docs/man/shmbus.h2m, gzipped and installed with the
# program's component.
#   shmbus_man_pages(TARGET t NAME shmtool SECTION 1 DESCRIPTION "..." COMPONENT daemon
#                    [VERBS list info ...])
# VERBS: one more page per verb, NAME-VERB.SECTION, from `NAME VERB --help`.
find_program(SHMBUS_HELP2MAN help2man REQUIRED)
find_program(SHMBUS_GZIP gzip REQUIRED)

function(shmbus_man_pages)
  cmake_parse_arguments(M "" "TARGET;NAME;SECTION;DESCRIPTION;COMPONENT" "VERBS" ${ARGN})
  set(include ${PROJECT_SOURCE_DIR}/docs/man/shmbus.h2m)
  set(dir ${CMAKE_BINARY_DIR}/man)
  set(pages)
  foreach(verb "" ${M_VERBS})
    if(verb STREQUAL "")
      set(page ${M_NAME})
      set(name_text "${M_DESCRIPTION}")
    else()
      set(page ${M_NAME}-${verb})
      set(name_text "")  # the verb's first help line
    endif()
    set(out ${dir}/${page}.${M_SECTION})
    add_custom_command(
      OUTPUT ${out}.gz
      COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
      COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:${M_TARGET}> -DVERB=${verb} -DPAGE=${page}
              -DSECTION=${M_SECTION} -DVERSION=${PROJECT_VERSION} -DINCLUDE=${include} -DOUT=${out}
              -DHELP2MAN=${SHMBUS_HELP2MAN} -DGZIP=${SHMBUS_GZIP} "-DNAME_TEXT=${name_text}"
              -P ${PROJECT_SOURCE_DIR}/cmake/ShmbusHelp2Man.cmake
      DEPENDS ${M_TARGET} ${include} ${PROJECT_SOURCE_DIR}/cmake/ShmbusHelp2Man.cmake
      COMMENT "man page ${page}.${M_SECTION}"
      VERBATIM)
    list(APPEND pages ${out}.gz)
  endforeach()
  add_custom_target(${M_NAME}_man_pages ALL DEPENDS ${pages})
  install(FILES ${pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${M_SECTION} COMPONENT ${M_COMPONENT})
endfunction()
