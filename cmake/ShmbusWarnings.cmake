# One warning set for every target of the project. SHMBUS_WERROR (CI turns
# it on) makes them errors.
option(SHMBUS_WERROR "Treat compiler warnings as errors" OFF)

function(shmbus_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
  if(SHMBUS_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# GCC 12's <regex> trips its own -Wmaybe-uninitialized when the sanitizers
# instrument it (GCC bug 105562, inside libstdc++'s _State move): off for the
# source files that use std::regex (all of them tests), not for the project.
function(shmbus_uses_regex)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set_source_files_properties(${ARGN} DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                                PROPERTIES COMPILE_OPTIONS "-Wno-maybe-uninitialized")
  endif()
endfunction()

# Boost.Beast's HTTP parser (its boost::optional<std::uint64_t> content
# length) trips the same GCC 12 warning when the sanitizers instrument it:
# off for the source files named, not for the project.
function(shmbus_uses_beast_parser)
  shmbus_uses_regex(${ARGN})
endfunction()

# The hot paths (publish, take, wait, the executor, the schema codec, the
# bridge's encoders): -O1 in the sanitizer builds, whose default is -O0
# (CMakeLists.txt), so that tests driving them at kHz rates or floods run
# as they do elsewhere.
function(shmbus_hot_path target)
  if(NOT SHMBUS_SANITIZE STREQUAL "")
    target_compile_options(${target} PRIVATE -O1)
  endif()
endfunction()

# Sources of a hot target that are costly to compile and cheap to run (a
# source's options come after its target's, so -O0 wins there).
function(shmbus_cold_sources)
  if(NOT SHMBUS_SANITIZE STREQUAL "")
    set_source_files_properties(${ARGN} DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} PROPERTIES COMPILE_OPTIONS -O0)
  endif()
endfunction()
