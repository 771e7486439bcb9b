# ctest -P script: `swinfer info --json` reports the architecture MONAI's SwinUNETR(1, 2, feature_size=12) has.
execute_process(COMMAND ${SWINFER} info --model ${DATA}/model.pt --json OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "swinfer info exited with ${rc}")
endif()
string(JSON params GET "${out}" parameters)
string(JSON fs GET "${out}" config feature_size)
# sum(p.numel() for p in SwinUNETR(in_channels=1, out_channels=2, feature_size=12).parameters()) in MONAI 1.5.0
if(NOT params EQUAL 4078064 OR NOT fs EQUAL 12)
  message(FATAL_ERROR "info reports ${params} parameters, feature_size ${fs}")
endif()
