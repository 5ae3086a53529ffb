# Run as cmake -P: one man page from a program's --help (help2man), named
# by the first line of that help (a verb's one-line description) unless
# NAME_TEXT is given, then gzipped. Variables: PROGRAM, VERB (may be
# empty), PAGE, SECTION, VERSION, INCLUDE, OUT, HELP2MAN, GZIP, NAME_TEXT.
set(help_option "--help")
if(VERB)
  set(help_option "${VERB} --help")
endif()
if(NOT NAME_TEXT)
  separate_arguments(args UNIX_COMMAND "${help_option}")
  execute_process(COMMAND ${PROGRAM} ${args} OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${PROGRAM} ${help_option} failed (${rc})")
  endif()
  string(REGEX REPLACE "\n.*" "" NAME_TEXT "${help}")
  string(TOLOWER "${NAME_TEXT}" first)
  string(SUBSTRING "${first}" 0 1 first)
  string(SUBSTRING "${NAME_TEXT}" 1 -1 rest)
  set(NAME_TEXT "${first}${rest}")
endif()
execute_process(COMMAND ${HELP2MAN} --no-info --no-discard-stderr --section=${SECTION} "--name=${NAME_TEXT}"
                        "--help-option=${help_option}" "--version-string=${PAGE} ${VERSION}" --include=${INCLUDE}
                        --output=${OUT} ${PROGRAM}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "help2man failed for ${PAGE}.${SECTION} (${rc})")
endif()
execute_process(COMMAND ${GZIP} -9nf ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip failed for ${OUT}")
endif()
