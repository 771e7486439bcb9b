# The static tool on one (possibly emulated) CPU: `swinfer info` names the kernel level it chose (LEVEL, when given),
# and `swinfer forward` on the golden case's input gives MONAI's logits. EMULATOR: the command prefix, commas between
# words (empty: run directly).
string(REPLACE "," ";" emulator "${EMULATOR}")
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${emulator} ${TOOL} input ${CASE} ${OUT}/input.npy RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "golden_tool input failed (${rc})")
endif()
execute_process(COMMAND ${emulator} ${SWINFER} info --model ${CASE}/model.pt
                OUTPUT_VARIABLE info ERROR_VARIABLE info_errors RESULT_VARIABLE rc)
message(STATUS "${info}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "swinfer info exited with ${rc}: ${info_errors}")
endif()
if(LEVEL AND NOT info MATCHES "  ${LEVEL}  [^\n]*\\[chosen\\]")
  message(FATAL_ERROR "expected the ${LEVEL} kernels to be chosen on this CPU")
endif()
execute_process(COMMAND ${emulator} ${SWINFER} forward --model ${CASE}/model.pt -i ${OUT}/input.npy
                        -o ${OUT}/logits.npy --threads 2
                ERROR_VARIABLE forward_log RESULT_VARIABLE rc)
message(STATUS "${forward_log}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "swinfer forward exited with ${rc}")
endif()
execute_process(COMMAND ${emulator} ${TOOL} compare ${OUT}/logits.npy ${CASE}/logits.npy 2e-5 RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "logits differ from MONAI's")
endif()
