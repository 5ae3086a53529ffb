# Read by cpack when it packs (CPACK_PROJECT_CONFIG_FILE). A Debian package
# installs under /usr and its conffile is /etc/shmbus/shmbus.toml; a tree
# configured for another prefix compiled that prefix into its paths and
# installs the configuration under PREFIX/etc, which the package's
# conffiles would not name: dpkg refuses such a package. So cpack does.
if(NOT CPACK_SHMBUS_CONFIGURED_PREFIX STREQUAL "/usr")
  message(FATAL_ERROR
          "shmbus: a Debian package needs a tree configured with -DCMAKE_INSTALL_PREFIX=/usr (this one has "
          "CMAKE_INSTALL_PREFIX=${CPACK_SHMBUS_CONFIGURED_PREFIX}); configure a tree so, or run tests/package/deb.sh")
endif()
