# ctest -P script: an input whose file name is not valid UTF-8 (bytes 0xE9 and 0xFF: a Latin-1 name, and a byte no
# encoding uses) in a batch of two with several workers (`--jobs 2`, or `mpirun -n RANKS`), then --resume, then alone
# with --report. Its mask keeps the name's bytes and matches the reference; the batch report, the journal entry and
# the single report are valid JSON that write the name escaped (caf\xE9-\xFF.nii, json_text.hpp); --resume
# recognises the file from its journal entry and skips it. Before, writing the journal or a report threw on the name.
# Variables: SWINFER, MODEL, TESTS, BATCH, OUT, and JOBS or RANKS (with MPIEXEC).
include(${TESTS}/batch_support.cmake)
swinfer_launcher(launch)  # clears OUT
swinfer_workers()
# The odd name exists only in bash ($'...'); CMake handles ASCII text alone here.
set(name "name=$'caf\\xe9-\\xff'")
set(in ${OUT}/inputs)
execute_process(COMMAND bash -c "${name}; mkdir -p '${in}' && cp '${BATCH}/inputs/case1.nii' \"${in}/$name.nii\" &&
                                 cp '${BATCH}/inputs/case2.nii' '${in}/case2.nii'"
                COMMAND_ERROR_IS_FATAL ANY)

# run_batch(<what> <done> <skipped> [extra arguments]): the batch exits 0 with the counts in its report.
function(run_batch what done skipped)
  execute_process(COMMAND ${launch} segment ${segment_args} ${parallel} --input ${in} --output ${OUT}/masks
                          --report ${OUT}/report.json ${ARGN}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what}: exit ${rc}:\n${err}")
  endif()
  file(READ ${OUT}/report.json json)
  string(JSON launcher ERROR_VARIABLE bad GET "${json}" launcher)
  if(bad)
    message(FATAL_ERROR "${what}: the report is not valid JSON (${bad}):\n${json}")
  endif()
  foreach(field done skipped)
    string(JSON got GET "${json}" summary ${field})
    if(NOT got EQUAL ${${field}})
      message(FATAL_ERROR "${what}: ${got} ${field}, expected ${${field}}:\n${json}")
    endif()
  endforeach()
  if(NOT json MATCHES [[caf\\\\xE9-\\\\xFF\.nii]])
    message(FATAL_ERROR "${what}: the report does not name the input as caf\\xE9-\\xFF.nii:\n${json}")
  endif()
  list(GET expected 0 want)
  if(done GREATER 0 AND NOT launcher STREQUAL want)  # with nothing to do no worker starts
    message(FATAL_ERROR "${what}: launcher ${launcher}, expected ${want}")
  endif()
  message(STATUS "${what}: ${done} done, ${skipped} skipped, launcher ${launcher}")
endfunction()

run_batch("batch" 2 0)
# The mask under the input's own bytes, the same as the reference's for the same voxels.
execute_process(COMMAND bash -c "${name}; cmp \"${OUT}/masks/\${name}_seg.nii.gz\" '${BATCH}/reference/case1_seg.nii.gz'"
                RESULT_VARIABLE differ)
if(NOT differ EQUAL 0)
  message(FATAL_ERROR "the mask of the oddly named input is missing or differs from case1's")
endif()
# Its journal entry is valid JSON and records the escaped absolute name.
execute_process(COMMAND bash -c "${name}; cat \"${OUT}/masks/.swinfer-journal/\${name}.json\""
                OUTPUT_VARIABLE entry RESULT_VARIABLE missing)
string(JSON input_file ERROR_VARIABLE bad GET "${entry}" input_file)
if(missing OR bad OR NOT input_file MATCHES [[/inputs/caf\\xE9-\\xFF\.nii$]])
  message(FATAL_ERROR "the journal entry of the oddly named input is missing or wrong (${bad}):\n${entry}")
endif()
execute_process(COMMAND bash -c "${name}; stat -c '%i %Y' \"${OUT}/masks/\${name}_seg.nii.gz\"" OUTPUT_VARIABLE before)

run_batch("--resume" 0 2 --resume)
execute_process(COMMAND bash -c "${name}; stat -c '%i %Y' \"${OUT}/masks/\${name}_seg.nii.gz\"" OUTPUT_VARIABLE after)
if(NOT before STREQUAL after)
  message(FATAL_ERROR "--resume wrote the mask of the oddly named input again")
endif()

# One input alone: its report (not a batch's) holds the name too.
set(single_out --output '${OUT}/single.nii.gz' --report '${OUT}/single.json')
list(JOIN single_out " " single_out)
execute_process(COMMAND bash -c "${name}; exec \"\$@\" --input \"${in}/\$name.nii\" ${single_out}"
                        bash ${SWINFER} segment ${segment_args}
                RESULT_VARIABLE rc ERROR_VARIABLE err)
file(READ ${OUT}/single.json single)
string(JSON input ERROR_VARIABLE bad GET "${single}" input)
if(NOT rc EQUAL 0 OR bad OR NOT input MATCHES [[caf\\xE9-\\xFF\.nii$]])
  message(FATAL_ERROR "one oddly named input: exit ${rc}, report ${bad}:\n${err}\n${single}")
endif()
