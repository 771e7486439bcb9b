# Included by the ctest -P scripts that check refusals (and the runs around them).
# expect_failure(<case> <text the error must hold> <file that must not exist afterwards> <swinfer arguments...>):
# runs ${SWINFER} with the arguments and requires a non-zero exit, the text in its output, no sanitizer report (the
# scripts also run against the sanitizer build) and no file at the given path.
function(expect_failure name expected output)
  execute_process(COMMAND ${SWINFER} ${ARGN} RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
  set(all "${out}${err}")
  if(rc EQUAL 0)
    message(FATAL_ERROR "${name}: exited 0\n${all}")
  endif()
  string(FIND "${all}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${name}: exited ${rc} but the error does not say \"${expected}\":\n${all}")
  endif()
  if(all MATCHES "runtime error|Sanitizer")
    message(FATAL_ERROR "${name}: a sanitizer report:\n${all}")
  endif()
  if(EXISTS ${output})
    message(FATAL_ERROR "${name}: wrote ${output} although it failed")
  endif()
  message(STATUS "${name}: exit ${rc}: ${err}")
endfunction()

# expect_success(<case> <file it must write, or ""> <swinfer arguments...>): runs ${SWINFER} with the arguments and
# requires exit 0 and the file.
function(expect_success name output)
  execute_process(COMMAND ${SWINFER} ${ARGN} RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
  if(NOT rc EQUAL 0 OR (NOT output STREQUAL "" AND NOT EXISTS ${output}))
    message(FATAL_ERROR "${name}: exited ${rc}; it must exit 0 and write '${output}'\n${out}${err}")
  endif()
  message(STATUS "${name}: ${err}")
endfunction()
