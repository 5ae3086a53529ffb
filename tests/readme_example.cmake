# The README shows examples/fusion_node.cpp whole: fails when they differ.
#   cmake -DREADME=README.md -DEXAMPLE=examples/fusion_node.cpp -P readme_example.cmake
file(READ "${README}" readme)
file(READ "${EXAMPLE}" example)
string(FIND "${readme}" "```cpp\n${example}```" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md does not show ${EXAMPLE} as it is: copy the file into its ```cpp block")
endif()
