# `swinfer forward` with the kernels capped at each level (SWINFER_CPU_LEVEL) this CPU runs, in fp32 and in int8
# with dynamic scales. A level that holds only some precisions' models ("bf16,int8 models only") serves the others
# from the highest level below it that has them: the run must say it used those kernels.
# - fp32: the logits of every level within 1e-5 (max|d| / max|ref|) of the lowest level's.
# - int8: each level runs its own int8 product kernel (portable, AVX2 madd, AVX-512BW madd, VNNI), all exact in
#   int32, but the float32 work between the products differs by rounding from level to level and moves single
#   activations across a quantization step: within 5e-2 of the lowest level's (measured on a Zen 4: 3.8e-2 to
#   4.1e-2 with every product quantized, 1.0e-2 to 2.2e-2 when the linears ran in float under dynamic scales; int8
#   itself is 4.8e-2 from float32 here). x86-64-v4, avx512-bf16 and amx share their float32 code and differ
#   only in the product kernel (AVX-512BW madd, VNNI, AMX tiles): their int8 logits must be equal.
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
set(int8_level "")
foreach(line IN LISTS runnable)
  string(REGEX REPLACE "^\n  ([a-z0-9-]+)  .*" "\\1" level "${line}")
  list(APPEND levels ${level})
  foreach(precision fp32 int8)
    if(NOT line MATCHES "models only" OR line MATCHES "${precision}")
      set(${precision}_level ${level})
    endif()
    set(serves_${precision}_${level} ${${precision}_level})
  endforeach()
endforeach()
list(LENGTH levels count)
if(count LESS 2)
  message(FATAL_ERROR "expected at least two kernel levels this CPU runs, found '${levels}' in:\n${info}")
endif()
list(GET levels 0 lowest)
set(flags_fp32)
set(flags_int8 --precision int8 --int8-dynamic)
set(bound_fp32 1e-5)
set(bound_int8 5e-2)
foreach(precision fp32 int8)
  foreach(level IN LISTS levels)
    set(serving ${serves_${precision}_${level}})
    execute_process(COMMAND ${CMAKE_COMMAND} -E env SWINFER_CPU_LEVEL=${level}
                            ${SWINFER} forward --model ${CASE}/model.pt -i ${OUT}/input.npy ${flags_${precision}}
                            -o ${OUT}/${level}-${precision}.npy
                    ERROR_VARIABLE log RESULT_VARIABLE rc)
    message(STATUS "${log}")
    if(NOT rc EQUAL 0 OR NOT log MATCHES "kernels ${serving}:")
      message(FATAL_ERROR "swinfer forward (${precision}) capped at ${level} failed (${rc}) or did not run the "
                          "${serving} kernels")
    endif()
    execute_process(COMMAND ${TOOL} compare ${OUT}/${level}-${precision}.npy ${OUT}/${lowest}-${precision}.npy
                            ${bound_${precision}} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "the ${level} kernels' ${precision} logits differ from the ${lowest} kernels'")
    endif()
  endforeach()
endforeach()
# Pairs of levels whose int8 logits must be equal: (level, its integer kernel, the level below, that one's kernel).
set(equal_int8 "avx512-bf16|VNNI|x86-64-v4|AVX-512BW madd" "amx|AMX tile|avx512-bf16|VNNI")
foreach(pair IN LISTS equal_int8)
  string(REPLACE "|" ";" pair "${pair}")
  list(GET pair 0 upper)
  list(GET pair 1 upper_kernel)
  list(GET pair 2 lower)
  list(GET pair 3 lower_kernel)
  list(FIND levels ${upper} upper_at)
  list(FIND levels ${lower} lower_at)
  if(upper_at GREATER -1 AND lower_at GREATER -1)
    execute_process(COMMAND ${TOOL} compare ${OUT}/${upper}-int8.npy ${OUT}/${lower}-int8.npy 0 RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "int8 logits of the ${upper_kernel} kernel (${upper}) differ from the ${lower_kernel} "
                          "kernel's (${lower}): the two integer kernels do not agree")
    endif()
  endif()
endforeach()
