// swinfer: NIfTI-1/NIfTI-2 (.nii, .nii.gz) reading and writing with nifti_clib; outputs keep the input's geometry.
#pragma once

#include "swinfer/io/nifti_read.hpp"
#include "swinfer/io/nifti_write.hpp"
