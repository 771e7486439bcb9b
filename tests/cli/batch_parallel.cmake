# ctest -P script: the reference batch again with several workers, `--jobs 2` or `mpirun -n RANKS`: every good
# mask is byte-identical to the single-process run's, the report lists all 8 with both failures named, and the
# exit status is non-zero because of them.
# Variables: SWINFER, MODEL, TESTS, BATCH, OUT, and JOBS or RANKS (with MPIEXEC).
include(${TESTS}/batch_support.cmake)
swinfer_launcher(launch)  # clears OUT
swinfer_workers()
execute_process(COMMAND ${launch} segment ${segment_args} ${parallel} --input ${BATCH}/inputs --output ${OUT}/masks
                        --report ${OUT}/report.json
                RESULT_VARIABLE rc ERROR_VARIABLE err)
message(STATUS "stderr:\n${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "a batch with two bad inputs exited 0")
endif()
check_masks_match(${OUT}/masks)
check_batch_report(${OUT}/report.json 6 2 0 ${expected})
