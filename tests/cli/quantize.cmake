# ctest -P script: `swinfer quantize` on the command line. The demo model quantized with a calibration of its own
# runs with --precision int8 and no calibration file, and segments voxel for voxel like the float checkpoint with
# that calibration, shows itself in `info`, and crosschecks against the reference backend in int8 and in fp32; a
# calibration for other weights, quantizing an int8 file again, and running one at fp32 or with another
# --calibration fail with a message that says what to do, and write nothing (a damaged file:
# tests/model/test_int8_model_file.cpp).
# Variables: SWINFER, DATA (data/demo), NIFTI (tests/data/nifti), OTHER_MODEL (another checkpoint), OUT.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
set(model --model ${DATA}/model.pt --config ${DATA}/model_config.json)
set(window --pipeline ${DATA}/pipeline.json --roi 64 --sw-batch 1)
set(volume -i ${NIFTI}/aniso.nii.gz)
set(quantized ${OUT}/demo.int8.safetensors)

include(${CMAKE_CURRENT_LIST_DIR}/expect_failure.cmake)

expect_success("calibrate" ${OUT}/demo.int8.json calibrate ${model} ${window} ${volume} -o ${OUT}/demo.int8.json -q)
expect_failure("a calibration for other weights" "made for other weights" ${OUT}/other.int8.safetensors
  quantize --model ${OTHER_MODEL} --calibration ${OUT}/demo.int8.json -o ${OUT}/other.int8.safetensors)
expect_success("quantize" ${quantized} quantize ${model} --calibration ${OUT}/demo.int8.json -o ${quantized})

# The mask of the int8 file is the mask of the float checkpoint with the calibration (.nii: no gzip time stamps).
expect_success("segment from the checkpoint" ${OUT}/from_checkpoint.nii
  segment ${model} ${window} --precision int8 --calibration ${OUT}/demo.int8.json ${volume}
          -o ${OUT}/from_checkpoint.nii -q)
expect_success("segment from the int8 file" ${OUT}/from_file.nii
  segment --model ${quantized} ${window} --precision int8 ${volume} -o ${OUT}/from_file.nii -q)
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT}/from_checkpoint.nii ${OUT}/from_file.nii
                RESULT_VARIABLE differ)
if(NOT differ EQUAL 0)
  message(FATAL_ERROR "the int8 model file's mask differs from the checkpoint's with the same calibration")
endif()

execute_process(COMMAND ${SWINFER} info --model ${quantized} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "int8 model file" OR NOT out MATCHES "int8 +[0-9]+ of [0-9]+ products")
  message(FATAL_ERROR "info on the int8 file (exit ${rc}):\n${out}\n${err}")
endif()

# crosscheck: the int8 file on cpu against the reference backend in int8 (the same scales), and against fp32.
expect_success("crosscheck in int8" ""
  crosscheck --model ${quantized} ${window} --precision int8 --backend cpu --input ${NIFTI}/aniso.nii.gz
             --min-agreement 0.999 -q)
execute_process(COMMAND ${SWINFER} crosscheck --model ${quantized} ${window} --precision int8 --backend cpu
                        --reference-precision fp32 --input ${NIFTI}/aniso.nii.gz --min-agreement 0 -q
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "against [a-z]+/fp32/ndhwc" OR NOT out MATCHES "label agreement")
  message(FATAL_ERROR "crosscheck --reference-precision fp32 (exit ${rc}):\n${out}\n${err}")
endif()

expect_failure("an int8 file at fp32" "holds int8 weights" ${OUT}/fp32.nii
  segment --model ${quantized} ${window} ${volume} -o ${OUT}/fp32.nii -q)
expect_failure("an int8 file with another calibration" "carries its own calibration" ${OUT}/recalibrated.nii
  segment --model ${quantized} ${window} --precision int8 --calibration ${OUT}/demo.int8.json ${volume}
          -o ${OUT}/recalibrated.nii -q)
expect_failure("quantizing an int8 file" "already an int8 model file" ${OUT}/twice.safetensors
  quantize --model ${quantized} --calibration ${OUT}/demo.int8.json -o ${OUT}/twice.safetensors)
