# Runs PROGRAM with ARGS (a ;-list) and fails unless it exits with EXIT and
# its output (stdout and stderr) matches REGEX.
#   cmake -DPROGRAM=... -DARGS=--help -DEXIT=0 -DREGEX=Usage: -P answers.cmake
execute_process(COMMAND ${PROGRAM} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 10)
if(NOT rc STREQUAL EXIT)
  message(FATAL_ERROR "${PROGRAM} ${ARGS}: exit ${rc}, want ${EXIT}\n${out}${err}")
endif()
if(NOT "${out}${err}" MATCHES "${REGEX}")
  message(FATAL_ERROR "${PROGRAM} ${ARGS}: output does not match '${REGEX}':\n${out}${err}")
endif()
