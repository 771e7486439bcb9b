# `swinfer forward` with the kernels capped at each level (SWINFER_CPU_LEVEL) this CPU runs: the logits of every
# level within 1e-5 (max|d| / max|ref|) of the lowest level's. A level that holds only some precisions' models
# ("bf16,int8 models only") serves this fp32 forward from the highest level below it that has them: the run must
# say it used those kernels.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${TOOL} input ${CASE} ${OUT}/input.npy RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "golden_tool input failed (${rc})")
endif()
execute_process(COMMAND ${SWINFER} info --model ${CASE}/model.pt OUTPUT_VARIABLE info RESULT_VARIABLE rc)
# A level's line may hold a ';' ("...Cooper Lake); bf16,int8 models only"): as a CMake list separator it would cut the
# line in two and hide "models only" from the test below.
string(REPLACE ";" "," info "${info}")
string(REGEX MATCHALL "\n  [a-z0-9-]+  [^\n]*\\[(chosen|runs here)\\]" runnable "${info}")
set(levels)
set(fp32_level "")
foreach(line IN LISTS runnable)
  string(REGEX REPLACE "^\n  ([a-z0-9-]+)  .*" "\\1" level "${line}")
  list(APPEND levels ${level})
  if(NOT line MATCHES "models only" OR line MATCHES "fp32")
    set(fp32_level ${level})
  endif()
  set(serves_${level} ${fp32_level})
endforeach()
list(LENGTH levels count)
if(count LESS 2)
  message(FATAL_ERROR "expected at least two kernel levels this CPU runs, found '${levels}' in:\n${info}")
endif()
list(GET levels 0 lowest)
foreach(level IN LISTS levels)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env SWINFER_CPU_LEVEL=${level}
                          ${SWINFER} forward --model ${CASE}/model.pt -i ${OUT}/input.npy -o ${OUT}/${level}.npy
                  ERROR_VARIABLE log RESULT_VARIABLE rc)
  message(STATUS "${log}")
  if(NOT rc EQUAL 0 OR NOT log MATCHES "kernels ${serves_${level}}:")
    message(FATAL_ERROR "swinfer forward capped at ${level} failed (${rc}) or did not run the ${serves_${level}} "
                        "kernels")
  endif()
  execute_process(COMMAND ${TOOL} compare ${OUT}/${level}.npy ${OUT}/${lowest}.npy 1e-5 RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the ${level} kernels' logits differ from the ${lowest} kernels'")
  endif()
endforeach()
