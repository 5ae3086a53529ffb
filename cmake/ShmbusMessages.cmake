# shmbus_generate_messages(<target> FILES <pkg>/<Name>.msg|.srv|.action... [INCLUDE_DIRS <root>...])
#
# Generates <pkg>/<Name>.hpp for each FILE with shmbus-msggen (a service
# .srv also gives <Name>_Request.hpp and <Name>_Response.hpp; an action
# .action gives <Name>_Goal.hpp, <Name>_Result.hpp and <Name>_Feedback.hpp;
# a FILE may be in ROS 2's share layout, <pkg>/msg/<Name>.msg) and makes
# <target> an INTERFACE library that provides them (and links
# shmbus::core). Types a FILE uses are looked up among the FILES and in
# each INCLUDE_DIRS root (<root>/<pkg>/<Name>.msg or <root>/<pkg>/msg/<Name>.msg), e.g. the shipped
# messages in ${SHMBUS_MESSAGE_DIR}.
function(shmbus_generate_messages target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "FILES;INCLUDE_DIRS")
  if(NOT ARG_FILES)
    message(FATAL_ERROR "shmbus_generate_messages(${target}): give the .msg files with FILES")
  endif()
  set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/${target}_generated")
  set(headers "")
  set(msg_files "")
  foreach(f IN LISTS ARG_FILES)
    get_filename_component(abs "${f}" ABSOLUTE)
    get_filename_component(name "${abs}" NAME_WE)
    get_filename_component(dir "${abs}" DIRECTORY)
    get_filename_component(pkg "${dir}" NAME)
    if(pkg MATCHES "^(msg|srv|action)$")  # ROS 2's share layout: <pkg>/msg/<Name>.msg
      get_filename_component(dir "${dir}" DIRECTORY)
      get_filename_component(pkg "${dir}" NAME)
    endif()
    if(abs MATCHES "\\.action$")
      list(APPEND headers "${out_dir}/${pkg}/${name}_Goal.hpp" "${out_dir}/${pkg}/${name}_Result.hpp"
           "${out_dir}/${pkg}/${name}_Feedback.hpp")
    else()
      list(APPEND headers "${out_dir}/${pkg}/${name}.hpp")
    endif()
    if(abs MATCHES "\\.srv$")
      list(APPEND headers "${out_dir}/${pkg}/${name}_Request.hpp" "${out_dir}/${pkg}/${name}_Response.hpp")
    endif()
    list(APPEND msg_files "${abs}")
  endforeach()
  set(include_args "")
  set(dep_files "")
  foreach(d IN LISTS ARG_INCLUDE_DIRS)
    get_filename_component(abs "${d}" ABSOLUTE)
    list(APPEND include_args --include "${abs}")
    file(GLOB_RECURSE found "${abs}/*.msg")
    list(APPEND dep_files ${found})
  endforeach()
  add_custom_command(
    OUTPUT ${headers}
    COMMAND shmbus::msggen --out "${out_dir}" ${include_args} ${msg_files}
    DEPENDS shmbus::msggen ${msg_files} ${dep_files}
    COMMENT "shmbus-msggen: headers for ${target}"
    VERBATIM)
  add_custom_target(${target}_generate ALL DEPENDS ${headers})
  add_library(${target} INTERFACE)
  add_dependencies(${target} ${target}_generate)
  target_include_directories(${target} INTERFACE "$<BUILD_INTERFACE:${out_dir}>")
  target_link_libraries(${target} INTERFACE shmbus::core)
endfunction()
