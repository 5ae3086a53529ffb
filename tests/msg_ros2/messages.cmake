# shmbus_test_ros2_msgs: the C++ of tests/msg_ros2 (ROS 2's interface
# language in ROS 2's share layout), generated as a user's would be; for the
# tests, the benchmarks and the fuzz targets, whichever is built.
if(NOT TARGET shmbus_test_ros2_msgs)
  file(GLOB shmbus_ros2_test_msg_files CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/ros2_test_msgs/msg/*.msg)
  shmbus_generate_messages(shmbus_test_ros2_msgs FILES ${shmbus_ros2_test_msg_files}
                           ${CMAKE_CURRENT_LIST_DIR}/ros2_test_msgs/srv/Query.srv
                           ${CMAKE_CURRENT_LIST_DIR}/ros2_test_msgs/action/Travel.action
                           INCLUDE_DIRS ${PROJECT_SOURCE_DIR}/runtime/msg)
  target_link_libraries(shmbus_test_ros2_msgs INTERFACE shmbus::messages)
endif()
