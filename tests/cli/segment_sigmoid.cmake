# ctest -P script: `swinfer segment --activation sigmoid` writes one 0/1 mask per channel, as MONAI's
# sliding_window_inference -> sigmoid -> AsDiscrete(threshold=0.5) does; and refuses --keep-largest with it.
# Variables: SWINFER, DATA (data/demo), OUT.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
set(common --model ${DATA}/model.pt --config ${DATA}/model_config.json --pipeline ${DATA}/pipeline.json --roi 64
           --sw-batch 1 --input ${DATA}/phantom.nii.gz --activation sigmoid --quiet)
execute_process(COMMAND ${SWINFER} segment ${common} --output ${OUT}/mask.nii.gz --report ${OUT}/report.json
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "swinfer segment --activation sigmoid exited with ${rc}")
endif()
file(READ ${OUT}/report.json report)
string(JSON channels LENGTH "${report}" labels)
string(JSON vessel GET "${report}" labels 1 voxels)
# MONAI 1.5.0 on this phantom and model: channel 1 of AsDiscrete(threshold=0.5)(sigmoid(logits)) has 7079 voxels.
if(NOT channels EQUAL 2 OR NOT vessel EQUAL 7079)
  message(FATAL_ERROR "sigmoid masks: ${channels} channels, ${vessel} voxels in channel 1; MONAI gives 2 and 7079")
endif()
execute_process(COMMAND ${SWINFER} segment ${common} --keep-largest --output ${OUT}/bad.nii.gz
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "keep-largest" OR EXISTS ${OUT}/bad.nii.gz)
  message(FATAL_ERROR "--keep-largest with sigmoid should fail before writing anything: ${err}")
endif()
