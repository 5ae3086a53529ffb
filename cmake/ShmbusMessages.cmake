# shmbus_generate_messages(<target> FILES <pkg>/<Name>.msg|.srv|.action... [INCLUDE_DIRS <root>...])
#
# Generates C++ headers for each FILE with shmbus-msggen, where rosidl puts
# them: <pkg>/msg/<name>.hpp for a message (<name> in rosidl's
# lower_case_underscore; <pkg>/<Name>.hpp is kept as an alias),
# <pkg>/srv/<name>.hpp for a service (with <Name>_Request.hpp and
# <Name>_Response.hpp), <pkg>/action/<name>.hpp for an action (with
# <Name>_Goal.hpp, <Name>_Result.hpp, <Name>_Feedback.hpp and the types ROS 2
# derives: <Name>_SendGoal_Request.hpp and the like). A FILE may be
# flat (<pkg>/<Name>.msg) or in ROS 2's share layout (<pkg>/msg/<Name>.msg).
# Types a FILE uses are looked up among the FILES, the shipped definitions,
# each INCLUDE_DIRS root (<root>/<pkg>/<Name>.msg or
# <root>/<pkg>/msg/<Name>.msg), SHMBUS_MSG_PATH and AMENT_PREFIX_PATH; those
# that are not shipped are generated too. A FILE that cannot be generated
# (a wstring, say) is said in one line and fails only what uses it.
# <target> is an INTERFACE library that provides the headers and links
# shmbus::core and shmbus::messages (the shipped types' headers).

# rosidl's file name of a type: rosidl_pycommon's
# convert_camel_case_to_lower_case_underscore ("PointCloud2" -> "point_cloud2").
function(_shmbus_snake_case name out)
  string(REGEX REPLACE "(.)([A-Z][a-z]+)" "\\1_\\2" v "${name}")
  string(REGEX REPLACE "([a-z0-9])([A-Z])" "\\1_\\2" v "${v}")
  string(TOLOWER "${v}" v)
  set(${out} "${v}" PARENT_SCOPE)
endfunction()

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
    _shmbus_snake_case("${name}" snake)
    if(abs MATCHES "\\.action$")
      list(APPEND headers "${out_dir}/${pkg}/action/${snake}.hpp")
      foreach(part IN ITEMS Goal Result Feedback SendGoal_Request SendGoal_Response GetResult_Request
                            GetResult_Response FeedbackMessage)
        list(APPEND headers "${out_dir}/${pkg}/${name}_${part}.hpp")
      endforeach()
    elseif(abs MATCHES "\\.srv$")
      list(APPEND headers "${out_dir}/${pkg}/srv/${snake}.hpp" "${out_dir}/${pkg}/${name}_Request.hpp"
           "${out_dir}/${pkg}/${name}_Response.hpp")
    else()
      list(APPEND headers "${out_dir}/${pkg}/msg/${snake}.hpp" "${out_dir}/${pkg}/${name}.hpp")
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
  # The headers of a FILE that cannot be generated are not written: a stamp
  # is the command's output, the headers its byproducts.
  set(stamp "${out_dir}.stamp")
  add_custom_command(
    OUTPUT "${stamp}"
    BYPRODUCTS ${headers}
    COMMAND shmbus::msggen --out "${out_dir}" --keep-going ${include_args} ${msg_files}
    COMMAND ${CMAKE_COMMAND} -E touch "${stamp}"
    DEPENDS shmbus::msggen ${msg_files} ${dep_files}
    COMMENT "shmbus-msggen: headers for ${target}"
    VERBATIM)
  add_custom_target(${target}_generate ALL DEPENDS "${stamp}")
  add_library(${target} INTERFACE)
  add_dependencies(${target} ${target}_generate)
  target_include_directories(${target} INTERFACE "$<BUILD_INTERFACE:${out_dir}>")
  target_link_libraries(${target} INTERFACE shmbus::core)
  if(TARGET shmbus::messages)
    target_link_libraries(${target} INTERFACE shmbus::messages)
  endif()
endfunction()
