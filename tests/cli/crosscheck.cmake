# ctest -P script: `swinfer crosscheck` runs the demo volume on the cpu backend and on the reference backend and
# passes; with an impossible tolerance it fails with a non-zero exit naming the reason.
# Variables: SWINFER, DATA (data/demo).
set(common --model ${DATA}/model.pt --config ${DATA}/model_config.json --pipeline ${DATA}/pipeline.json --roi 64
           --sw-batch 2 --input ${DATA}/phantom.nii.gz --backend cpu --layout ncdhw --quiet)
execute_process(COMMAND ${SWINFER} crosscheck ${common} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "PASS" OR NOT out MATCHES "label agreement 100.00000 %")
  message(FATAL_ERROR "crosscheck cpu vs reference should pass with identical labels (exit ${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${SWINFER} crosscheck ${common} --tolerance 1e-15 RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "crosscheck FAILED: relative error .* above --tolerance")
  message(FATAL_ERROR "crosscheck with --tolerance 1e-15 should fail (exit ${rc}):\n${out}\n${err}")
endif()
