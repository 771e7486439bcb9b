# ctest -P script: examples/crosscheck passes on the checkpoint (onednn or hip against cpu; 77, skipped, in a build
# with the cpu backend only), and fails with a non-zero exit under an impossible tolerance.
# Variables: EXAMPLE, MODEL.
execute_process(COMMAND ${EXAMPLE} ${MODEL} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 77)
  message(STATUS "${out}")
  return()
endif()
if(NOT rc EQUAL 0 OR NOT out MATCHES "PASS")
  message(FATAL_ERROR "the crosscheck example should pass (exit ${rc}):\n${out}\n${err}")
endif()
string(REGEX MATCH "^[^ ]+ against" backend_line "${out}")
string(REGEX REPLACE "/.*" "" backend "${backend_line}")
execute_process(COMMAND ${EXAMPLE} ${MODEL} ${backend} 1e-30 RESULT_VARIABLE rc OUTPUT_VARIABLE bad ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT bad MATCHES "FAILED")
  message(FATAL_ERROR "the crosscheck example should fail with tolerance 1e-30 (exit ${rc}):\n${bad}\n${err}")
endif()
message(STATUS "${out}")
