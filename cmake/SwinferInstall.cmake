# Install rules: headers, exported INTERFACE targets and a relocatable package config.
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
install(TARGETS ${_swinfer_export_targets} EXPORT swinferTargets)

# Header-only: the package goes to datadir and its version check ignores the architecture (as nlohmann/json does).
set(SWINFER_CONFIG_DIR ${CMAKE_INSTALL_DATADIR}/cmake/swinfer)
install(EXPORT swinferTargets NAMESPACE swinfer:: DESTINATION ${SWINFER_CONFIG_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/swinferConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/swinferConfig.cmake INSTALL_DESTINATION ${SWINFER_CONFIG_DIR})
set(_swinfer_sizeof_void_p ${CMAKE_SIZEOF_VOID_P})
unset(CMAKE_SIZEOF_VOID_P)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/swinferConfigVersion.cmake COMPATIBILITY SameMinorVersion)
set(CMAKE_SIZEOF_VOID_P ${_swinfer_sizeof_void_p})
install(FILES ${PROJECT_BINARY_DIR}/swinferConfig.cmake ${PROJECT_BINARY_DIR}/swinferConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/SwinferNifti.cmake
        DESTINATION ${SWINFER_CONFIG_DIR})
