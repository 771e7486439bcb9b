# ctest -P script: examples/sliding_window segments a generated volume with several windows (roi 64 over
# 72 x 64 x 70), and its mask is the one `swinfer segment` makes with the same windows and no preprocessing (Dice of
# every label at least 0.999: the tool batches 4 windows per call where the example takes one, which may move a
# near tie's label).
# Variables: EXAMPLE, SWINFER, MODEL, TESTS (tests/cli), OUT.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND perl ${TESTS}/make_volume.pl ${OUT}/volume.nii 72 64 70 1 5 COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${EXAMPLE} ${MODEL} ${OUT}/volume.nii ${OUT}/mask.nii.gz 64
                RESULT_VARIABLE rc OUTPUT_VARIABLE example_out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT example_out MATCHES "voxels in a foreground label" OR NOT EXISTS ${OUT}/mask.nii.gz)
  message(FATAL_ERROR "the sliding_window example failed (exit ${rc}):\n${example_out}\n${err}")
endif()
execute_process(COMMAND ${SWINFER} segment --model ${MODEL} -i ${OUT}/volume.nii -o ${OUT}/tool_mask.nii.gz
                        --roi 64 --overlap 0.25 --truth ${OUT}/mask.nii.gz --report ${OUT}/report.json -q
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "swinfer segment on the example's volume failed (exit ${rc}):\n${out}\n${err}")
endif()
file(READ ${OUT}/report.json report)
string(JSON labels LENGTH "${report}" dice)
if(labels EQUAL 0)
  message(FATAL_ERROR "no Dice in the report:\n${report}")
endif()
math(EXPR last "${labels} - 1")
foreach(i RANGE ${last})
  string(JSON label MEMBER "${report}" dice ${i})
  string(JSON dice GET "${report}" dice ${label})
  if(dice LESS 0.999)
    message(FATAL_ERROR "label ${label}: Dice ${dice} between the example's mask and swinfer segment's:\n${report}")
  endif()
endforeach()
message(STATUS "${example_out}")
