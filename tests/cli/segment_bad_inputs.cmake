# ctest -P script: a batch with bad inputs (not NIfTI, truncated, 2-D, NaN voxels, wrong channel count) exits
# non-zero, names each culprit, leaves no output for it (nor a journal entry), and still segments the good input.
# Variables: SWINFER, DATA (data/demo), NIFTI (tests/data/nifti), OUT.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT}/in)
file(COPY ${DATA}/phantom.nii.gz DESTINATION ${OUT}/in)
foreach(bad not_nifti.nii truncated.nii.gz two_d.nii nan.nii four_d_2ch.nii.gz)
  file(COPY ${NIFTI}/${bad} DESTINATION ${OUT}/in)
endforeach()
execute_process(
  COMMAND ${SWINFER} segment --model ${DATA}/model.pt --config ${DATA}/model_config.json --pipeline ${DATA}/pipeline.json
          --roi 64 --sw-batch 1 --input ${OUT}/in --output ${OUT}/out --quiet
  RESULT_VARIABLE rc ERROR_VARIABLE err)
message(STATUS "stderr:\n${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "a batch with bad inputs exited 0")
endif()
foreach(culprit not_nifti.nii truncated.nii.gz two_d.nii nan.nii four_d_2ch.nii.gz)
  string(FIND "${err}" "${culprit}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the errors do not name ${culprit}")
  endif()
endforeach()
if(NOT EXISTS ${OUT}/out/phantom_seg.nii.gz)
  message(FATAL_ERROR "the good input was not segmented")
endif()
file(GLOB written ${OUT}/out/[^.]*)  # the journal of finished volumes is hidden
list(LENGTH written count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "expected only phantom_seg.nii.gz in the output folder, found: ${written}")
endif()
file(GLOB journal RELATIVE ${OUT}/out/.swinfer-journal ${OUT}/out/.swinfer-journal/*)
if(NOT journal STREQUAL "phantom.json")
  message(FATAL_ERROR "the journal should record the good input only, found: ${journal}")
endif()
