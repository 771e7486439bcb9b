# ctest -P script: a batch is killed after its first volume is done (VICTIM: a --jobs worker process, or an MPI rank,
# which takes the MPI job down; watch_batch.sh stops it in the middle of its first volume and kills it once another
# worker has finished one, so the outcome does not depend on how loaded the machine is), then re-run with --resume. At no point is a file visible in the output folder that
# is not a finished mask (watch_batch.sh); the re-run skips the volumes finished before (the report says so, and
# their masks are the same files, not rewritten) and segments the rest, byte-identical to the single-process run.
# Variables: SWINFER, MODEL, TESTS, BATCH, OUT, VICTIM (worker or rank), JOBS or RANKS (with MPIEXEC).
include(${TESTS}/batch_support.cmake)
swinfer_launcher(launch)  # clears OUT
if(RANKS)
  set(launcher_name mpi)
  set(workers ${RANKS})
else()
  set(parallel --jobs ${JOBS})
  set(launcher_name jobs)
  set(workers ${JOBS})
endif()
set(batch segment ${segment_args} ${parallel} --input ${BATCH}/inputs --output ${OUT}/masks --report ${OUT}/report.json)

# A --jobs worker holds a volume once it has read this many bytes: it reads little else (about 20 kB; the checkpoint
# was read before the fork), and the smallest input is 283 kB. (watch_batch.sh does not use it for an MPI rank.)
set(min_read 100000)
execute_process(COMMAND bash ${TESTS}/watch_batch.sh ${OUT}/masks ${BATCH}/reference ${VICTIM} ${min_read} -- ${launch} ${batch}
                RESULT_VARIABLE watch OUTPUT_VARIABLE result ERROR_VARIABLE err)
message(STATUS "killed run:\n${result}${err}")
if(NOT watch EQUAL 0)
  message(FATAL_ERROR "watching the killed run failed")
endif()
if(result MATCHES "killed none" OR result MATCHES "exit 0\n")
  message(FATAL_ERROR "the run was not killed, or exited 0")
endif()

if(VICTIM STREQUAL "worker")
  # The other worker went on; the report names the volume the killed one held.
  file(READ ${OUT}/report.json json)
  if(NOT json MATCHES "stopped while segmenting it: its process [0-9]+ was killed by signal 9")
    message(FATAL_ERROR "the report does not name the volume the killed worker held:\n${json}")
  endif()
endif()

# What the killed run finished: its journal entries, and the masks they vouch for as they are on disk now.
file(GLOB finished RELATIVE ${OUT}/masks/.swinfer-journal ${OUT}/masks/.swinfer-journal/*.json)
list(LENGTH finished before)
if(before EQUAL 0 OR before EQUAL 6)
  message(FATAL_ERROR "the killed run finished ${before} of 6 good volumes; the test needs some but not all")
endif()
if(VICTIM STREQUAL "worker" AND NOT before EQUAL 5)
  message(FATAL_ERROR "the surviving worker should have finished every good volume but the killed one's: ${before} of 6")
endif()
set(stamps_before "")
foreach(entry IN LISTS finished)
  string(REPLACE ".json" "_seg.nii.gz" mask ${entry})
  execute_process(COMMAND stat -c "%n %i %Y" ${OUT}/masks/${mask} OUTPUT_VARIABLE stamp)
  string(APPEND stamps_before "${stamp}")
endforeach()

execute_process(COMMAND bash ${TESTS}/watch_batch.sh ${OUT}/masks ${BATCH}/reference none 0 -- ${launch} ${batch} --resume
                RESULT_VARIABLE watch OUTPUT_VARIABLE result ERROR_VARIABLE err)
message(STATUS "resumed run:\n${result}${err}")
if(NOT watch EQUAL 0 OR result MATCHES "exit 0\n")
  message(FATAL_ERROR "the resumed run should end with the two bad inputs failed (non-zero exit)")
endif()
math(EXPR redone "6 - ${before}")
check_batch_report(${OUT}/report.json ${redone} 2 ${before} ${launcher_name} ${workers})
check_masks_match(${OUT}/masks)
set(stamps_after "")
foreach(entry IN LISTS finished)
  string(REPLACE ".json" "_seg.nii.gz" mask ${entry})
  execute_process(COMMAND stat -c "%n %i %Y" ${OUT}/masks/${mask} OUTPUT_VARIABLE stamp)
  string(APPEND stamps_after "${stamp}")
endforeach()
if(NOT stamps_before STREQUAL stamps_after)
  message(FATAL_ERROR "masks finished before the kill were written again:\n${stamps_before}\nnow:\n${stamps_after}")
endif()
file(GLOB_RECURSE leftovers ${OUT}/masks/*.tmp-*)
if(leftovers)
  message(FATAL_ERROR "temporaries left behind: ${leftovers}")
endif()
