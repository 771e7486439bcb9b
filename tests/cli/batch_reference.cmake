# ctest -P script (fixture for the other batch tests): one process segments a folder of 8 small volumes, one
# truncated and one with two channels (the model takes one). The bad two are named and skipped, the exit status is
# non-zero, the report lists all 8; the masks are the reference the parallel runs must reproduce.
# Variables: SWINFER, MODEL, TESTS, BATCH.
include(${TESTS}/batch_support.cmake)
make_batch_inputs(${BATCH}/inputs)
file(REMOVE_RECURSE ${BATCH}/reference)
execute_process(COMMAND ${SWINFER} segment ${segment_args} --input ${BATCH}/inputs --output ${BATCH}/reference
                        --report ${BATCH}/reference.json
                RESULT_VARIABLE rc ERROR_VARIABLE err)
message(STATUS "stderr:\n${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "a batch with two bad inputs exited 0")
endif()
foreach(bad corrupt.nii two_channels.nii)
  if(NOT err MATCHES "error: [^\n]*${bad}")
    message(FATAL_ERROR "the errors do not name ${bad}")
  endif()
endforeach()
check_batch_report(${BATCH}/reference.json 6 2 0 process 1)
file(GLOB journal RELATIVE ${BATCH}/reference/.swinfer-journal ${BATCH}/reference/.swinfer-journal/*)
list(LENGTH journal entries)
if(NOT entries EQUAL 6)
  message(FATAL_ERROR "the journal should hold one entry per good volume, found: ${journal}")
endif()
