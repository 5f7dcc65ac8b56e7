# What `cmake --install build --prefix P` puts under P (issue 11, item 2):
#   lib/libkiln_runtime.so.1       the embeddable runtime (C ABI, no LLVM)
#   include/kiln/kiln_runtime.h    its header
#   lib/cmake/KilnRuntime/         find_package(KilnRuntime): the imported target Kiln::Runtime
#                                  and kiln_compile_model() (KilnCompile.cmake)
#   lib/pkgconfig/kiln-runtime.pc  pkg-config --cflags --libs kiln-runtime
#   bin/kiln, bin/kilnd, bin/kiln-worker, bin/kiln-graph-hash
include(CMakePackageConfigHelpers)

set(KILN_CMAKE_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/KilnRuntime)
set_target_properties(kiln_runtime_c PROPERTIES EXPORT_NAME Runtime)
install(TARGETS kiln_runtime_c EXPORT KilnRuntimeTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${KILN_RUNTIME_HEADER} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln)
install(EXPORT KilnRuntimeTargets NAMESPACE Kiln:: DESTINATION ${KILN_CMAKE_PACKAGE_DIR})
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/KilnRuntimeConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/KilnRuntimeConfig.cmake
  INSTALL_DESTINATION ${KILN_CMAKE_PACKAGE_DIR})
write_basic_package_version_file(
  ${CMAKE_BINARY_DIR}/cmake/KilnRuntimeConfigVersion.cmake
  VERSION ${KILN_RUNTIME_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/KilnRuntimeConfig.cmake
              ${CMAKE_BINARY_DIR}/cmake/KilnRuntimeConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/KilnCompile.cmake
        DESTINATION ${KILN_CMAKE_PACKAGE_DIR})
# The .pc file finds the prefix from its own place, so the installed tree can move.
file(RELATIVE_PATH KILN_PC_PREFIX_FROM_PCFILEDIR /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" KILN_PC_PREFIX_FROM_PCFILEDIR "${KILN_PC_PREFIX_FROM_PCFILEDIR}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/kiln-runtime.pc.in
               ${CMAKE_BINARY_DIR}/cmake/kiln-runtime.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cmake/kiln-runtime.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

foreach(binary kiln kilnd kiln-worker kiln-graph-hash)
  if(TARGET ${binary})
    install(TARGETS ${binary} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()
