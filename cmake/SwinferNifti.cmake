# Defines NIFTI::nifti2 (nifti_clib's NIfTI-1/2 library with znzlib and zlib).
# Debian 12's NIFTIConfig.cmake (libnifti2-dev 3.0.1) points at /usr/lib/lib*.so instead of the multiarch directory
# and stops with a FATAL_ERROR, so the package config is not used; the target is built from the installed files.
# Link NIFTI::nifti2 only, never also NIFTI::niftiio: that NIfTI-1-only library exports the same symbol names.
if(NOT TARGET NIFTI::nifti2)
  find_path(SWINFER_NIFTI_INCLUDE_DIR nifti2_io.h PATH_SUFFIXES nifti REQUIRED)
  if(SWINFER_STATIC OR SWINFER_STATIC_LIBS)
    find_library(SWINFER_NIFTI2_LIBRARY NAMES libnifti2.a REQUIRED)
    find_library(SWINFER_ZNZ_LIBRARY NAMES libznz.a REQUIRED)
  else()
    find_library(SWINFER_NIFTI2_LIBRARY nifti2 REQUIRED)
    find_library(SWINFER_ZNZ_LIBRARY znz REQUIRED)
  endif()
  find_package(ZLIB REQUIRED)
  # znzlib as a target of its own that needs zlib, so a static link puts libz.a after libznz.a (archives are
  # searched once, in order).
  add_library(NIFTI::znz UNKNOWN IMPORTED)
  set_target_properties(NIFTI::znz PROPERTIES
    IMPORTED_LOCATION "${SWINFER_ZNZ_LIBRARY}"
    INTERFACE_LINK_LIBRARIES ZLIB::ZLIB)
  add_library(NIFTI::nifti2 UNKNOWN IMPORTED)
  set_target_properties(NIFTI::nifti2 PROPERTIES
    IMPORTED_LOCATION "${SWINFER_NIFTI2_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${SWINFER_NIFTI_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "NIFTI::znz;m")
endif()
