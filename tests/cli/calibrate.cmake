# ctest -P script: `swinfer calibrate` and int8 segmentation on the command line. A calibration with a volume the
# reader rejects, or from an empty folder, fails naming it and writes nothing; a good one is written (every point in
# int8 with --fallback-error inf) and lets `segment --precision int8` run, and so does --int8-dynamic without one;
# int8 without a calibration, a calibration or --int8-dynamic with a float precision, both together, or a
# calibration made for other weights fail with a message that says what to do, and write no mask.
# Variables: SWINFER, DATA (data/demo), NIFTI (tests/data/nifti), OTHER_MODEL (another checkpoint), OUT.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT}/empty)
set(model --model ${DATA}/model.pt --config ${DATA}/model_config.json)
set(window --pipeline ${DATA}/pipeline.json --roi 64 --sw-batch 1)

include(${CMAKE_CURRENT_LIST_DIR}/expect_failure.cmake)

expect_failure("a truncated calibration volume" "truncated.nii.gz" ${OUT}/bad.int8.json
  calibrate ${model} ${window} -i ${NIFTI}/aniso.nii.gz ${NIFTI}/truncated.nii.gz -o ${OUT}/bad.int8.json -q)
expect_failure("an empty calibration folder" "holds no .nii" ${OUT}/empty.int8.json
  calibrate ${model} ${window} -i ${OUT}/empty -o ${OUT}/empty.int8.json -q)

expect_success("calibrate" ${OUT}/good.int8.json
  calibrate ${model} ${window} -i ${NIFTI}/aniso.nii.gz -o ${OUT}/good.int8.json --method mse -q)
# Each point records its measured int8 error and the file the threshold calibration left points in float above.
file(READ ${OUT}/good.int8.json calibration)
if(NOT calibration MATCHES "\"fallback_error\": 0.1" OR NOT calibration MATCHES "\"error\": [0-9]")
  message(FATAL_ERROR "the calibration lacks its fallback threshold or the points' errors:\n${calibration}")
endif()
# --fallback-error inf (as its help says) keeps every point in int8.
expect_success("calibrate --fallback-error inf" ${OUT}/all.int8.json
  calibrate ${model} ${window} -i ${NIFTI}/aniso.nii.gz -o ${OUT}/all.int8.json --method max --fallback-error inf -q)
file(READ ${OUT}/all.int8.json calibration)
if(calibration MATCHES "\"precision\": \"float\"" OR NOT calibration MATCHES "\"precision\": \"int8\"")
  message(FATAL_ERROR "--fallback-error inf left points in float:\n${calibration}")
endif()
expect_success("segment --precision int8" ${OUT}/int8_seg.nii.gz
  segment ${model} ${window} --precision int8 --calibration ${OUT}/good.int8.json -i ${NIFTI}/aniso.nii.gz
          -o ${OUT}/int8_seg.nii.gz -q)

expect_failure("int8 without a calibration" "swinfer calibrate" ${OUT}/no_cal.nii.gz
  segment ${model} ${window} --precision int8 -i ${NIFTI}/aniso.nii.gz -o ${OUT}/no_cal.nii.gz -q)
expect_failure("a calibration with fp32" "applies to --precision int8" ${OUT}/fp32_cal.nii.gz
  segment ${model} ${window} --calibration ${OUT}/good.int8.json -i ${NIFTI}/aniso.nii.gz -o ${OUT}/fp32_cal.nii.gz -q)
expect_failure("a calibration for other weights" "made for other weights" ${OUT}/other.nii.gz
  segment --model ${OTHER_MODEL} ${window} --precision int8 --calibration ${OUT}/good.int8.json
          -i ${NIFTI}/aniso.nii.gz -o ${OUT}/other.nii.gz -q)

expect_success("segment --precision int8 --int8-dynamic" ${OUT}/dynamic_seg.nii.gz
  segment ${model} ${window} --precision int8 --int8-dynamic -i ${NIFTI}/aniso.nii.gz -o ${OUT}/dynamic_seg.nii.gz -q)
expect_failure("--int8-dynamic with fp32" "applies to --precision int8" ${OUT}/fp32_dynamic.nii.gz
  segment ${model} ${window} --int8-dynamic -i ${NIFTI}/aniso.nii.gz -o ${OUT}/fp32_dynamic.nii.gz -q)
expect_failure("--int8-dynamic with a calibration" "use one" ${OUT}/both.nii.gz
  segment ${model} ${window} --precision int8 --int8-dynamic --calibration ${OUT}/good.int8.json
          -i ${NIFTI}/aniso.nii.gz -o ${OUT}/both.nii.gz -q)
