# Install rules: headers, exported targets and a relocatable package config.
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ ${PROJECT_SOURCE_DIR}/backends/cpu/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(_swinfer_export_targets swinfer swinfer_nifti)
set_target_properties(swinfer_nifti PROPERTIES EXPORT_NAME nifti)
if(SWINFER_WITH_ONEDNN)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/backends/onednn/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  list(APPEND _swinfer_export_targets swinfer_onednn)
  set_target_properties(swinfer_onednn PROPERTIES EXPORT_NAME onednn)
endif()
# The hip backend: its static library (kernels and runtime calls) and public headers; the vendor headers are the
# library's own (its sources include them, its users never do).
set(SWINFER_INSTALLED_GPU_PLATFORM off)
if(TARGET swinfer_hip)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/backends/hip/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          PATTERN vendor EXCLUDE)
  list(APPEND _swinfer_export_targets swinfer_hip)
  set_target_properties(swinfer_hip PROPERTIES EXPORT_NAME hip)
  set(SWINFER_INSTALLED_GPU_PLATFORM ${_swinfer_gpu})
endif()
# swinfer::runtime: its static library (every backend's models, built with this build's flags) and public headers.
if(TARGET swinfer_runtime)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  list(APPEND _swinfer_export_targets swinfer_runtime)
  set_target_properties(swinfer_runtime PROPERTIES EXPORT_NAME runtime)
endif()
install(TARGETS ${_swinfer_export_targets} EXPORT swinferTargets)

if(TARGET swinfer_hip OR TARGET swinfer_runtime)
  # A compiled library: the package is for this architecture.
  set(SWINFER_CONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/swinfer)
else()
  # Header-only: the package goes to datadir and its version check ignores the architecture (as nlohmann/json does).
  set(SWINFER_CONFIG_DIR ${CMAKE_INSTALL_DATADIR}/cmake/swinfer)
  set(_swinfer_sizeof_void_p ${CMAKE_SIZEOF_VOID_P})
  unset(CMAKE_SIZEOF_VOID_P)
endif()
install(EXPORT swinferTargets NAMESPACE swinfer:: DESTINATION ${SWINFER_CONFIG_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/swinferConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/swinferConfig.cmake INSTALL_DESTINATION ${SWINFER_CONFIG_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/swinferConfigVersion.cmake COMPATIBILITY SameMinorVersion)
if(NOT TARGET swinfer_hip AND NOT TARGET swinfer_runtime)
  set(CMAKE_SIZEOF_VOID_P ${_swinfer_sizeof_void_p})
endif()
install(FILES ${PROJECT_BINARY_DIR}/swinferConfig.cmake ${PROJECT_BINARY_DIR}/swinferConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/SwinferNifti.cmake
        DESTINATION ${SWINFER_CONFIG_DIR})
