# shmbus_library(NAME SOURCES ... [OUTPUT_NAME name] [INSTALL] [STATIC])
# One library of the project, from the folder it is called in: its public
# headers in include/shmbus/ (shmbus/NAME.hpp, or shmbus/NAME/*.hpp for a
# library of several), its private ones beside its sources in src/. The
# target is shmbus_NAME with the alias shmbus::NAME; only its own include/
# is exported, so a file can include a library's header only where it links
# that library (scripts/check-layout.py checks the rest).
function(shmbus_library name)
  cmake_parse_arguments(ARG "INSTALL;STATIC" "OUTPUT_NAME" "SOURCES" ${ARGN})
  if(NOT ARG_OUTPUT_NAME)
    set(ARG_OUTPUT_NAME shmbus_${name})
  endif()
  if(ARG_STATIC)
    add_library(shmbus_${name} STATIC ${ARG_SOURCES})
  else()
    add_library(shmbus_${name} ${ARG_SOURCES})
  endif()
  add_library(shmbus::${name} ALIAS shmbus_${name})
  set_target_properties(shmbus_${name} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME ${ARG_OUTPUT_NAME}
                                                  POSITION_INDEPENDENT_CODE ON)
  target_compile_features(shmbus_${name} PUBLIC cxx_std_20)
  target_include_directories(shmbus_${name}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  shmbus_warnings(shmbus_${name})
  if(ARG_INSTALL)
    install(TARGETS shmbus_${name} EXPORT shmbusTargets
            ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
    install(DIRECTORY include/shmbus DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endfunction()
