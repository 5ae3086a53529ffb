# Debian packages (CPack DEB): `cmake --build BUILD --target package` makes
#   shmbus_<version>_amd64.deb      shmbusd (+ systemd unit, sysusers entry,
#                                   /etc/shmbus/shmbus.toml conffile), shmtool
#   shmbus-dev_<version>_amd64.deb  the libraries, headers, CMake package,
#                                   shmbus-msggen and the .msg definitions
# Configure with -DCMAKE_INSTALL_PREFIX=/usr for a package (tests/package/deb.sh);
# cpack refuses another prefix with one line (ShmbusPackageCheck.cmake).

# What a system install puts outside /usr: the configuration (etc/) and
# the systemd units (lib/systemd/system/). Installed for prefix /usr (a
# Debian package) at /etc and /lib/systemd/system, as Debian lays them out;
# for any other prefix under it (`cmake --install BUILD --prefix P` writes
# only under P). The prefix is the install's, not the configured one.
set(SHMBUS_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE STRING
    "Where the units go: relative, under the install prefix (prefix /usr: under /); absolute, there")
function(shmbus_install_system_files dir component)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "" "RENAME" "FILES")
  if(IS_ABSOLUTE "${dir}")
    install(FILES ${ARG_FILES} DESTINATION "${dir}" COMPONENT ${component})
    return()
  endif()
  set(rename "")
  if(ARG_RENAME)
    set(rename "RENAME \"${ARG_RENAME}\"")
  endif()
  install(CODE "
    if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
      set(shmbus_dest \"/${dir}\")
    else()
      set(shmbus_dest \"\${CMAKE_INSTALL_PREFIX}/${dir}\")
    endif()
    file(INSTALL DESTINATION \"\${shmbus_dest}\" TYPE FILE ${rename} FILES ${ARG_FILES})"
    COMPONENT ${component})
endfunction()

set(deb_dir ${PROJECT_SOURCE_DIR}/config/debian)
set(doc_files ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/architecture.md
              ${PROJECT_SOURCE_DIR}/docs/configuration.md)

# A native package's changelog, compressed without a timestamp (reproducible).
string(TIMESTAMP changelog_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
set(changelog ${CMAKE_CURRENT_BINARY_DIR}/debian/changelog)
file(WRITE ${changelog}
     "shmbus (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
     "  * Built from the shmbus source tree.\n\n"
     " -- shmbus developers <developers@shmbus.example.org>  ${changelog_date}\n")
add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/debian/changelog.gz
                   COMMAND gzip -9nf -k ${changelog} DEPENDS ${changelog} VERBATIM)
add_custom_target(shmbus_debian_changelog ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/debian/changelog.gz)

set(components daemon dev)
if(SHMBUS_BUILD_PYTHON)
  list(APPEND components python)
endif()
foreach(component ${components})
  set(pkg shmbus)
  if(component STREQUAL "dev")
    set(pkg shmbus-dev)
  elseif(component STREQUAL "python")
    set(pkg python3-shmbus)
  endif()
  install(FILES ${deb_dir}/copyright ${CMAKE_CURRENT_BINARY_DIR}/debian/changelog.gz
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${pkg} COMPONENT ${component})
endforeach()
install(FILES ${doc_files} DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/shmbus COMPONENT daemon)
shmbus_install_system_files(${SHMBUS_SYSTEMD_UNIT_DIR} daemon FILES
  ${PROJECT_SOURCE_DIR}/config/shmbusd.service ${PROJECT_SOURCE_DIR}/config/shmbus-bridge.service
  ${PROJECT_SOURCE_DIR}/config/shmbus-gateway.service ${PROJECT_SOURCE_DIR}/config/shmbus-roudi.service)
install(FILES ${PROJECT_SOURCE_DIR}/config/shmbus.sysusers DESTINATION lib/sysusers.d RENAME shmbus.conf
        COMPONENT daemon)
shmbus_install_system_files(etc/shmbus daemon FILES ${PROJECT_SOURCE_DIR}/config/shmbus.toml)

set(CPACK_GENERATOR DEB)
set(CPACK_SHMBUS_CONFIGURED_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/cmake/ShmbusPackageCheck.cmake)
set(CPACK_PACKAGE_NAME shmbus)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "shmbus developers <developers@shmbus.example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${components})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)

set(CPACK_DEBIAN_DAEMON_PACKAGE_NAME shmbus)
set(CPACK_DEBIAN_DAEMON_PACKAGE_SECTION net)
set(CPACK_DEBIAN_DAEMON_PACKAGE_DEPENDS "systemd")
# iox-roudi, for channels with transport = "iceoryx" (shmbusd --roudi, shmbus-roudi.service).
set(CPACK_DEBIAN_DAEMON_PACKAGE_RECOMMENDS "iceoryx")
set(CPACK_DEBIAN_DAEMON_PACKAGE_CONTROL_EXTRA
    "${deb_dir}/conffiles;${deb_dir}/postinst;${deb_dir}/prerm;${deb_dir}/postrm")
set(CPACK_DEBIAN_DAEMON_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# The long descriptions (lines under 80); the summary line is
# CPACK_PACKAGE_DESCRIPTION_SUMMARY.
string(JOIN "\n" CPACK_DEBIAN_DAEMON_DESCRIPTION
       "The monitoring daemon, the WebSocket bridge, the DDS gateway and the"
       "tools of shmbus."
       "shmbusd reads the time list of every channel of a domain, computes"
       "each channel's frequency and raises three-level alerts (log,"
       "Prometheus, channels on the bus, an Alertmanager webhook). shmtool"
       "lists, inspects, echoes, publishes and measures channels."
       "shmbus-bridge serves the channels and services to WebSocket clients"
       "(rosbridge v2 for roslib, the Foxglove WebSocket protocol)."
       "shmbus-gateway carries channels between hosts over Cyclone DDS.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME shmbus-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# What find_package(shmbus) finds its dependencies in (shmbusConfig.cmake).
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libboost-dev (>= 1.74), libfmt-dev, libtomlplusplus-dev, nlohmann-json3-dev (>= 3.10), libzstd-dev, liblz4-dev, zlib1g-dev, libisal-dev, libiceoryx-posh-dev")
string(JOIN "\n" CPACK_DEBIAN_DEV_DESCRIPTION
       "The libraries and headers of shmbus."
       "libshmbus_core (publishers, subscribers and wait sets in shared memory),"
       "nodes and executors, services (request/response), the schema codec,"
       "the synchronizer, the MCAP writer and reader, the CMake package"
       "(find_package(shmbus)), shmbus-msggen and the shipped message"
       "definitions.")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-shmbus)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
# The interpreter the module was built for, and NumPy for its messages.
math(EXPR next_minor "${SHMBUS_PYTHON_MINOR} + 1")
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
    "python3 (>= 3.${SHMBUS_PYTHON_MINOR}~), python3 (<< 3.${next_minor}), python3-numpy")
string(JOIN "\n" CPACK_DEBIAN_PYTHON_DESCRIPTION
       "The Python package of shmbus."
       "Publishers, subscribers, nodes with callbacks and timers, services,"
       "MCAP recordings and a domain's channels from Python, on the shmbus"
       "libraries. Messages are NumPy views of their bytes, built from each"
       "type's schema; a message read in place is a read-only view of the"
       "shared-memory ring, checked for overwrites.")

include(CPack)
