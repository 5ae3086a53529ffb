# One warning set for every target of the project. SHMBUS_WERROR (CI turns
# it on) makes them errors.
option(SHMBUS_WERROR "Treat compiler warnings as errors" OFF)

function(shmbus_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
  if(SHMBUS_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
