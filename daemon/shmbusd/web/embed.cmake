# Writes the web page into a C++ source as one raw string literal, so the
# daemon serves it with nothing on disk: cmake -DINPUT=page -DOUTPUT=cpp -P embed.cmake
file(READ "${INPUT}" page)
string(FIND "${page}" ")shmbus_page\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the literal's end marker )shmbus_page\"")
endif()
file(WRITE "${OUTPUT}.tmp"
     "// Generated from ${INPUT} by embed.cmake: do not edit.\n"
     "#include <string_view>\n"
     "namespace shmbus::shmbusd {\n"
     "std::string_view web_page() {\n"
     "  static constexpr std::string_view kPage = R\"shmbus_page(${page})shmbus_page\";\n"
     "  return kPage;\n"
     "}\n"
     "}  // namespace shmbus::shmbusd\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
